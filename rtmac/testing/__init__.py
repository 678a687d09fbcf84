"""What exists for tests and benchmarks only: the scapy layers of RTmac/TDMA frames
(scapy_layers), the deterministic TDMA segment on a virtual clock (sim) and the faults
made on a redundant lab's wires (wire_faults).  The stack itself never imports this
package."""
