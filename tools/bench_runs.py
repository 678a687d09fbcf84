"""Repeated benchmark runs on disk: the code they measured, the manifest that lists them,
and JSON written whole.  Shared by tools/bench_suite.py, tools/bench_sockperf.py and its
report, tools/sockperf_report.py (docs/benchmark-protocol.md, "Runs and what a figure is"):

- ``code_version()``: the short git sha, with -dirty when tracked files have changes;
- ``write_json(path, obj)``: a file a reader finds whole or not at all;
- ``open_manifest(base, version)``: the manifest of the runs in ``base``, the runs made
  so far (a new manifest if none), a run still marked running marked failed;
- ``begin_run(man, man_path, command, **extra)``: the next run's entry, listed as
  running in the manifest, and its directory beside it;
- ``recorded_run(man, man_path, command, failures, **extra)``: the same as a block whose
  end writes the run's status and end time into the manifest, whatever ends it.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def code_version() -> str:
    """The short git sha of the code, with -dirty when tracked files have changes."""

    def git(*a):
        return subprocess.run(["git", "-C", ROOT, *a], capture_output=True, text=True, timeout=30)

    try:
        sha = git("rev-parse", "--short", "HEAD")
        if sha.returncode != 0:
            return "unknown"
        dirty = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return sha.stdout.strip() + ("-dirty" if dirty else "")


def write_json(path: str, obj) -> None:
    """``obj`` as JSON at ``path``, whole or not at all: a temporary name, then a rename.
    Its directory is made if it is missing (an --out-dir not made yet)."""
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            json.dump(obj, f, indent=1, default=float)
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def read_manifest(path: str, version: str) -> dict:
    """The manifest at ``path`` (a new one if there is none); a run still marked running
    was interrupted (its process is gone: runs of one code follow each other), and is
    marked failed."""
    try:
        with open(path) as f:
            man = json.load(f)
    except FileNotFoundError:
        man = {"code": version, "runs": []}
    for r in man["runs"]:
        if r["status"] == "running":
            r.update(status="failed", reason="interrupted: the run never recorded its end")
    return man


def open_manifest(base: str, version: str) -> tuple[str, dict]:
    """The manifest of the runs in directory ``base`` (made if missing), read as
    read_manifest does and written back: its path and its contents."""
    os.makedirs(base, exist_ok=True)
    man_path = os.path.join(base, "manifest.json")
    man = read_manifest(man_path, version)
    write_json(man_path, man)
    return man_path, man


def now() -> str:
    """The local time with its offset, as the manifest records a run's start and end."""
    return datetime.datetime.now().astimezone().isoformat()


def begin_run(man: dict, man_path: str, command: str, **extra) -> tuple[dict, str]:
    """The next run: its entry (number k, directory run-k beside the manifest, status
    running, ``command``, ``extra``, start time) appended to ``man`` and the manifest
    written; returns the entry and the run's directory, made."""
    k = 1 + max((r["run"] for r in man["runs"]), default=0)
    run_dir = os.path.join(os.path.dirname(man_path), f"run-{k}")
    os.makedirs(run_dir, exist_ok=True)
    entry = {
        "run": k,
        "dir": f"run-{k}",
        "status": "running",
        "command": command,
        **extra,
        "start_time": now(),
    }
    man["runs"].append(entry)
    write_json(man_path, man)
    return entry, run_dir


@contextlib.contextmanager
def recorded_run(man: dict, man_path: str, command: str, failures=(Exception,), **extra):
    """The next run (begin_run) as a block that yields its entry and directory.  The
    entry ends "ok" when the block does; "failed" with the exception's text as its reason
    when the block raises one of ``failures`` (the exception ends there: the caller reads
    entry["status"]); "failed", "interrupted" for anything else, which goes on up.  The
    manifest is written with the end time in every case."""
    entry, run_dir = begin_run(man, man_path, command, **extra)
    try:
        yield entry, run_dir
        entry.update(status="ok")
    except failures as exc:
        entry.update(status="failed", reason=str(exc)[:300])
    except BaseException:
        entry.update(status="failed", reason="interrupted")
        raise
    finally:
        entry["end_time"] = now()
        write_json(man_path, man)
