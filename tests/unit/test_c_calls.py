"""No two C files of the core call each other, directly or round a loop, and every call
keeps to csrc/README.md's layers of folders.

The C core is layered: a file calls only files below it, and where something
lower must reach up it does so through a function pointer (a port, an ops
table, a callback), which leaves no symbol reference.  A loop between files
means neither can be understood, tested or replaced without the other.

The call graph is read from the object files: every rtn_*.c of the folders
csrc/build_core.py lists (FOLDERS, rtnet._core's, and BENCH_FOLDERS, the
benchmark-only rtnet._bench's) is compiled here as setup.py compiles it,
and ``nm`` gives what each object defines (T, D, B, R, C) and what it
references (U).  An edge a -> b means a references a symbol b defines.
Strongly connected components (Tarjan) of more than one file are loops.
The socket interposer (csrc/preload/) is a separate library and not looked at.
"""

import ast
import concurrent.futures
import glob
import os
import shutil
import subprocess

import pytest
from conftest import skip_or_fail
from graphs import loops

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CSRC = os.path.join(ROOT, "csrc")

DEFINED = set("TDBRC")


def _listed(name: str) -> list[str]:
    """A list of folders csrc/build_core.py assigns to ``name``, without importing it."""
    with open(os.path.join(CSRC, "build_core.py")) as f:
        for line in f:
            if line.startswith(f"{name} = "):
                return [os.path.join(CSRC, d) for d in ast.literal_eval(line.split("=", 1)[1])]
    raise AssertionError(f"csrc/build_core.py has no {name}")


def _folders() -> list[str]:
    """The extensions' folders: rtnet._core's (FOLDERS), then rtnet._bench's (BENCH_FOLDERS)."""
    return _listed("FOLDERS") + _listed("BENCH_FOLDERS")


def _flags() -> list[str]:
    """csrc/build_core.py's compiler flags for the extensions, without importing cffi's builder."""
    version = None
    with open(os.path.join(CSRC, "build_core.py")) as f:
        for line in f:
            if line.startswith("VERSION = "):
                version = line.split('"')[1]
    assert version, "csrc/build_core.py has no VERSION"
    return [
        "-O2",
        "-Wall",
        "-Wextra",
        "-Wno-unused-parameter",
        "-Werror",
        "-std=gnu11",
        f'-DRTN_VERSION="{version}"',
        "-D_GNU_SOURCE",
        *(f"-I{d}" for d in _folders()),
    ]


def _sources() -> list[str]:
    return sorted(p for d in _folders() for p in glob.glob(os.path.join(d, "rtn_*.c")))


def _compile(cc: str, src: str, out_dir: str) -> str:
    obj = os.path.join(out_dir, os.path.basename(src)[:-2] + ".o")
    res = subprocess.run(
        [cc, *_flags(), "-c", src, "-o", obj], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, f"{src} does not compile:\n{res.stderr[-3000:]}"
    return obj


def symbols(nm_output: str) -> tuple[set[str], set[str]]:
    """What one object defines and what it references, from ``nm``'s output."""
    defined, undefined = set(), set()
    for line in nm_output.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in DEFINED:
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            undefined.add(parts[1])
    return defined, undefined


def call_graph(objects: dict[str, tuple[set[str], set[str]]]) -> dict[str, set[str]]:
    """File -> the files whose symbols it references (itself left out)."""
    owner = {}
    for name in sorted(objects):
        for sym in objects[name][0]:
            owner.setdefault(sym, name)
    return {
        name: {owner[u] for u in undef if u in owner and owner[u] != name}
        for name, (_, undef) in objects.items()
    }


def test_the_cycle_finder_finds_a_known_loop():
    objs = {
        "a": ({"fa"}, {"fb"}),
        "b": ({"fb"}, {"fc", "printf"}),
        "c": ({"fc"}, {"fa"}),
        "d": ({"fd"}, {"fa"}),  # calls into the loop, is not part of it
        "e": ({"fe", "table"}, set()),
        "f": ({"ff"}, {"table", "fe"}),  # data references count as well
    }
    graph = call_graph(objs)
    assert graph["d"] == {"a"} and graph["f"] == {"e"}
    assert loops(graph) == [["a", "b", "c"]]
    assert loops({"x": {"y"}, "y": {"x"}, "z": set()}) == [["x", "y"]]
    assert loops({"x": {"y"}, "y": {"z"}, "z": set()}) == []


def test_symbols_reads_nm_output():
    out = (
        "0000000000000000 T rtn_send\n0000000000000010 R rtn_ops\n"
        "                 U rtn_recv\n0000000000000020 t local_helper\n"
        "0000000000000004 B counter\n"
    )
    assert symbols(out) == ({"rtn_send", "rtn_ops", "counter"}, {"rtn_recv"})


# csrc/README.md's layers: a folder calls only folders of a lower rank (or its own)
RANK = {
    "core": 0,
    "xsk": 1,
    "tdma": 1,
    "ip": 1,
    "frer": 1,
    "vnic": 2,
    "station": 3,
    "app": 4,
    "bench": 5,
}
# the one exception README.md names: the VNIC pump is a module of the station
UPWARD_ALLOWED = {("vnic", "station")}


def upward_calls(graph: dict[str, set[str]], folder_of: dict[str, str]) -> set[tuple]:
    """(caller, callee, caller's folder, callee's folder) for each call that does not go to
    a lower-ranked folder or stay in its own, the allowed exception left out."""
    out = set()
    for a, targets in graph.items():
        for b in targets:
            fa, fb = folder_of[a], folder_of[b]
            if fa != fb and RANK[fb] >= RANK[fa] and (fa, fb) not in UPWARD_ALLOWED:
                out.add((a, b, fa, fb))
    return out


def test_the_layer_check_sees_a_call_upward():
    graph = {"rtn_hist": {"rtn_station"}, "rtn_station": {"rtn_hist"}, "rtn_tdma": {"rtn_ip"}}
    folder_of = {"rtn_hist": "core", "rtn_station": "station", "rtn_tdma": "tdma", "rtn_ip": "ip"}
    assert upward_calls(graph, folder_of) == {
        ("rtn_hist", "rtn_station", "core", "station"),
        ("rtn_tdma", "rtn_ip", "tdma", "ip"),
    }


def test_rank_covers_every_folder_of_the_build():
    assert sorted(RANK) == sorted(os.path.basename(d) for d in _folders())


def test_the_bench_folders_are_not_in_the_core():
    core, bench = _listed("FOLDERS"), _listed("BENCH_FOLDERS")
    assert bench and not set(core) & set(bench)
    assert all(
        RANK[os.path.basename(d)] > max(RANK[os.path.basename(c)] for c in core) for d in bench
    )


@pytest.fixture(scope="module")
def core_call_graph(tmp_path_factory):
    cc = shutil.which("gcc") or shutil.which("cc")
    nm = shutil.which("nm")
    if cc is None or nm is None:
        skip_or_fail("gcc and nm are needed (binutils, build-essential)")
    out = str(tmp_path_factory.mktemp("objs"))
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        objs = list(pool.map(lambda s: _compile(cc, s, out), _sources()))
    table = {}
    for obj in objs:
        res = subprocess.run([nm, obj], capture_output=True, text=True, check=True)
        table[os.path.basename(obj)[:-2]] = symbols(res.stdout)
    return call_graph(table)


def test_every_folder_calls_only_the_layers_below_it(core_call_graph):
    folder_of = {os.path.basename(p)[:-2]: os.path.basename(os.path.dirname(p)) for p in _sources()}
    found = upward_calls(core_call_graph, folder_of)
    assert not found, "calls against csrc/README.md's layers:\n" + "\n".join(
        f"{a} ({fa}) -> {b} ({fb})" for a, b, fa, fb in sorted(found)
    )


def test_the_bench_module_compiles_every_file_it_calls(core_call_graph):
    """rtnet._bench cannot call rtnet._core (RTLD_LOCAL): each file it compiles (its
    BENCH_FOLDERS and the BENCH_DEPS copied from the core) calls only files among them."""
    own = {os.path.basename(d) for d in _listed("BENCH_FOLDERS") + _listed("BENCH_DEPS")}
    folder_of = {os.path.basename(p)[:-2]: os.path.basename(os.path.dirname(p)) for p in _sources()}
    outside = sorted(
        f"{a} ({folder_of[a]}) -> {b} ({folder_of[b]})"
        for a, targets in core_call_graph.items()
        if folder_of[a] in own
        for b in targets
        if folder_of[b] not in own
    )
    assert not outside, "rtnet._bench calls files it does not compile:\n" + "\n".join(outside)


def test_no_c_file_calls_round_a_loop(core_call_graph):
    graph = core_call_graph
    assert len(graph) == len(_sources())
    found = loops(graph)
    assert not found, (
        "C files that call each other round a loop (layer them, or reach up "
        "through a function pointer):\n" + "\n".join(" <-> ".join(c) for c in found)
    )
