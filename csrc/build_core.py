"""cffi build script for rtnet._core, the C core of rtnet-xdp, and rtnet._bench.

Every rtn_*.c file of the layer folders (FOLDERS: csrc/core/, xsk/, tdma/,
ip/, frer/, vnic/, station/, app/; see csrc/README.md) is compiled into one
private extension module, rtnet._core (ffibuilder), with an include
directory per folder so that ``#include "rtn_x.h"`` names a header by its
file name wherever it lives.

The benchmark-only code (BENCH_FOLDERS: csrc/bench/'s flood generator,
ping-pong loops and TDMA simulator) is a second module, rtnet._bench
(bench_ffibuilder), so the production module does not carry it.  Python
loads extension modules RTLD_LOCAL, so _bench cannot call _core's symbols:
it compiles its own copies of the production folders it calls
(BENCH_DEPS).  Its cdef includes _core's (ffibuilder.include()), so the
types are shared: a struct made with rtnet._core's ffi passes to a
rtnet._bench function.  Its own copy of rtn_core.c keeps its own last
error, read through rtn_bench_last_error() (rtnet/_benchlib.py).  The Python-visible API is the public headers
themselves, so there is no second copy of the declarations to drift from
the C: adding a module never means editing this file.

Public headers are the folders' rtn_*.h except *_priv.h (a module's state, shared by
its own .c files) and *_inline.h (static inline helpers of the data path,
for C callers).  Other names are not for cffi: rtnet_app.h only gathers the
application headers for C programs, and rt_sched_posix.h holds rtn_rt.c's
static scheduling backend.

cdef_source() prepares a public header for ffibuilder.cdef(), which reads
C declarations but no preprocessor beyond integer #defines:

- the include guard and the #include lines are dropped; the headers go to
  cdef() in #include order, so a type is declared before its users;
- ``__attribute__((...))`` is dropped, and a struct whose definition
  carried one (packed, aligned) is declared partial (``...;`` before its
  closing brace): cffi then takes its size and field offsets from the
  compiler, which sees the real header through set_source(), instead of
  computing a natural layout of its own;
- everything else is passed as it is: comments (cffi skips them), the
  declarations, and ``#define NAME <integer literal>`` constants (decimal,
  hex or octal, an optional sign and u/l suffixes; no expressions).

So a public header holds only what cffi reads: prototypes, structs, enums,
typedefs and integer #defines.  Static inline functions, function-like
macros, _Static_assert and #define expressions belong in a *_priv.h or
*_inline.h.  tests/unit/test_cdef.py runs this on every public header.
"""
import glob
import os
import re

from cffi import FFI, CDefError

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION = "0.1.0"  # keep equal to pyproject.toml; checked at import

_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
_ATTRIBUTE = re.compile(r"\s*__attribute__\s*\(\((?:[^()]|\([^()]*\))*\)\)")
_STRUCT = re.compile(r"\bstruct\s+\w+\s*\{")

# rtnet._core's folders, lowest layer first (csrc/README.md); fuzz/, preload/
# and include/ are not part of it, nor bench/'s harness programs (cost_*.c)
FOLDERS = ["core", "xsk", "tdma", "ip", "frer", "vnic", "station", "app"]
# rtnet._bench's own folders, and the production folders it compiles again for them
BENCH_FOLDERS = ["bench"]
BENCH_DEPS = ["core", "xsk", "tdma"]
INCLUDE_DIRS = [os.path.join(HERE, d) for d in FOLDERS + BENCH_FOLDERS]


def _files(pattern: str, folders: list[str] | None = None) -> list[str]:
    dirs = INCLUDE_DIRS if folders is None else [os.path.join(HERE, d) for d in folders]
    return sorted(p for d in dirs for p in glob.glob(os.path.join(d, pattern)))


def header_paths() -> dict[str, str]:
    """Every rtn_*.h of the folders by file name (names are unique across folders)."""
    paths: dict[str, str] = {}
    for p in _files("rtn_*.h"):
        name = os.path.basename(p)
        if name in paths:
            raise CDefError(f"csrc: two headers named {name}: {paths[name]} and {p}")
        paths[name] = p
    return paths


def _path(name: str) -> str:
    return header_paths().get(name) or os.path.join(HERE, name)


def _names(folders: list[str] | None = None) -> list[str]:
    """The public headers' names, of ``folders`` (default: every folder)."""
    paths = header_paths()
    if folders is not None:
        dirs = {os.path.join(HERE, d) for d in folders}
        paths = {n: p for n, p in paths.items() if os.path.dirname(p) in dirs}
    return sorted(n for n in paths if not n.endswith(("_priv.h", "_inline.h")))


def dependencies(name: str) -> list[str]:
    """The public headers ``name`` includes, directly or not, each after its own."""
    public, order = set(_names()), []

    def visit(h: str, path: tuple) -> None:
        if h in path:
            raise CDefError(f"csrc/{h}: #include loop {' -> '.join(path + (h,))}")
        with open(_path(h)) as f:
            for dep in _INCLUDE.findall(f.read()):
                if dep in public and dep not in order:
                    visit(dep, path + (h,))
        if h not in order and h != name:
            order.append(h)

    visit(name, ())
    return order


def public_headers(folders: list[str] | None = None) -> list[str]:
    """The public headers' file names, each after the public headers it includes.

    With ``folders``, only those folders' headers (and the ones they include
    from other folders); by default every folder's, rtnet._bench's as well.
    """
    order: list[str] = []
    for name in _names(folders):
        for h in dependencies(name) + [name]:
            if h not in order:
                order.append(h)
    return order


def _partial_where_attributed(text: str) -> str:
    """Append ``...;`` to each struct definition that carries an __attribute__."""
    out, pos = [], 0
    for m in _STRUCT.finditer(text):
        if m.start() < pos:
            continue                       # a struct inside one already handled
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        close = i - 1                      # the closing brace
        end = text.find(";", close)
        if "__attribute__" in text[m.end():end]:
            out.append(text[pos:close] + "\t...;\n")
            pos = close
    return "".join(out) + text[pos:]


def cdef_source(name: str) -> str:
    """Public header ``name`` prepared for ffibuilder.cdef() (see the module docstring)."""
    with open(_path(name)) as f:
        return prepare(f.read())


def prepare(header: str) -> str:
    """The text of a header, prepared for ffibuilder.cdef() (see the module docstring)."""
    lines = header.split("\n")
    guard = next((ln.split()[1] for ln in lines if ln.startswith("#ifndef ")), None)
    keep = []
    for ln in lines:
        if guard and re.match(rf"#\s*(ifndef|define)\s+{guard}\s*$", ln):
            continue
        if re.match(r"\s*#\s*include\b", ln):
            continue
        keep.append(ln)
    if guard:                              # the guard's #endif is the last one
        last = max(i for i, ln in enumerate(keep) if ln.startswith("#endif"))
        del keep[last]
    text = "\n".join(keep)
    return _ATTRIBUTE.sub("", _partial_where_attributed(text))


def _cdef(builder: FFI, headers: list[str]) -> None:
    for header in headers:
        try:
            builder.cdef(cdef_source(header))
        except CDefError as exc:
            raise CDefError(
                f"csrc/{header} is not a declaration cffi can read: {exc}"
            ) from None


# both modules are built alike
_BUILD = dict(
    include_dirs=INCLUDE_DIRS,
    libraries=["xdp", "bpf", "elf", "z", "pthread"],
    define_macros=[("RTN_VERSION", f'"{VERSION}"'), ("_GNU_SOURCE", None)],
    # warnings are errors: the same flags as csrc/Makefile's, so no build hides one
    extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror",
                        "-std=gnu11"],
)

CORE_HEADERS = public_headers(FOLDERS)
ffibuilder = FFI()
_cdef(ffibuilder, CORE_HEADERS)
ffibuilder.set_source(
    "rtnet._core",
    "\n".join(f'#include "{h}"' for h in CORE_HEADERS),
    sources=[os.path.relpath(p) for p in _files("rtn_*.c", FOLDERS)],
    # a changed header rebuilds the module: build_ext compares only these and the sources
    # with the built module, so without them an edit to a header left a stale module
    depends=[os.path.relpath(p) for p in _files("*.h", FOLDERS)],
    **_BUILD,
)

# rtnet._bench: the bench headers' declarations over _core's types, and the error and
# version accessors of its own copy of rtn_core.c
BENCH_HEADERS = [h for h in public_headers(BENCH_FOLDERS) if h not in CORE_HEADERS]
bench_ffibuilder = FFI()
bench_ffibuilder.include(ffibuilder)
_cdef(bench_ffibuilder, BENCH_HEADERS)
bench_ffibuilder.cdef(
    "const char *rtn_bench_last_error(void);\n"
    "void rtn_bench_clear_error(void);\n"
    "const char *rtn_bench_version(void);\n"
)
bench_ffibuilder.set_source(
    "rtnet._bench",
    # every header of _core as well: the generated code checks the included types' sizes
    "\n".join(f'#include "{h}"' for h in CORE_HEADERS + BENCH_HEADERS)
    + "\nstatic const char *rtn_bench_last_error(void) { return rtn_last_error(); }"
    + "\nstatic void rtn_bench_clear_error(void) { rtn_clear_error(); }"
    + "\nstatic const char *rtn_bench_version(void) { return rtn_version(); }\n",
    sources=[os.path.relpath(p) for p in _files("rtn_*.c", BENCH_DEPS + BENCH_FOLDERS)],
    depends=[os.path.relpath(p) for p in _files("*.h")],
    **_BUILD,
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
    bench_ffibuilder.compile(verbose=True)
