// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file cost_preload.c
 * @brief The cost harness of the socket interposer (librtnet_preload.so,
 *        ../preload/): sendto() and recvfrom() on a real-time UDP socket,
 *        as an unmodified program calls them under rtnet-run, for
 *        valgrind's callgrind to count (tools/bench_cost.py).
 *
 * Usage: cost_preload STAGE COUNT.  The interposer's objects are linked
 * into this program (its constructor runs before main and reads the
 * RTNET_* environment, which the tool clears: no rules), so the exported
 * sendto() and recvfrom() are the ones called here.  The station is the
 * one of the station fuzz targets (../fuzz/station_harness.h), set up as
 * cost_stages.c sets it (TDMA master, virtual clock), with one more
 * channel: a UDP socket on port 5001 as the interposer opens one
 * (rtn_chan_opts_init(): depth 256, no RTNX header).  Its memory is
 * attached with rtn_app_attach() (the application library on a virtual
 * clock, cost_app.c) and the attachment is set into a struct rsock in
 * state RP_RT, registered in rp_fds[] under a duplicate of the channel's
 * notify eventfd, as the interposer's take-over leaves a socket: the
 * notify path is the real one (the station writes the eventfd at a
 * delivery to an armed reader, the reader's recvfrom() reads it and
 * re-arms when it empties the ring).
 *
 * preload_send: sendto() of a 64-byte payload to 10.0.0.3:6000 (a
 * neighbour entry the station publishes); the TX ring is emptied after
 * each, outside the count.  preload_recv: a datagram of a 64-byte payload
 * from 10.0.0.3:6000 delivered by the station's own path (rtn_chans_rx(),
 * outside the count), then recvfrom() with the sender's address.
 * app_sendto and app_recvfrom are the same two on the same socket through
 * the application library's UDP calls (rtn_app_sendto(),
 * rtn_app_recvfrom()) without the interposer.  Each call is bracketed by
 * CALLGRIND_TOGGLE_COLLECT after uncounted warm-up rounds, as in
 * cost_stages.c; the tool subtracts the bracket's own cost.
 *
 * Prints one JSON line as cost_stages does, with the counters: eventfd
 * writes by the station (rx_notifies) and application kicks.
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include "rtn_preload_priv.h"
#include "cost_station.h"

#define PAYLOAD_LEN 64
#define PORT	    5001
#define PEER_IP	    0x0a000003u /* 10.0.0.3 */
#define PEER_PORT   6000

static const uint8_t peer_mac[6] = { 0x02, 0x52, 0x54, 0x00, 0x00, 0x03 };
static const uint8_t payload[PAYLOAD_LEN] = { 0x52, 0x54, 0x4e, 0x45, 0x54, 0x21 };
static uint8_t rx_frame[RTN_UDP_HLEN + PAYLOAD_LEN]; /* the peer's datagram */
static uint32_t rx_len;
static struct rtn_app_chan *app;
static struct chan *chan;
static int sock = -1; /* the program's descriptor of the real-time socket */

/* As cost_stages.c sets it up, with all the harness's channels closed. */
static void station(void)
{
	int i;

	cost_station_master();
	for (i = 0; i < N_CHANS; i++)
		H.s->live[i] = NULL;
}

/* The UDP socket's channel, its attachment, and the interposer's socket on it. */
static void udp_socket(void)
{
	struct rtn_neigh peer = { .ip = PEER_IP };
	struct rtn_chan_opts o;
	struct rsock *rs;
	int id, memfd, kickfd, nfd;

	memcpy(peer.mac, peer_mac, 6);
	if (rtn_station_neigh_set(H.s, &peer, 1))
		die("cannot set the neighbour entry");
	rtn_chan_opts_init(&o);
	o.ethertype = RTN_ETH_P_IPV4;
	o.udp_port = PORT;
	id = rtn_station_chan_open(H.s, &o, &memfd, &kickfd);
	if (id < 0)
		die("cannot open the UDP channel");
	chan = &H.s->chans[id];
	H.s->live[id] = chan;
	chan->shm->kick_wanted = 0; /* TDMA: the station drains at its slot */
	nfd = rtn_station_chan_notifyfd(H.s, id);
	if (nfd < 0 || rtn_app_attach(memfd, kickfd, &app) || rtn_app_set_notifyfd(app, nfd))
		die("cannot attach to the UDP channel");
	/* what take_over() leaves: the program's number is a duplicate of the notify fd */
	sock = fcntl(nfd, F_DUPFD_CLOEXEC, 0);
	rs = calloc(1, sizeof(*rs));
	if (sock < 0 || sock >= RP_MAX_FD || !rs)
		die("cannot make the socket's descriptor");
	rs->state = RP_RT;
	rs->domain = AF_INET;
	rs->type = SOCK_DGRAM;
	rs->ch = app;
	rs->prio = rs->slot = -1;
	rs->rcvbuf = rs->sndbuf = 212992;
	pthread_mutex_init(&rs->tx_lock, NULL);
	pthread_mutex_init(&rs->rx_lock, NULL);
	rs->laddr = STATION_IP;
	rs->lport = PORT;
	rs->bound = 1;
	pthread_mutex_lock(&rp_table_lock);
	rs->refs = 1;
	rp_fds[sock].cloexec = 0;
	__atomic_store_n(&rp_fds[sock].rs, rs, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&rp_table_lock);
}

/* The datagram 10.0.0.3:6000 sends to the socket. */
static void make_rx_frame(void)
{
	memcpy(rx_frame + RTN_UDP_HLEN, payload, PAYLOAD_LEN);
	rx_len = rtn_udp_finish(rx_frame, H.s->o.mac, peer_mac, PEER_IP, STATION_IP, PEER_PORT,
				PORT, 1, PAYLOAD_LEN);
	if (rx_len != sizeof(rx_frame))
		die("the datagram has another length");
}

static void tx_ring_empty(void)
{
	chan->shm->tx.tail = chan->shm->tx.head;
}

static void deliver(void)
{
	uint64_t before = chan->rx_msgs;

	rtn_chans_rx(H.s, RTN_ETH_P_IPV4, rx_frame, rx_len, fuzz_clock_ns, fuzz_clock_ns);
	if (chan->rx_msgs != before + 1)
		die("the station did not deliver the datagram");
}

/* ---- the stages ---------------------------------------------------------- */

static void stage_preload_send(uint32_t n)
{
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(PEER_PORT),
				  .sin_addr = { htonl(PEER_IP) } };
	uint32_t i;

	for (i = 0; i < n; i++) {
		ssize_t rc;

		MEASURE(rc = sendto(sock, payload, PAYLOAD_LEN, 0, (struct sockaddr *)&to,
				    sizeof(to)));
		if (rc != PAYLOAD_LEN)
			die("sendto() through the interposer failed");
		tx_ring_empty();
		cost_app_clock_ns += 1000000;
	}
}

static void stage_app_sendto(uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++) {
		int rc;

		MEASURE(rc = rtn_app_sendto(app, PEER_IP, PEER_PORT, payload, PAYLOAD_LEN,
					    RTN_APP_SCHED_NOW, NULL));
		if (rc)
			die("rtn_app_sendto() failed");
		tx_ring_empty();
		cost_app_clock_ns += 1000000;
	}
}

static void stage_preload_recv(uint32_t n)
{
	uint8_t buf[2048];
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct sockaddr_in from;
		socklen_t fromlen = sizeof(from);
		ssize_t rc;

		deliver();
		MEASURE(rc = recvfrom(sock, buf, sizeof(buf), 0, (struct sockaddr *)&from,
				      &fromlen));
		if (rc != PAYLOAD_LEN || from.sin_port != htons(PEER_PORT))
			die("recvfrom() through the interposer did not return the datagram");
	}
}

static void stage_app_recvfrom(uint32_t n)
{
	uint8_t buf[2048];
	struct rtn_app_msg_info info;
	struct rtn_app_udp_info udp;
	uint32_t i;

	for (i = 0; i < n; i++) {
		int rc;

		deliver();
		MEASURE(rc = rtn_app_recvfrom(app, buf, sizeof(buf), &info, &udp, 0));
		if (rc != PAYLOAD_LEN || udp.src_port != PEER_PORT)
			die("rtn_app_recvfrom() did not return the datagram");
	}
}

/* ---- main ------------------------------------------------------------------ */

static const struct stage stages[] = {
	{ "preload_send", stage_preload_send, "frame", 1 },
	{ "preload_recv", stage_preload_recv, "frame", 1 },
	{ "app_sendto", stage_app_sendto, "frame", 1 },
	{ "app_recvfrom", stage_app_recvfrom, "frame", 1 },
};

int main(int argc, char **argv)
{
	const struct stage *st;
	uint64_t kicks_before, notifies_before;
	unsigned long n;

	st = cost_stage_arg(argc, argv, "cost_preload", stages, sizeof(stages) / sizeof(stages[0]),
			    &n);
	station();
	udp_socket();
	make_rx_frame();
	st->run(WARMUP);
	kicks_before = cost_app_kicks(app);
	notifies_before = chan->rx_notifies;
	counting = 1;
	st->run((uint32_t)n);
	counting = 0;
	printf("{\"stage\": \"%s\", \"rounds\": %lu, \"units\": %lu, \"unit\": \"%s\", "
	       "\"regions\": %llu, \"counters\": {\"app_kicks\": %llu, \"rx_notifies\": %llu}}\n",
	       st->name, n, n, st->unit, (unsigned long long)regions,
	       (unsigned long long)(cost_app_kicks(app) - kicks_before),
	       (unsigned long long)(chan->rx_notifies - notifies_before));
	return 0;
}
