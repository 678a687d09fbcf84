"""RTmac disciplines (TDMA, NoMAC): configuration, validation, scapy layers, the rtmac CLI."""
