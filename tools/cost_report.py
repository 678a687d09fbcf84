"""What tools/bench_cost.py prints, and its section "Cost per frame" of BENCHMARKS.md."""

from __future__ import annotations

from tools import bench_section
from tools.cost_stages import AGREE_PCT, GOAL_RATIO, INTERPOSER_CALLS, ROUND_DIVISOR


def print_interposer(ip: dict | None):
    if not ip:
        return
    print(
        "\ninterposer's own cost: preload_send - app_send, preload_recv - app_recv "
        "(instructions per datagram):"
    )
    for side, pre, native, udp in INTERPOSER_CALLS:
        d = ip.get(side)
        if not d:
            continue
        parts = [f"{pre} {fmt(d['preload'])}"]
        if "minus_" + native in d:
            parts.append(
                f"- {native} = {fmt(d['minus_' + native])} (EtherType API: UDP/IPv4 work included)"
            )
        if "minus_" + udp in d:
            parts.append(f"- {udp} = {fmt(d['minus_' + udp])} (the same UDP socket)")
        print("  " + ", ".join(parts))


def fmt(v: float) -> str:
    return f"{v:,.1f}" if abs(v) < 100 else f"{v:,.0f}"


def print_table(res: dict, agree: dict | None):
    print(
        f"\n{'stage':<14} {'unit':<6} {'instr/unit':>11} {'repeat':>8}  "
        "counters per unit (the stack's and the harness's)"
    )
    for s, r in res["stages"].items():
        p = r["per_unit"]
        extra = ", ".join(f"{k} {v:g}" for k, v in p.items() if k != "ir")
        rep = f"{agree[s]['spread_pct']:.3f}%" if agree else "-"
        print(f"{s:<14} {r['unit']:<6} {fmt(p['ir']):>11} {rep:>8}  {extra}")
    print(f"(bracket cost subtracted: {res['empty_ir_per_region']:.1f} instructions per region)")


def print_rt(rt: dict | None):
    if not rt:
        print(
            "\nRT path per 64-byte frame: not computed (needs app_send, slot_run, stub_send, "
            "rtn_xsk_send, rtn_xsk_recv, rx_dispatch, stub_rx, app_recv)"
        )
        return
    print(
        "\nRT path instructions per 64-byte frame (send side plus receive side, "
        "application to application):"
    )
    print(
        f"  send side    {fmt(rt['send_side']):>9}  (app_send + slot_run - stub sends + "
        f"{rt['socket_sends_per_frame']:g} x rtn_xsk_send)"
    )
    print(
        f"  receive side {fmt(rt['receive_side']):>9}  (rtn_xsk_recv + rx_dispatch - stub_rx "
        "+ app_recv)"
    )
    print(f"  total        {fmt(rt['total']):>9}")
    print(
        f"  per frame from the counters: {rt['sendto_kicks_per_frame']:g} sendto() kicks "
        f"(rtn_xsk tx_kicks), {rt['rt_wakeups_per_frame']:g} RT-loop wake-ups (harness), "
        f"{rt['app_kicks_per_frame']:g} application kicks (eventfd; none under TDMA), "
        "0 futex wakes (the reader polls)"
    )
    if "anchor" in rt:
        verdict = "met" if rt["goal_met"] else "MISSED"
        print(
            f"  minimal AF_XDP loop {fmt(rt['anchor'])}: ratio {rt['ratio']:.1f}x "
            f"(goal <= {GOAL_RATIO:g}x: {verdict})"
        )
    else:
        print("  minimal AF_XDP loop: not run (--no-netns), no ratio")


def stamp_note(x: dict) -> str:
    """Said when the program was loaded without its receive stamp (the kernel refused
    bpf_xdp_adjust_meta()): it is then shorter and faster than where it stamps."""
    return "" if x.get("stamps", 1) else "; loaded without the receive stamp (kernel refused it)"


def print_xdp(x: dict | None):
    if not x:
        return
    print("\nXDP program (xdp_rtnet.bpf.c; callgrind cannot see it):")
    print(
        f"  verifier's translated program: {x['xlated_insns']} BPF instructions "
        f"(static size, not instructions run per frame); JIT image {x['jited_bytes']} bytes"
        f"{stamp_note(x)}"
    )
    print(
        f"  BPF_PROG_TEST_RUN, {x['rounds']} runs, kernel's mean run time (a timing): "
        f"real-time frame {x['rt_frame_ns']:.0f} ns, IPv4 frame passed to Linux "
        f"{x['ipv4_frame_ns']:.0f} ns"
    )


def compare(old: dict, new: dict):
    print("\nBefore/after, instructions per unit:")
    print(f"{'stage':<14} {'before':>11} {'after':>11} {'change':>8}")
    olds = old.get("stages", {})
    for s, r in new["stages"].items():
        a = r["ir_per_unit"]
        b = olds.get(s, {}).get("ir_per_unit")
        if b is None:
            print(f"{s:<14} {'-':>11} {fmt(a):>11} {'new':>8}")
        else:
            ch = (a - b) / b * 100 if b else float("inf")
            print(f"{s:<14} {fmt(b):>11} {fmt(a):>11} {ch:>+7.1f}%")
    for s in olds:
        if s not in new["stages"]:
            print(f"{s:<14} {fmt(olds[s]['ir_per_unit']):>11} {'-':>11} {'gone':>8}")
    ort, nrt = old.get("rt_path") or {}, new.get("rt_path") or {}
    if ort.get("total") and nrt.get("total"):
        ch = (nrt["total"] - ort["total"]) / ort["total"] * 100
        print(f"{'RT path':<14} {fmt(ort['total']):>11} {fmt(nrt['total']):>11} {ch:>+7.1f}%")


SECTION_BEGIN = "<!-- bench_cost: begin (tools/bench_cost.py --benchmarks writes this section) -->"
SECTION_END = "<!-- bench_cost: end -->"

# What each stage's figure includes, for the page (a stage's own line says the rest).
COPIES = [
    (
        "application -> channel TX ring",
        "rtn_app_send (memcpy of the payload; header built in place)",
    ),
    ("TX ring -> TDMA queue", "rtn_tdma_enqueue (the frame into the engine's pool)"),
    ("TDMA queue -> UMEM", "rtn_xsk_send_by (memcpy into the TX frame)"),
    ("UMEM -> skb -> peer's UMEM", "the kernel, copy mode on a veth (outside every figure)"),
    ("UMEM -> channel RX ring", "rtn_chan_deliver (memcpy of the whole frame)"),
    ("RX ring -> application buffer", "rtn_app_recv (memcpy of the payload)"),
]


def markdown_section(res: dict) -> str:
    """The "Cost per frame" section of BENCHMARKS.md from one result."""
    st, rt, x = res["stages"], res.get("rt_path"), res.get("xdp_prog")
    npass = res["repeat"]
    L = [
        SECTION_BEGIN,
        "## Cost per frame (instructions, callgrind)",
        "",
        "Generated by `python3 -m tools.bench_cost --benchmarks` from the run below; do not edit "
        "by hand, run it again (`python3 -m tools.bench_suite` keeps this section as it is).",
        "",
        f"- Run: {res['date']}, commit {res['commit']}, `flock /tmp/rtnet-lab.lock "
        f"{res['command']}` (as root, from the repository root); {res['frames']} frames per "
        f"stage (the VNIC stages {max(1, res['frames'] // ROUND_DIVISOR['KB'])} super-packets), "
        f"{npass} independent pass{'es' if npass > 1 else ''}.",
        "- Counter: valgrind's callgrind, instructions executed (Ir) in **user space only**: "
        "what the kernel does inside a system call (the sendto() that transmits, the veth, "
        "the XDP program, the copy-mode copies) is in no figure, the RT path's or the "
        "anchor's. `perf stat -e instructions` would count without valgrind, but on this VM "
        f"it reports the event as **{res.get('perf_stat_instructions', 'not supported')}** "
        "(no hardware counters in the guest).",
        "- Harnesses (`make -C csrc cost`, csrc/bench/): each stage runs on its own on fixed "
        "64-byte frames (as handed to the socket, FCS not included) and a fixed count, after "
        "a few uncounted warm-up rounds. The station is the station fuzz targets' "
        "(csrc/fuzz/station_harness.h): no NIC, no RT thread, a virtual clock, a socket stub; "
        "the application library runs in the same process on a virtual clock too, so no "
        "clock read is in these counts. Each measured step is bracketed by "
        "CALLGRIND_TOGGLE_COLLECT; building inputs and emptying rings are outside; the "
        f"bracket's own {res['empty_ir_per_region']:.0f} instructions are subtracted. The "
        "AF_XDP stages run on a veth pair in a namespace the tool makes and removes, with the "
        "station's own sockets (rtn_xsk_open: our XDP program, SKB mode, copy mode); waiting "
        "for a frame (poll()) is outside the count. Under valgrind, rtn_xsk's clock reads are "
        "system calls (valgrind does not run the vDSO), so those two stages count glibc's "
        "system-call path where a native run executes the vDSO's.",
        "",
        "| stage | unit | instructions per unit | "
        + " | ".join(f"pass {i + 1}" for i in range(npass))
        + " | spread | what is counted |",
        "|---|---|---:|" + "---:|" * npass + "---:|---|",
    ]
    for name, r in st.items():
        spread = "-" if r.get("spread_pct") is None else f"{r['spread_pct']:.3f}%"
        L.append(
            f"| {name} | {r['unit']} | {fmt(r['ir_per_unit'])} | "
            + " | ".join(fmt(v) for v in r["passes"])
            + f" | {spread} | {r['description']} |"
        )
    L.append("")
    if res.get("repeat_agrees") is True:
        worst = max(r["spread_pct"] for r in st.values())
        L.append(
            f"**Repeatability: every stage agrees within {AGREE_PCT:g}% across {npass} "
            f"passes** (largest spread {worst:.3f}%: the counts are exact)."
        )
    elif res.get("repeat_agrees") is False:
        bad = [n for n, r in st.items() if r["spread_pct"] > AGREE_PCT]
        L.append(f"**Repeatability: DISAGREEMENT beyond {AGREE_PCT:g}% in {', '.join(bad)}.**")
    else:
        L.append("Repeatability: one pass only, not checked (run with --repeat 2).")
    L.append("")
    if rt:
        L += [
            "### RT path per 64-byte frame, application to application",
            "",
            "| | instructions per frame |",
            "|---|---:|",
            f"| send side: app_send + slot_run - {rt['socket_sends_per_frame']:g} x stub_send "
            f"+ {rt['socket_sends_per_frame']:g} x rtn_xsk_send | {fmt(rt['send_side'])} |",
            f"| receive side: rtn_xsk_recv + rx_dispatch - stub_rx + app_recv | "
            f"{fmt(rt['receive_side'])} |",
            f"| **RT path total** | **{fmt(rt['total'])}** |",
        ]
        if "anchor" in rt:
            L += [
                f"| minimal AF_XDP send/receive loop (anchor) | {fmt(rt['anchor'])} |",
                f"| **ratio** | **{rt['ratio']:.1f}x** |",
                "",
                f"Goal (DESIGN.md): at most {GOAL_RATIO:g}x. "
                + (
                    "**Met.**"
                    if rt["goal_met"]
                    else f"**Missed: the RT path costs {rt['ratio']:.1f}x the anchor's user-space "
                    "instructions per frame.**"
                ),
            ]
        L += [
            "",
            "The send side is one 1 ms TDMA master cycle carrying the frame: the RT loop "
            f"wakes {rt['rt_wakeups_per_frame']:g} times (the cycle's Sync, the slot), sends "
            f"{rt['socket_sends_per_frame']:g} frames (the Sync and the message) and kicks "
            f"the socket {rt['sendto_kicks_per_frame']:g} times (rtn_xsk's tx_kicks: "
            "sendto()); at one message per cycle the Sync is part of each frame's cost. "
            "The socket stub's instructions inside slot_run and rx_dispatch are replaced by "
            "the real socket code's (rtn_xsk_send, rtn_xsk_recv). The receive side is the "
            "frame's own: a slave's reception of the Sync and its own slot run are not in it. "
            "Neither side has the RT loop's own bookkeeping around a wake-up (rtn_station.c: "
            "arming the timer, poll(), the look at an empty RX ring, the next deadline): the "
            "harness calls what the loop calls after waking. "
            "The anchor does only what every AF_XDP program must: reserve a descriptor, copy "
            "the frame into the UMEM, submit, sendto(), take back completions; on receive "
            "take the descriptor, copy the frame out, release it, refill the fill ring.",
            "",
            "System calls and wake-ups per frame, from the stack's counters and the harness: "
            f"{rt['sendto_kicks_per_frame']:g} sendto() kicks; "
            f"{rt['rt_wakeups_per_frame']:g} RT-loop wake-ups, each of which natively returns "
            "from poll() and reads the timer (not in the count: the harness calls what the "
            "loop calls after waking); "
            f"{rt['app_kicks_per_frame']:g} application kicks (an eventfd write, NoMAC only); "
            "0 futex wakes (the reading application polls the ring; a sleeping reader costs "
            "the station one FUTEX_WAKE per delivery). Callgrind's own system-call and call "
            "counts are not used: it counts both also while collection is off.",
            "",
            "Copies per frame (from the code, not counted: the stack has no copy counter):",
            "",
        ]
        L += [f"- {a}: {b}" for a, b in COPIES]
        L.append("")
    ip = res.get("interposer")
    if ip:
        L += [
            "### The socket interposer (rtnet-run), per datagram",
            "",
            "librtnet_preload.so's sendto() and recvfrom() on a real-time UDP socket, as an "
            "unmodified program calls them under `rtnet-run` (csrc/bench/cost_preload.c: the "
            "interposer's objects linked into the harness with the station above; the "
            "socket is an rsock in state RP_RT in the descriptor table under a duplicate of "
            "its channel's notify eventfd, as the interposer's take-over leaves it; a 64-byte "
            "payload, a 106-byte frame). app_sendto and app_recvfrom are the same socket "
            "through the application library's UDP calls, without the interposer.",
            "",
            "interposer's own cost: preload_send - app_send, preload_recv - app_recv",
            "",
            "| | instructions per datagram |",
            "|---|---:|",
        ]
        for side, pre, native, udp in INTERPOSER_CALLS:
            d = ip.get(side)
            if not d:
                continue
            L.append(f"| {pre} | {fmt(d['preload'])} |")
            if "minus_" + native in d:
                L.append(
                    f"| {pre} - {native} (the EtherType API's 64-byte frame: the UDP/IPv4 "
                    f"work is in the difference) | {fmt(d['minus_' + native])} |"
                )
            if "minus_" + udp in d:
                L.append(
                    f"| **{pre} - {udp}** (the same UDP socket through the library) | "
                    f"**{fmt(d['minus_' + udp])}** |"
                )
        L += [
            "",
            "The UDP socket's rows are the interposer's own cost: on sending, its layer "
            "around rtn_app_sendto() (the call's checks, the msghdr, the descriptor lookup, "
            "the lock); on receiving, its own take from the RX ring (it does not call "
            "rtn_app_recvfrom(): it copies the frame before parsing it, fills in the sender's "
            "address and re-arms the notify eventfd, and keeps no stage statistics). "
            "Against app_send and app_recv, the EtherType API's 64-byte frame, the "
            "difference also holds what a UDP datagram costs the library (the neighbour "
            "lookup, the IPv4 and UDP headers and checksums).",
        ]
        if "recv" in ip:
            L += [
                "",
                "A datagram received through the interposer costs "
                f"{ip['recv']['rx_notifies_per_datagram']:g} write of the notify eventfd by "
                "the station (outside every figure: the delivery is not counted) and one "
                "read() of it by recvfrom() when it empties the ring and re-arms the fd "
                "(rtn_app_rx_arm(); its user-space part is in preload_recv), so that poll, "
                "select and epoll see the socket as the kernel's. Sending costs no system "
                "call under TDMA (no kick).",
            ]
        L.append("")
    tops = [
        (n, r["top_functions"])
        for n, r in st.items()
        if r.get("top_functions")
        and n
        in (
            "slot_run",
            "rx_dispatch",
            "app_recv",
            "app_send",
            "rtn_xsk_send",
            "rtn_xsk_recv",
            "preload_send",
            "preload_recv",
        )
    ]
    if tops:
        L += [
            "Where the instructions go (inclusive per unit as `callgrind_annotate "
            "--inclusive=yes` attributes them; nested calls are counted in their callers "
            "too, inlined code under the function it went into):",
            "",
        ]
        for n, top in tops:
            L.append(f"- {n}: " + ", ".join(f"{fn} {fmt(v)}" for fn, v in top))
        L.append("")
    if x:
        L += [
            "### The XDP program (xdp_rtnet.bpf.c)",
            "",
            "Callgrind cannot see a BPF program. Two honest figures instead: the verifier's "
            f"translated program has **{x['xlated_insns']} BPF instructions** (a static size, "
            "not the instructions one frame executes; the JIT image is "
            f"{x['jited_bytes']} bytes), and BPF_PROG_TEST_RUN with repeat {x['rounds']:,} "
            f"gives the kernel's mean run time: **{x['rt_frame_ns']:.0f} ns** for a real-time "
            f"frame (EtherType 0x88B5: lookup, counter, receive stamp, redirect{stamp_note(x)}; retval "
            f"{x['rt_frame_retval']}: XDP_PASS, as no socket is in the map during a test run) "
            f"and **{x['ipv4_frame_ns']:.0f} ns** for an IPv4 frame it leaves to Linux. These "
            "are timings on a shared VM and move from run to run; they are not part of the "
            "repeatability check.",
            "",
        ]
    L += [
        "The regression guard: `python3 -m tools.bench_cost --compare OLD.json` prints each "
        "stage before and after; a change that claims a speed-up shows it there.",
        SECTION_END,
    ]
    return "\n".join(L) + "\n"


def kept_section(path: str) -> str:
    """The cost section of an existing BENCHMARKS.md ("" if none), for a writer
    that regenerates the rest of the page (tools/bench_suite_report.py)."""
    return bench_section.kept(path, SECTION_BEGIN, SECTION_END)


def update_benchmarks(path: str, section: str):
    """Replace the cost section of @p path, or append it (OSError if it cannot)."""
    bench_section.replace(path, SECTION_BEGIN, SECTION_END, section)
