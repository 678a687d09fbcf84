"""An unmodified program across the demo segment: sockperf's ping-pong under rtnet-run."""

from __future__ import annotations

import subprocess

from rtnet.lab import Lab, Station

SOCKPERF_PORT = 11111


SOCKPERF_SECONDS = 1


def run_unmodified_program(lab: Lab, out) -> dict | None:
    """An unmodified socket program across the segment under ``rtnet-run``: sockperf's
    UDP ping-pong from the first station to a server on the last, over their real-time
    addresses, with sockperf's own figures.  None (and one line saying so) without
    sockperf; the figures with what went wrong otherwise."""
    import re
    import shutil
    import sys

    sockperf = shutil.which("sockperf")
    if sockperf is None:
        out("  unmodified program: sockperf is not installed (tools/setup-system.sh)")
        return None
    first, last = lab.stations[0], lab.stations[-1]

    def under_rtnet_run(st: Station, argv: list[str]) -> list[str]:
        return [sys.executable, "-m", "rtnet.run", "-n", st.netns, "--", *argv]

    server = subprocess.Popen(
        under_rtnet_run(
            last, ["stdbuf", "-oL", sockperf, "server", "-i", last.ip, "-p", str(SOCKPERF_PORT)]
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        # the server says where it listens once its socket is bound: then the client may go
        for line in server.stdout:
            if "listen on" in line or server.poll() is not None:
                break
        res = subprocess.run(
            under_rtnet_run(
                first,
                [
                    sockperf,
                    "ping-pong",
                    "-i",
                    last.ip,
                    "-p",
                    str(SOCKPERF_PORT),
                    "-t",
                    str(SOCKPERF_SECONDS),
                ],
            ),
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        server.terminate()
        try:
            server.wait(timeout=5)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    text = res.stdout + res.stderr
    got = re.search(r"ReceivedMessages=(\d+)", text)
    pct = {p: float(v) for p, v in re.findall(r"percentile (\d+\.\d+) = +([\d.]+)", text)}
    result = {
        "program": "sockperf ping-pong",
        "client": first.netns,
        "server": last.netns,
        "returncode": res.returncode,
        "received": int(got.group(1)) if got else 0,
        "p50_us": pct.get("50.000"),
        "p99_us": pct.get("99.000"),
        "p99_9_us": pct.get("99.900"),
    }
    if res.returncode != 0 or not got:
        out(
            f"  unmodified program: sockperf under rtnet-run failed: "
            f"{(text.strip().splitlines() or ['no output'])[-1]}"
        )
        return result
    out(
        f"  unmodified program: rtnet-run -n {first.netns} -- sockperf ping-pong -i {last.ip}: "
        f"{result['received']} round trips in {SOCKPERF_SECONDS} s over the real-time path, "
        f"p50 {result['p50_us']:.0f} us, p99 {result['p99_us']:.0f} us, "
        f"p99.9 {result['p99_9_us']:.0f} us"
    )
    return result
