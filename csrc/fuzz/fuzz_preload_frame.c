// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file fuzz_preload_frame.c
 * @brief Fuzz target: rtnet-run's view of a frame from a channel's RX ring
 *        (preload/rtn_preload_frame.h), which the station's shared memory
 *        hands it.
 *
 * Input: a byte choosing the socket (0 UDP, 1 packet SOCK_RAW, 2 packet
 * SOCK_DGRAM), then the frame, in a heap buffer of exactly its length.
 * Checked besides the sanitizers: an accepted frame's data lies inside
 * it; a UDP datagram's starts after the 42 bytes of headers and is the
 * length its UDP header gives less 8; a packet socket gets the whole frame
 * or all after the Ethernet header, with a packet type of the three.
 */
#include <linux/if_packet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include "rtn_preload_frame.h"
#include "fuzz_input.h"

static void check(int ok, const char *what)
{
	if (!ok)
		fuzz_fail("%s", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const int domains[3] = { AF_INET, AF_PACKET, AF_PACKET };
	static const int types[3] = { SOCK_DGRAM, SOCK_RAW, SOCK_DGRAM };
	struct rp_frame_view v;
	uint32_t len;
	uint8_t *frame;
	int which, rc;

	if (size < 1 || size > 4096)
		return 0;
	which = data[0] % 3;
	len = (uint32_t)(size - 1);
	frame = malloc(len ? len : 1);
	if (!frame)
		return 0;
	memcpy(frame, data + 1, len);
	rc = rp_frame_view(domains[which], types[which], frame, len, &v);
	check(rc == 0 || rc == -1, "the verdict is 0 or -1");
	if (rc == 0) {
		check(v.data_off <= len && v.len <= len - v.data_off, "data outside the frame");
		if (which == 0) {
			uint32_t ulen = (uint32_t)frame[38] << 8 | frame[39];

			check(v.data_off == 42 && v.len == ulen - 8,
			      "a datagram where its headers say");
		} else {
			check(v.data_off == (which == 1 ? 0u : 14u) && v.len == len - v.data_off,
			      "a packet socket's data");
			check(v.pkttype == PACKET_HOST || v.pkttype == PACKET_BROADCAST ||
				      v.pkttype == PACKET_MULTICAST,
			      "packet type");
		}
	}
	free(frame);
	return 0;
}
