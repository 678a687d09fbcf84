"""No test skips on its own: a skip goes through conftest's skip_or_fail (or require_tool,
which uses it), so that under CI=true nothing can pass by skipping."""

import ast
import os

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


SKIPS = {"skip", "importorskip"}  # pytest.skip(...), pytest.importorskip(...)
MARKS = {"skip", "skipif"}  # @pytest.mark.skip, @pytest.mark.skipif


def _is_pytest(node) -> bool:
    return isinstance(node, ast.Name) and node.id == "pytest"


def direct_skips(source: str, filename: str = "<test>") -> list[tuple[int, str]]:
    """(line, enclosing function) of every call of pytest's skip or importorskip, every
    skip mark, and every import of those from pytest, in ``source``."""
    found = []

    def walk(node, func):
        for child in ast.iter_child_nodes(node):
            inner = (
                child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            )
            f = child.func if isinstance(child, ast.Call) else None
            if isinstance(f, ast.Attribute) and f.attr in SKIPS and _is_pytest(f.value):
                found.append((child.lineno, func))
            elif (
                isinstance(child, ast.Attribute)
                and child.attr in MARKS
                and isinstance(child.value, ast.Attribute)
                and child.value.attr == "mark"
                and _is_pytest(child.value.value)
            ):
                found.append((child.lineno, func))
            elif (
                isinstance(child, ast.ImportFrom)
                and child.module == "pytest"
                and any(a.name in SKIPS or a.name == "mark" for a in child.names)
            ):
                found.append((child.lineno, func))
            walk(child, inner)

    walk(ast.parse(source, filename), None)
    return sorted(found, key=lambda f: f[0])


def test_only_skip_or_fail_calls_pytest_skip():
    offenders = []
    for root, _dirs, files in os.walk(TESTS):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, TESTS)
            with open(path, encoding="utf-8") as f:
                for line, func in direct_skips(f.read(), path):
                    if (rel, func) != ("conftest.py", "skip_or_fail"):
                        offenders.append(f"tests/{rel}:{line} (in {func})")
    assert offenders == [], (
        "call conftest.skip_or_fail or require_tool instead of "
        "pytest's skip:\n" + "\n".join(offenders)
    )


def test_the_check_finds_a_direct_skip_and_nothing_else():
    src = (
        "import pytest\n"
        "from pytest import skip as s\n"
        "def test_a():\n"
        "    if True:\n"
        "        pytest.skip('no tool')\n"
        "def test_b():\n"
        "    skip_or_fail('no tool')       # pytest.skip( in a comment\n"
        "    x = 'pytest.skip(reason)'\n"
        "    with pytest.raises(pytest.skip.Exception):\n"
        "        pass\n"
        "@pytest.mark.skipif(True, reason='x')\n"
        "def test_c():\n"
        "    pytest.importorskip('numpy')\n"
        "@pytest.mark.netns\n"
        "def test_d():\n"
        "    pass\n"
    )
    assert direct_skips(src) == [(2, None), (5, "test_a"), (11, "test_c"), (13, "test_c")]
