"""Faults made on a redundant lab's wires, for the redundancy tests: nftables rules on a
wire bridge's forward path that drop R-TAG'd frames of one EtherType (at random, or by
the R-TAG's sequence number).  netem is not in the lab's kernel; nftables is."""

import subprocess

from rtnet import netns

TABLE = "rtnfault"


def nft(lab, wire: str, script: str) -> None:
    subprocess.run(
        netns.command(lab.wire(wire), ["nft", "-f", "-"]),
        input=script,
        text=True,
        check=True,
        capture_output=True,
    )


def nft_drop(lab, wire: str, ethertype: int, match: str) -> None:
    """Drop what ``match`` selects among ``wire``'s R-TAG'd frames of ``ethertype`` (the
    bit offsets of ``match`` count from the Ethernet header: the R-TAG's sequence number
    is @ll,128,16, the encapsulated EtherType @ll,144,16)."""
    nft(
        lab,
        wire,
        f"""table bridge {TABLE} {{
        chain forward {{
            type filter hook forward priority 0; policy accept;
            ether type 0xf1c1 @ll,144,16 {ethertype:#06x} {match} counter drop
        }}
    }}""",
    )


def nft_clear(lab, wire: str) -> None:
    nft(lab, wire, f"delete table bridge {TABLE}")
