"""A benchmark's own section of BENCHMARKS.md, between its begin and end markers: kept
when another tool rewrites the rest of the page (tools/bench_suite_report.py), replaced
when the benchmark writes it again.  Shared by tools/cost_report.py (bench_cost),
tools/sockperf_report.py (bench_sockperf) and tools/bench_vnic.py; and the notes written
by hand, kept the same way."""

from __future__ import annotations

import os

# What people wrote about the figures (a change measured against another, a cause found):
# no tool writes it, and a tool that rewrites the page keeps it, as the sections above.
NOTES_BEGIN = "<!-- notes: begin (written by hand; tools keep it when they rewrite the page) -->"
NOTES_END = "<!-- notes: end -->"


def kept_notes(path: str) -> str:
    """The page's hand-written notes section ("" if none), with its newline."""
    return kept(path, NOTES_BEGIN, NOTES_END)


def kept(path: str, begin: str, end: str) -> str:
    """The section of an existing page ("" if it or the page is missing), with its newline."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return ""
    a, b = text.find(begin), text.find(end)
    return text[a : b + len(end)] + "\n" if 0 <= a < b else ""


def replace(path: str, begin: str, end: str, section: str) -> None:
    """Put ``section`` in place of the page's section, or after the page; the page is
    written whole or not at all.  OSError as the file system gives it."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        text = "# Benchmarks\n"
    a, b = text.find(begin), text.find(end)
    if 0 <= a < b:
        text = text[:a] + section.rstrip("\n") + text[b + len(end) :]
    else:
        text = text.rstrip("\n") + "\n\n" + section
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
