"""What exists for tests and benchmarks only: the scapy layers of RTmac/TDMA frames
(scapy_layers) and the deterministic TDMA segment on a virtual clock (sim).  The
stack itself never imports this package."""
