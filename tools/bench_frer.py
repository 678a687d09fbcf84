"""RFC 2544 with IEEE 802.1CB redundancy, for tools/bench_suite.py (part c-frer).

The redundancy variant of the RT path's RFC 2544: the same two NoMAC stations, the same
generator, rates, trials and search, but in a redundant lab (wires A and B), each station
with its second port, and the probe EtherType sent on both wires (a redundant channel
of it is open on the sender); the receiver counts what passes its duplicate
elimination.  Only the redundancy differs from the one-port figures of the same run.

Then the wire cut: a TDMA master and slave with two ports each, the slave sending one
numbered message a cycle; each run cuts wire A (the slave's bridge port, or the master's
on every other run) for the middle third of the run and mends it.  Counted per run: the
messages lost, the duplicates and the out-of-order deliveries the master's application saw.

The report functions (table, figure, markdown) work on the results dict alone.
"""

from __future__ import annotations

import contextlib
import os
import struct
import threading
import time

from tools.bench_aggregate import show, verdict
from tools.rfc2544_search import found_rate, latency_rounds

TARGET_THROUGHPUT_RATIO = 0.95  # the issue's targets: with redundancy >= 95% of without,
TARGET_P99_EXTRA_US = 10.0  # p99 at most 10 us above
CUT_ET = 0x88B6  # the wire-cut stream (not the probes' EtherType)


@contextlib.contextmanager
def redundant_pair(lab, *, rt, rt2, ethertypes, link_rate_mbps):
    """Stations 1 and 2 of redundant ``lab`` under NoMAC, each with its second port."""
    from rtnet.lab import STATION_IF_B
    from vnic.pair import nomac_pair

    with nomac_pair(
        lab,
        mode=None,
        rt=rt,
        rt2=rt2,
        ethertypes=ethertypes,
        link_rate_mbps=link_rate_mbps,
        redundant_dev=STATION_IF_B,
    ) as (stations, _taps):
        yield stations


def trial_lists(plain: list, retried: list) -> list[tuple[str, list]]:
    """The searches' trial lists to log: the headline's, and the one with disturbed retries
    only where it ran trials of its own (the shared ones are in the first)."""
    shared = {t.get("trial") for t in plain}
    own = [t for t in retried if t.get("trial") not in shared]
    return [("", plain)] + ([(" (with disturbed retries, its own trials)", own)] if own else [])


def failed_trials_text(tried: list) -> str:
    """What the sender lost in each failed trial of a search, for the log: the
    generator's largest lag, wake-ups of the sender's RT thread later than 4 ms, its
    CPU's steal time (the hypervisor's) and busy share of the trial (its RT thread and
    the kernel's network path), and the slow spells and gaps the stall detector saw
    meanwhile, so a stall of the VM is told from a limit of the stack."""

    def got(t, key, fmt, scale=1):
        return format(t[key] / scale, fmt) if key in t else "?"

    out = [
        f"{t['rate']:.1f}%{' (repeat)' if t.get('repeat') else ''}"
        f"{' (disturbed)' if t.get('disturbed') else ''}: "
        f"{t.get('drops', '?')} dropped, lag "
        f"{got(t, 'generator_lag_max_us', '.1f', 1000)} ms, "
        f"{got(t, 'sender_wakeups_over_4ms', '.0f')} wake-ups > 4 ms, steal "
        f"{got(t, 'sender_cpu_steal_ms', '.0f')} ms, sender CPU busy "
        f"{got(t, 'sender_cpu_busy_pct', '.0f')}%, slow spells "
        f"{got(t, 'witness_slow_ms', '.1f')} ms, gaps {got(t, 'witness_gap_ms', '.1f')} ms"
        for t in tried
        if not t["ok"]
    ]
    return "; ".join(out)


@contextlib.contextmanager
def redundant_stream(tx, et: int, on: bool):
    """The probe EtherType sent on both wires with an R-TAG while ``on`` (a redundant
    channel of it is open on the sender), on wire A alone otherwise."""
    if not on:
        yield
        return
    cid, memfd, kickfd = tx.open_channel(et, redundant=True, cycles=False)
    os.close(memfd)
    os.close(kickfd)
    try:
        yield
    finally:
        tx.close_channel(cid)


def measure_rfc2544(
    args,
    lab,
    results: dict,
    *,
    rt,
    rt2,
    et,
    trial,
    search,
    line_rate,
    link_mbps: int,
    log,
    disturbed,
    confirm,
    pooled,
    key: str = "rt_path_redundant",
) -> None:
    """results["rfc2544"][key]: per frame size, on the same two stations of the redundant
    lab, the searches with one port (the probes on wire A alone) and with two, in turn
    (``search({1: trial, 2: trial})``: for each column the headline search without
    disturbed retries and the one with them, bench_suite.both_searches); each column's
    headline rate confirmed by one long trial (``confirm(run_trial)``); then the latency
    of both at the lower of the two headline rates from ``args.latency_trials`` rounds of
    one trial per column, alternating (rfc2544_search.latency_rounds), every round pooled
    (``pooled(rounds, column)``), as the one-port table's latency."""
    out = results["rfc2544"][key] = {}
    with redundant_pair(lab, rt=rt, rt2=rt2, ethertypes=[et], link_rate_mbps=link_mbps) as (tx, rx):
        rx.count_probes(et)
        for frame in args.sizes:
            full = line_rate(frame, link_mbps)

            def run(ports, seconds=args.trial_s):
                def one(pct):
                    with redundant_stream(tx, et, on=ports == 2):
                        return trial(tx, rx, frame, full * pct / 100, seconds)

                return one

            found = search({1: run(1), 2: run(2)})
            rates = {p: found_rate(f) for p, f in found.items()}
            pct1, pct2 = rates[1][0], rates[2][0]
            conf = {
                p: confirm(lambda seconds, p=p: run(p, seconds)(rates[p][0]), disturbed)
                for p in (1, 2)
                if rates[p][0] > 0
            }
            rate = min(pct1, pct2)
            rounds = latency_rounds(
                {p: (lambda p=p: run(p, args.latency_trial_s)(rate)) for p in (1, 2)},
                args.latency_trials if rate > 0 else 0,
                disturbed,
            )
            lat = {p: pooled(rounds, p) for p in (1, 2)}
            fr = rx.stats()["frer"]
            r = out[str(frame)] = {
                "throughput_pct": pct2,
                "throughput_pct_retried": rates[2][1],
                "fps": full * pct2 / 100,
                "link_mbps": link_mbps,
                "trials": found[2]["plain"][1],
                "trials_retried": found[2]["retried"][1],
                "one_port_pct": pct1,
                "one_port_pct_retried": rates[1][1],
                "one_port_trials": found[1]["plain"][1],
                "one_port_trials_retried": found[1]["retried"][1],
                "latency_rate_pct": rate,
                "latency_us": lat[2]["latency_us"],
                "one_port_latency_us": lat[1]["latency_us"],
                "latency_rounds": len(rounds),
                "latency_rounds_disturbed": sum(1 for x in rounds if x["disturbed"]),
                "rx_ports": [p["rx_frames"] for p in fr["port"]],
            }
            if 1 in conf:
                r["one_port_confirm"] = conf[1]
            if 2 in conf:
                r["confirm"] = conf[2]
            if pct1 > 0:
                r["ratio"] = pct2 / pct1
            p99 = (r["latency_us"].get("p99"), r["one_port_latency_us"].get("p99"))
            if None not in p99:
                r["p99_extra_us"] = p99[0] - p99[1]
            log(
                f"c/rt-path 2 ports {frame:5d} B at {link_mbps} Mbit/s: zero-loss {pct2:6.2f}% "
                f"(1 port {pct1:6.2f}%; with disturbed retries {rates[2][1]:.2f}% / "
                f"{rates[1][1]:.2f}%); confirmed: "
                + ", ".join(
                    f"{p} port{'s' if p == 2 else ''} {c['seconds']:g} s "
                    f"{'pass' if c['ok'] else 'FAIL'} ({c['lost']} lost)"
                    for p, c in conf.items()
                )
                + f"; at {rate:.2f}%, latency p50/p99/p99.9/max {_lat(lat[2]['latency_us'])} us "
                f"(1 port {_lat(lat[1]['latency_us'])}), {len(rounds)} alternating rounds, "
                f"all pooled, {r['latency_rounds_disturbed']} of them disturbed"
            )
            for ports in (1, 2):
                for name, tried in trial_lists(
                    found[ports]["plain"][1], found[ports]["retried"][1]
                ):
                    if failed := failed_trials_text(tried):
                        log(
                            f"c/rt-path {ports} port{'s' if ports == 2 else ''} {frame:5d} B"
                            f"{name}: failed trials: {failed}"
                        )


def _lat(lat: dict) -> str:
    return "/".join(f"{lat.get(k) or 0:.1f}" for k in ("p50", "p99", "p99.9", "max"))


def measure_wire_cut(args, lab, results: dict, *, rt, rt2, log) -> None:
    """results["frer_wire_cut"]: ``args.cut_runs`` runs of ``args.cut_messages`` messages."""
    from rtmac.tdma_config import Slot, TdmaConfig
    from rtnet.app import Channel
    from rtnet.lab import STATION_IF_B
    from vnic.pair import lab_station, wait_synced

    runs = []
    with contextlib.ExitStack() as stack:
        stations = [
            stack.enter_context(
                lab_station(lab, idx, settings, ethertypes=[CUT_ET], redundant_dev=STATION_IF_B)
            )
            for idx, settings in ((1, rt), (2, rt2))
        ]
        master, slave = stations
        master.attach_tdma(
            TdmaConfig(role="master", cycle_us=1000, cal_rounds=10, slots={0: Slot(0, 0)})
        )
        slave.attach_tdma(TdmaConfig(role="slave", cal_rounds=10, slots={0: Slot(0, 500)}))
        master.start()
        slave.start()
        wait_synced(stations, 15.0)
        _cid, memfd, kickfd = slave.open_channel(CUT_ET, redundant=True)
        tx = stack.enter_context(Channel.attach(memfd, kickfd))
        _cid, memfd, kickfd = master.open_channel(CUT_ET, cycles=False)
        rx = stack.enter_context(Channel.attach(memfd, kickfd))
        for run in range(args.cut_runs):
            cut = lab.station(2 if run % 2 == 0 else 1)
            r = _cut_run(lab, tx, rx, lab.station(1).mac, cut, args.cut_messages, run)
            r["sync_state"] = str(slave.stats()["tdma"]["state"])
            runs.append(r)
            log(
                f"c/wire cut {run + 1}/{args.cut_runs} (station {cut.index}'s port on wire A): "
                f"{r['lost']} lost, {r['duplicates']} duplicates, {r['out_of_order']} out of "
                f"order of {r['sent']}; slave {r['sync_state']}"
            )
    results["frer_wire_cut"] = {
        "runs": runs,
        "messages": args.cut_messages,
        "lost": sum(r["lost"] for r in runs),
        "duplicates": sum(r["duplicates"] for r in runs),
    }


def _cut_run(lab, tx, rx, dst, cut, n, run) -> dict:
    got, done = [], threading.Event()

    def reader():
        while not done.is_set():
            msg = rx.recv(timeout=0.1)
            if msg is not None and len(msg.payload) >= 8:
                r, i = struct.unpack(">II", msg.payload[:8])
                if r == run:
                    got.append(i)

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(n):
            if i in (n // 3, 2 * n // 3):
                lab.set_wire_port(cut, "a", up=i != n // 3)
            tx.wait_cycle(timeout=1.0)
            tx.send(dst, struct.pack(">II", run, i))
        deadline = time.monotonic() + 2.0
        while len(got) < n and time.monotonic() < deadline:
            time.sleep(0.01)  # the last messages on their way (no event marks their arrival)
    finally:
        done.set()
        t.join()
        lab.set_wire_port(cut, "a", up=True)
    return {
        "sent": n,
        "received": len(got),
        "lost": n - len(set(got)),
        "duplicates": len(got) - len(set(got)),
        "out_of_order": sum(1 for a, b in zip(got, got[1:]) if b < a),
        "cut": cut.index,
    }


# ---- report -------------------------------------------------------------------------


def _fmt(v, nd=1):
    return show(v, nd)


def keys(results: dict) -> list[tuple[str, int]]:
    """The c-frer tables of a run: (results key, modelled link rate), 100 Mbit/s first."""
    rfc = results.get("rfc2544", {})
    out = []
    for k, v in rfc.items():
        if k.startswith("rt_path_redundant") and v:
            out.append((k, int(next(iter(v.values())).get("link_mbps") or 100)))
    return sorted(out, key=lambda x: x[1])


def table(results: dict, key: str = "rt_path_redundant") -> str:
    """One-port against two-port figures per frame size, with the targets' verdicts."""
    red = results.get("rfc2544", {}).get(key, {})
    if not red:
        return ""
    rows = [
        "| frame (B) | zero-loss 1 port / 2 ports (% of line rate) | with disturbed retries "
        "1 port / 2 ports (%) | ratio (target >= "
        f"{TARGET_THROUGHPUT_RATIO:g}) | confirmation frames lost 1 port / 2 ports | "
        "latency 1 port p50 / p99 / p99.9 / max (us) | 2 ports p50 / p99 / p99.9 / max (us) "
        f"| p99 2 ports minus 1 port (us; target within +-{TARGET_P99_EXTRA_US:g}) | "
        "sender CPU busy in the confirmation trial 1 port / 2 ports (%) | sender CPU per "
        "frame 1 port / 2 ports (us) |",
        "|---:|---|---|---|---|---|---|---|---|---|",
    ]
    for size in sorted(int(s) for s in red):
        r = red[str(size)]
        ratio, extra = r.get("ratio"), r.get("p99_extra_us")
        rv = (
            f"{_fmt(ratio, 3)}: {verdict(ratio, TARGET_THROUGHPUT_RATIO, 'at_least')}"
            if ratio is not None
            else "-"
        )
        ev = (
            f"{_fmt(extra)}: {verdict(extra, TARGET_P99_EXTRA_US, 'abs_at_most')}"
            if extra is not None
            else "-"
        )
        lost = (
            f"{_fmt(r.get('one_port_confirm', {}).get('lost'), 0)} / "
            f"{_fmt(r.get('confirm', {}).get('lost'), 0)}"
        )
        rows.append(
            f"| {size} | {_fmt(r.get('one_port_pct'))} / {_fmt(r['throughput_pct'])} | "
            f"{_fmt(r.get('one_port_pct_retried'))} / "
            f"{_fmt(r.get('throughput_pct_retried'))} | {rv} | {lost} | "
            f"{_lat_cells(r.get('one_port_latency_us', {}))} | "
            f"{_lat_cells(r.get('latency_us', {}))} | {ev} | "
            f"{_both(r, 'sender_cpu_busy_pct', 0)} | "
            f"{_both(r, 'sender_cpu_us_per_frame', 2)} |"
        )
    return "\n".join(rows)


def _both(r: dict, field: str, nd: int) -> str:
    """``field`` of the one-port and the two-port confirmation trials."""
    return (
        f"{_fmt(r.get('one_port_confirm', {}).get(field), nd)} / "
        f"{_fmt(r.get('confirm', {}).get(field), nd)}"
    )


def _lat_cells(lat: dict) -> str:
    return " / ".join(_fmt(lat.get(k), 0) for k in ("p50", "p99", "p99.9", "max"))


def cut_summary(results: dict) -> str:
    wc = results.get("frer_wire_cut")
    if not wc:
        return ""
    ooo = sum(r["out_of_order"] for r in wc["runs"])
    return (
        f"Wire cut: {len(wc['runs'])} runs of {_fmt(wc['messages'], 0)} messages (one a "
        "cycle), wire "
        f"A cut for the middle third of each run: {_fmt(wc['lost'], 0)} lost, "
        f"{_fmt(wc['duplicates'], 0)} duplicates, {ooo} out-of-order deliveries in all "
        "(target: 0 lost, 0 duplicates)."
    )


def figure(results: dict, outdir: str, plt) -> str | None:
    tables = keys(results)
    if not tables:
        return None
    fig, ax = plt.subplots(1, 2, figsize=(8, 3))
    for (key, mbps), colour in zip(tables, ("tab:blue", "tab:orange", "tab:green")):
        red = results["rfc2544"][key]
        sizes = sorted(int(s) for s in red)
        for field, lat, name, style in (
            ("one_port_pct", "one_port_latency_us", "1 port", "o-"),
            ("throughput_pct", "latency_us", "2 ports", "s--"),
        ):
            ax[0].plot(
                sizes,
                [red[str(s)].get(field) or 0 for s in sizes],
                style,
                color=colour,
                label=f"{name}, {mbps} Mbit/s",
            )
            ax[1].plot(
                sizes,
                [red[str(s)].get(lat, {}).get("p99") or 0 for s in sizes],
                style,
                color=colour,
                label=f"{name} p99, {mbps} Mbit/s",
            )
    ax[0].set_ylabel("zero-loss throughput (% of line rate)", fontsize=8)
    ax[1].set_ylabel("one-way latency (us)", fontsize=8)
    for a in ax:
        a.set_xlabel("frame size (B)", fontsize=8)
        a.set_xscale("log", base=2)
        a.tick_params(labelsize=7)
        a.legend(fontsize=6)
        a.grid(alpha=0.3)
    fig.tight_layout()
    path = os.path.join(outdir, "c_rfc2544_redundant.png")
    fig.savefig(path, dpi=70)
    plt.close(fig)
    return path


def markdown(results: dict, fig_link: str) -> list[str]:
    tables = keys(results)
    if not tables:
        return []
    st = results.get("envelope", {}).get("settings", {})
    out = [
        "### c. RFC 2544 with IEEE 802.1CB redundancy",
        "",
        "The RT path's RFC 2544 again, everything identical but the redundancy: a redundant "
        "lab (two wires), both stations with their second port; for one port the probe "
        "frames go on wire A alone, for two on both wires with an R-TAG and the copy is "
        "eliminated at the receiver. Both columns are measured on the same stations, their "
        "searches taking their trials in turn per size. The zero-loss rates are the search "
        "without disturbed-trial retries (the headline) and, labelled, with them; each "
        "column's headline rate is confirmed by one trial of "
        f"{st.get('confirm_s', '?')} s (frames lost shown; 0 is confirmed). Latency at the "
        f"lower of the two headline rates from {st.get('latency_trials', '?')} alternating "
        f"rounds (a {st.get('latency_trial_s', '?')} s trial per column), every round "
        "pooled, the same rule as the one-port table. The sender CPU's busy share of the "
        "confirmation trial and its busy time per frame offered (two ports: per pair of "
        "copies) are /proc/stat's for the sender's CPU: its RT thread and the kernel's "
        "network path it runs, which on a veth carries the frame through the bridge to "
        "the receiver's socket. Targets: zero-loss throughput at "
        f"least {TARGET_THROUGHPUT_RATIO:.0%} of one port's at every size; p99 within "
        f"{TARGET_P99_EXTRA_US:g} us of one port's either way (a two-sided check: a large "
        "negative difference says the measurement does not resolve the target, not that the "
        "second port is faster). With several runs every figure is the median "
        "[min..max], and a verdict is 'not resolved on this machine' when the spread is "
        "larger than the gap to the target.",
        "",
    ]
    for key, mbps in tables:
        out += [f"At {mbps} Mbit/s modelled:", "", table(results, key), ""]
        if r := rounds_summary(results, key):
            out += [r, ""]
    out += [cut_summary(results), "", fig_link, ""]
    return out


def rounds_summary(results: dict, key: str = "rt_path_redundant") -> str:
    """Per size, the latency rounds run (all pooled), how many the VM disturbed, and the
    search trials it disturbed: shown, never set aside."""
    red = results.get("rfc2544", {}).get(key, {})
    cells = []
    for size in sorted(int(s) for s in red):
        r = red[str(size)]
        trials = {
            t["trial"]: t
            for t in r.get("trials", [])
            + r.get("trials_retried", [])
            + r.get("one_port_trials", [])
            + r.get("one_port_trials_retried", [])
            if "trial" in t
        }
        dist = sum(1 for t in trials.values() if t.get("disturbed"))
        cells.append(
            f"{size} B {_fmt(r.get('latency_rounds'), 0)}/"
            f"{_fmt(r.get('latency_rounds_disturbed'), 0)}/{dist}"
        )
    return (
        (
            "Latency rounds run and pooled / of them disturbed / search trials the VM "
            "disturbed (first run), per frame size: " + ", ".join(cells) + "."
        )
        if cells
        else ""
    )
