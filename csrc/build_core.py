"""cffi build script for rtnet._core, the C core of rtnet-xdp.

Every csrc/*.c file is compiled into one private extension module.  The
Python-visible API is the concatenation of csrc/*.cdef (one per C module,
kept next to its header), so adding a module never means editing this file.
"""
import glob
import os

from cffi import FFI

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION = "0.1.0"  # keep equal to pyproject.toml; checked at import

ffibuilder = FFI()
for path in sorted(glob.glob(os.path.join(HERE, "*.cdef"))):
    with open(path) as f:
        ffibuilder.cdef(f.read())

# the public headers only: a module's *_priv.h is shared by its own .c files
headers = sorted(os.path.basename(p) for p in glob.glob(os.path.join(HERE, "rtn_*.h"))
                 if not p.endswith("_priv.h"))
ffibuilder.set_source(
    "rtnet._core",
    "\n".join(f'#include "{h}"' for h in headers),
    sources=sorted(os.path.relpath(p) for p in glob.glob(os.path.join(HERE, "*.c"))
                   if not p.endswith(".bpf.c")),
    include_dirs=[HERE],
    libraries=["xdp", "bpf", "elf", "z", "pthread"],
    define_macros=[("RTN_VERSION", f'"{VERSION}"'), ("_GNU_SOURCE", None)],
    # warnings are errors: the same flags as csrc/Makefile's, so no build hides one
    extra_compile_args=["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror",
                        "-std=gnu11"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
