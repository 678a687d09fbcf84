"""The public C headers are the cffi declarations (csrc/build_core.py's rule).

Each public header, prepared as build_core.py prepares it, must be
something cffi's cdef() reads; no hand-written csrc/*.cdef may come back
beside them; and a struct that build_core.py declares partial gets its
layout from the compiler, not from cffi.
"""

import glob
import importlib.util
import os

import pytest
from cffi import FFI, CDefError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CSRC = os.path.join(ROOT, "csrc")


def _load_build_core():
    spec = importlib.util.spec_from_file_location("build_core", os.path.join(CSRC, "build_core.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


build_core = _load_build_core()
HEADERS = build_core.public_headers()


def test_no_hand_written_cdef_file_is_back():
    assert glob.glob(os.path.join(CSRC, "**", "*.cdef"), recursive=True) == [], (
        "declarations come from the public headers (csrc/build_core.py)"
    )


def test_every_rtn_header_is_public_private_or_inline():
    every = set(build_core.header_paths())
    internal = {h for h in every if h.endswith(("_priv.h", "_inline.h"))}
    assert set(HEADERS) == every - internal
    assert "rtn_core.h" in HEADERS and "rtn_station_priv.h" not in HEADERS


@pytest.mark.parametrize("header", HEADERS)
def test_public_header_is_a_declaration_cffi_reads(header):
    """The header, after the public headers it includes, as build_core.py gives them."""
    ffi = FFI()
    for dep in build_core.dependencies(header):
        ffi.cdef(build_core.cdef_source(dep))
    try:
        ffi.cdef(build_core.cdef_source(header))
    except CDefError as exc:
        pytest.fail(
            f"csrc/{header}: {exc}\n(static inline functions, function-like macros, "
            "_Static_assert and #define expressions go to a *_priv.h or *_inline.h)",
            pytrace=False,
        )


def test_the_preparation_drops_guard_includes_and_attributes():
    text = build_core.prepare(
        '#ifndef X_H\n#define X_H\n#include <stdint.h>\n#include "rtn_core.h"\n'
        "#define X_MAX 0x10u\n"
        "struct x_ring {\n\tuint32_t head __attribute__((aligned(64)));\n};\n"
        "struct x_plain { uint32_t a; };\n"
        "int x_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));\n#endif\n"
    )
    assert "#ifndef" not in text and "#include" not in text and "#endif" not in text
    assert "__attribute__" not in text and "#define X_MAX 0x10u" in text
    ring, plain = text.split("struct x_plain")
    assert "...;" in ring and "...;" not in plain
    FFI().cdef(text)


def test_what_cffi_cannot_read_is_refused():
    for bad in (
        "static inline int x_twice(int v)\n{\n\treturn 2 * v;\n}\n",
        "#define X_OFF (14 + 16)\n",
        "_Static_assert(sizeof(int) == 4);\n",
    ):
        with pytest.raises(CDefError):
            FFI().cdef(build_core.prepare(f"#ifndef X_H\n#define X_H\n{bad}#endif\n"))


def test_a_partial_struct_has_the_compilers_layout():
    """struct rtn_ring puts head and tail on their own cache lines (aligned(64))."""
    from rtnet._lowlevel import ffi

    assert ffi.offsetof("struct rtn_ring", "tail") == 64
    assert ffi.alignof("struct rtn_ring") == 64
    assert ffi.sizeof("struct rtn_app_hdr") == 24
