"""What tools/bench_cost.py counts: each stage of the real-time path its harnesses run
(csrc/bench/), the unit it is counted in, and the rules its figures are judged by."""

AGREE_PCT = 1.0  # with --repeat 2 or more, each stage's count must agree within this
GOAL_RATIO = 3.0  # DESIGN.md: the RT path's instructions per frame x the minimal AF_XDP loop's

# The interposer's calls, each set against the native calls it wraps: (side, the call
# through rtnet-run, the EtherType API's call, the application library's UDP call on the
# same socket)
INTERPOSER_CALLS = (
    ("send", "preload_send", "app_send", "app_sendto"),
    ("recv", "preload_recv", "app_recv", "app_recvfrom"),
)

# name: (binary, needs the veth namespace, what is counted, unit, counted once per)
STAGES = {
    "app_send": (
        "stages",
        False,
        "rtn_app_send(): a 64-byte frame built in the channel's TX ring",
        "frame",
    ),
    "chan_drain": (
        "stages",
        False,
        "rtn_chans_drain(): the station takes it from the TX ring (part of slot_run)",
        "frame",
    ),
    "slot_run": (
        "stages",
        False,
        "TDMA master: every RT-loop wake-up of one 1 ms cycle (Sync, "
        "slot 0 with the frame; drain, enqueue, send) and the flush",
        "frame",
    ),
    "rtn_xsk_send": (
        "xsk",
        True,
        "rtn_xsk_send_by() on a veth socket: UMEM copy, TX ring, sendto() kick, completions",
        "frame",
    ),
    "rtn_xsk_recv": (
        "xsk",
        True,
        "rtn_xsk_rx_peek() + rtn_xsk_rx_release() on a veth socket",
        "frame",
    ),
    "rx_dispatch": (
        "stages",
        False,
        "rtn_station_receive_all(): one frame classified, "
        "802.1CB check, delivered to the channel's RX ring",
        "frame",
    ),
    "chan_deliver": (
        "stages",
        False,
        "rtn_chans_rx(): header parse and copy into the RX ring (part of rx_dispatch)",
        "frame",
    ),
    "app_recv": ("stages", False, "rtn_app_recv(): the message taken from the RX ring", "frame"),
    "app_sendto": (
        "preload",
        False,
        "rtn_app_sendto(): a UDP datagram of a 64-byte payload built "
        "in a UDP socket's TX ring (neighbour lookup, IPv4 and UDP headers, checksums)",
        "frame",
    ),
    "preload_send": (
        "preload",
        False,
        "sendto() through the socket interposer on a real-time UDP "
        "socket: its checks, the lock, rtn_app_sendto()",
        "frame",
    ),
    "app_recvfrom": (
        "preload",
        False,
        "rtn_app_recvfrom(): a UDP datagram of a 64-byte payload taken from the RX ring",
        "frame",
    ),
    "preload_recv": (
        "preload",
        False,
        "recvfrom() through the socket interposer: one datagram "
        "taken from the RX ring, the sender's address, the notify eventfd re-armed",
        "frame",
    ),
    "frer_send": (
        "stages",
        False,
        "802.1CB: sequence number and R-TAG pushed, per copy (2 a frame)",
        "copy",
    ),
    "frer_recover": (
        "stages",
        False,
        "802.1CB: R-TAG stripped and vector recovery, per copy (one passed, one discarded)",
        "copy",
    ),
    "vnic_gso": (
        "stages",
        False,
        "VNIC: a 64,000-byte TCP super-packet cut into 1514-byte frames with checksums, "
        "copied out of the read buffer (a flow's first packet, or no room for a layout)",
        "KB",
    ),
    "vnic_gso_in_place": (
        "stages",
        False,
        "VNIC: the same super-packet as the TAP read scatters it into the frames its "
        "segments leave from, cut where it lies (headers and checksums, no payload copied)",
        "KB",
    ),
    "vnic_gro": ("stages", False, "VNIC: those 45 frames merged back into one TAP write", "KB"),
    "vnic_rt_tx": (
        "stages",
        False,
        "VNIC on the RT thread: 64 frames of 1510 bytes the pump queued, sent tunnelled "
        "in a 900 us window of a 1 ms master cycle at 1000 Mbit/s (the Sync included)",
        "KB",
    ),
    "vnic_rt_rx": (
        "stages",
        False,
        "VNIC on the RT thread: 64 received tunnel frames of 1514 bytes classified and "
        "handed to the pump (the loans of the round before given back)",
        "KB",
    ),
    "anchor": (
        "xsk",
        True,
        "minimal AF_XDP loop (libxdp rings): send + receive of one 64-byte "
        "frame, each with its copy",
        "frame",
    ),
    "stub_send": ("stages", False, "the socket stub's send inside slot_run (subtracted)", "frame"),
    "stub_rx": (
        "stages",
        False,
        "the socket stub's receive inside rx_dispatch (subtracted)",
        "frame",
    ),
}
# Stages a KB or a copy is the unit of are run this many times less.
ROUND_DIVISOR = {"KB": 50, "copy": 1, "frame": 1}
NETNS_STAGES = [s for s, v in STAGES.items() if v[1]]
