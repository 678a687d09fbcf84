"""Only what pyproject.toml cannot say: the cffi extensions (rtnet._core and the
benchmark-only rtnet._bench), the XDP object and the
socket interposer (librtnet_preload.so, csrc/preload/, with rtnet.h).

The XDP program (csrc/xsk/xdp_rtnet.bpf.c) is compiled with clang into
rtnet/xdp_rtnet.bpf.o before setuptools runs, so both regular and editable
installs ship it as package data.
"""
import os
import shutil
import subprocess
import sys

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))


def build_bpf_object():
    src = os.path.join(HERE, "csrc", "xsk", "xdp_rtnet.bpf.c")
    out = os.path.join(HERE, "rtnet", "xdp_rtnet.bpf.o")
    if not os.path.exists(src):
        return
    clang = shutil.which("clang")
    if clang is None:
        sys.exit("rtnet-xdp: clang is needed to build the XDP program "
                 "(run tools/setup-system.sh, or apt-get install clang)")
    arch_inc = "/usr/include/" + subprocess.run(
        ["gcc", "-print-multiarch"], capture_output=True, text=True).stdout.strip()
    cmd = [clang, "-O2", "-g", "-Wall", "-target", "bpf", "-I", arch_inc,
           "-c", src, "-o", out]
    subprocess.run(cmd, check=True)


def build_preload_library():
    """librtnet_preload.so (rtnet-run) and rtnet.h, installed beside the package."""
    csrc = os.path.join(HERE, "csrc")
    if not os.path.exists(os.path.join(csrc, "preload")):
        return
    subprocess.run(["make", "-s", "-C", csrc, "preload"], check=True)
    shutil.copy2(os.path.join(csrc, "build", "librtnet_preload.so"),
                 os.path.join(HERE, "rtnet", "librtnet_preload.so"))
    inc = os.path.join(HERE, "rtnet", "include")
    os.makedirs(inc, exist_ok=True)
    shutil.copy2(os.path.join(csrc, "include", "rtnet.h"), os.path.join(inc, "rtnet.h"))


build_bpf_object()
build_preload_library()
setup(cffi_modules=["csrc/build_core.py:ffibuilder", "csrc/build_core.py:bench_ffibuilder"])
