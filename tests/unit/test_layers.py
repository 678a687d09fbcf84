"""The packages' layers, read from their import statements.

rtnet's foundation (the C binding, errors, paths, names, MACs, the control
protocol and client, the station) is what rtmac and vnic build on, so it
imports nothing from them; and no two modules import each other, directly
or round a longer loop, not even through an import inside a function
(which only hides the loop until the first call).
"""
import ast
import importlib
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ("rtnet", "rtmac", "vnic")
UPPER = ("rtmac", "vnic")
FOUNDATION = ("_lowlevel", "errors", "hist", "paths", "netns", "names", "messages", "argtypes",
              "mac", "app_limits", "control_protocol", "control_client", "closeable", "cpuacct",
              "station", "xsk", "rtthread", "options", "tdma_stats", "sysfiles", "xdpfeatures")
# Known exceptions, each with why it stays for now (none today).
KNOWN_UPWARD: set = set()


def module_files() -> dict[str, str]:
    """Dotted module name -> file, for every module of the three packages."""
    out = {}
    for pkg in PACKAGES:
        for folder, dirs, files in os.walk(os.path.join(ROOT, pkg)):
            dirs[:] = sorted(d for d in dirs if os.path.exists(os.path.join(folder, d,
                                                                            "__init__.py")))
            dotted = os.path.relpath(folder, ROOT).replace(os.sep, ".")
            for fn in sorted(files):
                if fn.endswith(".py"):
                    name = dotted if fn == "__init__.py" else f"{dotted}.{fn[:-3]}"
                    out[name] = os.path.join(folder, fn)
    return out


MODULES = module_files()


def imported(name: str, path: str) -> set[str]:
    """The project modules ``name`` imports anywhere in its file (functions included)."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1])
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module
            submodules = {f"{source}.{alias.name}" for alias in node.names} & MODULES.keys()
            # "from . import paths" imports the module paths; "from .x import y" uses x
            found.update(submodules or {source})
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: imported(name, path) for name, path in MODULES.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_cycle_finder_should_find_a_loop_and_only_a_loop():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set(), "c": {"b"}}) == []


def test_the_import_reader_should_see_imports_inside_functions():
    # rtnet.cli imports its commands' modules inside the command functions
    assert "rtnet.stationctl" in GRAPH["rtnet.cli"]
    assert {"rtnet.paths", "rtnet.control_client"} <= GRAPH["rtmac.control"]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_should_import(name):
    importlib.import_module(name)


def test_no_modules_should_import_each_other():
    assert cycles(GRAPH) == []


def test_the_foundation_should_not_import_rtmac_or_vnic():
    assert set(FOUNDATION) <= {m.partition(".")[2] for m in MODULES if m.startswith("rtnet.")}
    upward = {(f"rtnet.{base}", dep) for base in FOUNDATION for dep in GRAPH[f"rtnet.{base}"]
              if dep.partition(".")[0] in UPPER}
    assert upward - KNOWN_UPWARD == set()
    assert KNOWN_UPWARD - upward == set(), "a known exception is gone: remove it from the list"


def test_code_for_tests_only_should_not_be_imported_by_the_stack():
    users = {m for m, deps in GRAPH.items() if not m.startswith("rtmac.testing")
             for d in deps if d.startswith("rtmac.testing")}
    assert users == set()
