"""Sizes of an application channel's messages (csrc/app/rtn_app.h), shared by rtnet.app and
rtnet.cyclic so that neither has to import the other."""

from ._lowlevel import lib

MSG_MAX = lib.RTN_CHAN_MSG_MAX  # whole frame
OVERHEAD = lib.RTN_APP_OVERHEAD  # Ethernet header + application header
MAX_PAYLOAD = MSG_MAX - OVERHEAD
MAX_DEPTH = 4096  # messages a channel ring holds at most
UDP_MAX_DGRAM = lib.RTN_UDP_MAX_DGRAM  # a UDP datagram's payload, in fragments (IPv4's limit)
