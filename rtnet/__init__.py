"""rtnet-xdp: an RTnet-style real-time Ethernet stack on AF_XDP for stock Linux."""

__version__ = "0.1.0"
