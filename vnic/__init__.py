"""The VNIC: a TAP device that carries ordinary Linux traffic through the real-time slots."""
