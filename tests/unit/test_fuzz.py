"""The fuzz targets (csrc/fuzz/) build and run without finding anything.

tools/fuzz.sh builds every target (clang, libFuzzer, AddressSanitizer and
UBSan) and runs each for RTN_FUZZ_SECONDS (default 10) from its seeds on a
fresh corpus; each target must end without a crash, sanitizer report,
broken invariant or hang, having executed a reasonable number of inputs.
Without clang's libFuzzer runtime the tests skip, or fail under CI=true.
The long run is ``tools/fuzz.sh 600``.
"""

import os
import shutil
import subprocess

import pytest
from conftest import skip_or_fail

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECONDS = int(os.environ.get("RTN_FUZZ_SECONDS", "10"))
HANG_SECONDS = 5  # an input running longer than this is a hang
MIN_EXECS_PER_SECOND = 50  # the slowest target (the simulator) makes ~900


def _targets() -> list[str]:
    if shutil.which("make") is None:
        return []
    res = subprocess.run(
        ["make", "-s", "--no-print-directory", "-C", os.path.join(ROOT, "csrc"), "fuzz-targets"],
        capture_output=True,
        text=True,
    )
    return res.stdout.split() if res.returncode == 0 else []


TARGETS = _targets()


def _require_libfuzzer(tmp_dir: str):
    clang = shutil.which("clang")
    if clang is None or shutil.which("make") is None:
        skip_or_fail("clang or make is not installed (run tools/setup-system.sh)")
    src = os.path.join(tmp_dir, "probe.c")
    with open(src, "w") as f:
        f.write(
            "#include <stddef.h>\n#include <stdint.h>\n"
            "int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { return 0; }\n"
        )
    res = subprocess.run(
        [clang, "-fsanitize=fuzzer,address,undefined", src, "-o", os.path.join(tmp_dir, "probe")],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        skip_or_fail(
            "clang cannot link libFuzzer (install libclang-rt-14-dev: run tools/setup-system.sh)"
        )


@pytest.fixture(scope="module")
def fuzz_run(tmp_path_factory):
    """Name: fuzz_run.  Scope: module.  Depends: tmp_path_factory.
    One run of tools/fuzz.sh over every target: {target: (execs, corpus, result,
    the tool's report of what it found)}."""
    work = tmp_path_factory.mktemp("fuzz")
    _require_libfuzzer(str(work))
    env = dict(os.environ, FUZZ_WORKDIR=str(work), FUZZ_TIMEOUT=str(HANG_SECONDS))
    res = subprocess.run(
        [os.path.join(ROOT, "tools", "fuzz.sh"), str(SECONDS)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300 + len(TARGETS) * (SECONDS + HANG_SECONDS + 30),
    )
    if res.returncode == 2:
        pytest.fail(
            f"tools/fuzz.sh could not build or run the targets:\n{res.stderr}", pytrace=False
        )
    rows, lines = {}, res.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("target ")) + 1
    for line in lines[start:]:
        if not line.strip() or line.startswith("fuzz:"):  # the table ends: its verdict
            break
        # fixed columns (tools/fuzz.sh's printf): a target that died before libFuzzer's
        # final statistics leaves its execs and rate empty
        name, execs, corpus, result = (
            line[:14].strip(),
            line[15:27].strip(),
            line[39:47].strip(),
            line[49:].strip(),
        )
        report = res.stdout.partition(f"\n--- {name} (")[2].partition("\n\n")[0]
        rows[name] = (int(execs or 0), int(corpus or 0), result, report)
    return rows, res.stdout


def test_fuzz_targets_are_listed():
    if shutil.which("make") is None:
        skip_or_fail("make is not installed (run tools/setup-system.sh)")
    assert len(TARGETS) >= 10, f"csrc/Makefile lists only {TARGETS} (make fuzz-targets)"


@pytest.mark.parametrize("target", TARGETS)
def test_fuzz_target_finds_nothing(fuzz_run, target):
    rows, output = fuzz_run
    assert target in rows, f"tools/fuzz.sh did not run {target}:\n{output}"
    execs, corpus, result, report = rows[target]
    assert result == "ok", f"{target}: {result}\n({report}"
    assert execs >= MIN_EXECS_PER_SECOND * SECONDS, (
        f"{target} made only {execs} executions in {SECONDS} s (stuck harness?)"
    )
    assert corpus > 0
