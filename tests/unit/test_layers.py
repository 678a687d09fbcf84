"""The packages' layers, read from their import statements.

Every rtnet module is in one of two lists.  FOUNDATION is what rtmac and vnic
build on (the C bindings, errors, paths, names, MACs, the option table, the
control protocol, client and server, the station, channels, the RTcfg frames
and server machine): it imports nothing from rtmac or vnic and nothing from a
composer.  COMPOSERS put everything together: configuration loading (rtnet.toml,
rtnet.conf and tdma.conf build rtmac's TdmaConfig), the daemon, the command
line tools, the lab, and RTcfg's command lists with what applies them (a
stage-1 payload is rtmac's commands, parsed by rtmac.commands).  And no two
modules import each other, directly or round a longer loop, not even through an
import inside a function (which only hides the loop until the first call).
"""

import ast
import importlib
import os

import pytest
from graphs import loops

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGES = ("rtnet", "rtmac", "vnic")
UPPER = ("rtmac", "vnic")
# rtnet's modules by layer, named without "rtnet." ("" is the package itself)
FOUNDATION = (
    "",
    "_lowlevel",
    "_benchlib",
    "errors",
    "hist",
    "paths",
    "netns",
    "names",
    "nicqueues",
    "txchecksum",
    "linkwatch",
    "messages",
    "argtypes",
    "mac",
    "app_limits",
    "control_protocol",
    "control_client",
    "control_server",
    "closeable",
    "cpuacct",
    "station",
    "xsk",
    "rtthread",
    "options",
    "tdma_stats",
    "sysfiles",
    "xdpfeatures",
    "app",
    "cyclic",
    "capture",
    "capture_service",
    "clocks",
    "devcmd",
    "echo",
    "ipv4",
    "ipv4_service",
    "neighbours",
    "pcapng",
    "pmqos",
    "procs",
    "stages",
    "stall",
    "userfiles",
    "benchkit",
    "sigterm",
    "rtcfg",
    "rtcfg.frames",
    "rtcfg.server",
    "rtcfg.step",
)
COMPOSERS = (
    "config",
    "configfile",
    "rtnetconf",
    "daemon",
    "channel_service",
    "discipline_service",
    "vnic_setup",
    "cli",
    "stationctl",
    "rtroute",
    "run",
    "demo",
    "pingpong",
    "lab",
    "labdemo",
    "labdemo.segment",
    "labdemo.stations",
    "labdemo.pubsub",
    "labdemo.program",
    "labdemo.runs",
    "vm_witness",
    "labsegment",
    "wirecap",
    "preflight",
    "preflight.facts",
    "preflight.measure",
    "preflight.nic",
    "preflight.system",
    "rtcfg.payload",
    "rtcfg.setup",
    "rtcfg.apply",
    "rtcfg.client",
    "rtcfg.service",
    "rtcfg.startup",
    "rtcfg.cli",
)
# Known exceptions, each with why it stays for now (none today).
KNOWN_UPWARD: set = set()


def rtnet_name(base: str) -> str:
    return f"rtnet.{base}" if base else "rtnet"


def module_files() -> dict[str, str]:
    """Dotted module name -> file, for every module of the three packages."""
    out = {}
    for pkg in PACKAGES:
        for folder, dirs, files in os.walk(os.path.join(ROOT, pkg)):
            dirs[:] = sorted(
                d for d in dirs if os.path.exists(os.path.join(folder, d, "__init__.py"))
            )
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
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                source = f"{base}.{node.module}" if node.module else base
            else:
                source = node.module
            submodules = {f"{source}.{alias.name}" for alias in node.names} & MODULES.keys()
            # "from . import paths" imports the module paths; "from .x import y" uses x
            found.update(submodules or {source})
    return {m for m in found if m in MODULES and m != name}


GRAPH = {name: imported(name, path) for name, path in MODULES.items()}


def test_the_cycle_finder_should_find_a_loop_and_only_a_loop():
    assert loops({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert loops({"a": {"b"}, "b": set(), "c": {"b"}}) == []


def test_the_import_reader_should_see_imports_inside_functions():
    # rtnet.cli imports its commands' modules inside the command functions
    assert "rtnet.stationctl" in GRAPH["rtnet.cli"]
    assert {"rtnet.paths", "rtnet.control_client"} <= GRAPH["rtmac.control"]


@pytest.mark.parametrize("name", sorted(MODULES))
def test_every_module_should_import(name):
    importlib.import_module(name)


def test_no_modules_should_import_each_other():
    assert loops(GRAPH) == []


def test_every_rtnet_module_should_be_in_exactly_one_layer():
    rtnet = {m for m in MODULES if m.partition(".")[0] == "rtnet"}
    foundation, composers = set(map(rtnet_name, FOUNDATION)), set(map(rtnet_name, COMPOSERS))
    assert len(foundation) == len(FOUNDATION) and len(composers) == len(COMPOSERS)
    assert foundation & composers == set(), "in both lists"
    assert rtnet - foundation - composers == set(), "in no list: add it to one"
    assert (foundation | composers) - rtnet == set(), "listed, but no such module"


def test_the_foundation_should_not_import_rtmac_or_vnic_or_a_composer():
    composers = set(map(rtnet_name, COMPOSERS))
    upward = {
        (rtnet_name(base), dep)
        for base in FOUNDATION
        for dep in GRAPH[rtnet_name(base)]
        if dep.partition(".")[0] in UPPER or dep in composers
    }
    assert upward - KNOWN_UPWARD == set()
    assert KNOWN_UPWARD - upward == set(), "a known exception is gone: remove it from the list"


def test_the_echo_service_should_own_its_ethertype():
    # rtnet.echo imported rtnet.config (a composer, which imports rtmac) for this constant
    assert "rtnet.config" not in GRAPH["rtnet.echo"]
    assert "rtnet.echo" in GRAPH["rtnet.config"]


def test_rtcfg_should_take_rtmacs_commands_not_its_command_line_tool():
    users = {m for m, deps in GRAPH.items() if "rtmac.cli" in deps}
    assert users == set()
    assert "rtmac.commands" in GRAPH["rtnet.rtcfg.payload"]


def test_code_for_tests_only_should_not_be_imported_by_the_stack():
    users = {
        m
        for m, deps in GRAPH.items()
        if not m.startswith("rtmac.testing")
        for d in deps
        if d.startswith("rtmac.testing")
    }
    assert users == set()
