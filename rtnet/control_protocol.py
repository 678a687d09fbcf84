"""What both ends of rtnetd's control socket agree on: framing and size limits.

Each request and each reply is one JSON object on one line (UTF-8, ending in
a newline).  The server is rtnet.control_server; the client is
rtnet.control_client, used by rtnet.stationctl (rtnetctl), rtmac.control
(rtmac) and rtnet.app (channel.open).  Both take their limits from here, so
a reply the server is willing to send is never one the client refuses to read.
"""

MAX_REQUEST = 64 * 1024
"""Longest request line, in bytes without the newline; a longer one ends the connection."""

MAX_NESTING = 32
"""Deepest nesting of arrays and objects in a request.  Requests are flat objects; the
limit keeps the JSON parser's recursion far from Python's recursion limit."""

MAX_REPLY = 32 * 1024 * 1024
"""Longest reply line the server sends and a client accepts, newline included.  The
largest reply by design is a capture of 10000 frames of 2048 bytes, base64-encoded
(about 27.5 MB); rtnet.daemon sizes its capture to stay under this."""
