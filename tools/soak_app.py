#!/usr/bin/env python3
"""The soak's real-time application: a cyclic publisher or a subscriber (tools/soak.py).

    soak_app.py pub NETNS DST_MAC LOG     one message per TDMA cycle to DST_MAC
    soak_app.py sub NETNS LOG             receive and account for every message

Each message carries (publisher run, number): the run is the publisher's PID, the
number counts the messages the channel accepted.  Both write their accounting to
LOG as lines of ``event time run k [n]`` (time on CLOCK_MONOTONIC, which every
process on the host shares), so the soak can tell a lost message from one that was
never sent when either process is killed without warning:

    pub:  at T RUN K           K messages accepted so far (every second and at exit)
    sub:  first T RUN K        the first message this subscriber saw of a run
          gap T RUN K0 K1      messages K0 .. K1-1 of the run never arrived
          old T RUN K          message K arrived again, or after a later one
          at T RUN K N         last message K of the run, N received so far
"""

import os
import signal
import struct
import sys
import time

from rtnet.app import Channel
from rtnet.errors import ChannelFull

ETHERTYPE = 0x88B5
PAYLOAD = struct.Struct("!IQ")


def publisher(netns: str, dst: str, log) -> None:
    run, k, last = os.getpid(), 0, 0.0
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    with Channel.open(netns=netns, ethertype=ETHERTYPE) as ch:
        while not stop:
            if ch.wait_cycle(timeout=1.0) is None:
                continue  # no cycle (the station re-synchronises): nothing sent
            try:
                ch.send(dst, PAYLOAD.pack(run, k))
                k += 1
            except ChannelFull:
                pass  # not accepted, so not sent: the same k next cycle
            now = time.monotonic()
            if now - last >= 1.0:
                log.write(f"at {now:.6f} {run} {k}\n")
                last = now
    log.write(f"at {time.monotonic():.6f} {run} {k}\n")


def subscriber(netns: str, log) -> None:
    expect: dict[int, int] = {}
    received: dict[int, int] = {}
    stop, last = [], 0.0
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))

    def report(now):
        for run, k in expect.items():
            log.write(f"at {now:.6f} {run} {k - 1} {received[run]}\n")

    with Channel.open(netns=netns, ethertype=ETHERTYPE) as ch:
        while not stop:
            msg = ch.recv(timeout=0.5)
            now = time.monotonic()
            if msg is not None and len(msg.payload) >= PAYLOAD.size:
                run, k = PAYLOAD.unpack_from(msg.payload)
                if run not in expect:
                    log.write(f"first {now:.6f} {run} {k}\n")
                elif k > expect[run]:
                    log.write(f"gap {now:.6f} {run} {expect[run]} {k}\n")
                elif k < expect[run]:
                    log.write(f"old {now:.6f} {run} {k}\n")  # duplicate or out of order
                expect[run] = max(expect.get(run, 0), k + 1)
                received[run] = received.get(run, 0) + 1
            if now - last >= 1.0:
                report(now)
                last = now
    report(time.monotonic())


def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[0] == "pub":
        with open(argv[3], "a", buffering=1) as log:
            publisher(argv[1], argv[2], log)
    elif len(argv) == 3 and argv[0] == "sub":
        with open(argv[2], "a", buffering=1) as log:
            subscriber(argv[1], log)
    else:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
