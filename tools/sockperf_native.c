// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file sockperf_native.c
 * @brief A UDP ping-pong in the manner of sockperf's, for tools/bench_sockperf.py:
 *        the same exchange either through the native application API
 *        (rtn_app.h: rtn_app_open with udp_port, rtn_app_sendto,
 *        rtn_app_recvfrom) or through plain POSIX sockets (socket, bind,
 *        sendto, recvfrom), which rtnet-run's interposer takes over or the
 *        kernel serves.  The difference between the two on the real-time
 *        path is the interposer's own cost.
 *
 *   sockperf_native server --api native|posix --ip A --port P [--dev D --netns NS] [--stamped]
 *   sockperf_native client --api native|posix --ip A --peer B --port P --size N --seconds S
 *                          [--warmup N] [--dev D --netns NS] [--stamped]
 *
 * The server answers every datagram to its sender until SIGTERM or SIGINT.
 * The client sends one datagram, waits for its answer (blocking, as sockperf's
 * ping-pong does), and records the round trip (CLOCK_MONOTONIC) for S seconds
 * after N warm-up exchanges.  Both print one JSON line when they end: the
 * round-trip percentiles (us, nearest rank) and, with --stamped (native API,
 * both ends), the stage stamps of the received datagrams as medians per
 * stage (sender's hand-over -> its RT thread's pick-up -> TX -> receiver's
 * XDP stamp -> receiver's RT thread -> the application's take), so the
 * client gives the direction server->client and the server the other.
 * The server prints "ready" once its socket is bound.  Exit status 2 on bad
 * arguments, 1 when the socket cannot be opened.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include "rtnet_app.h"

#define MAX_SAMPLES (4u << 20)
#define MAX_STAGE (1u << 20)
#define NSTAGES 5

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}
static void on_alarm(int sig)
{
	(void)sig;
}

struct opts {
	int server, native, stamped;
	const char *dev, *netns, *ip, *peer;
	unsigned port, size, warmup;
	double seconds;
};

struct sock {
	int fd;			 /* posix */
	struct rtn_app_chan *ch; /* native */
	int stamped;
};

static const char *stage_name[NSTAGES] = { "queue", "slot", "wire", "rx_rt", "take" };
static int64_t *stage_v[NSTAGES];
static uint32_t stage_n;

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr, "usage: sockperf_native server|client --api native|posix --ip A "
			"[--peer B] --port P [--size N] [--seconds S] [--warmup N] [--dev D] "
			"[--netns NS] [--stamped]\n");
	exit(2);
}

static uint32_t ip_of(const char *s)
{
	struct in_addr a;
	if (!s || inet_pton(AF_INET, s, &a) != 1) {
		fprintf(stderr, "sockperf_native: bad IPv4 address %s\n", s ? s : "(none)");
		exit(2);
	}
	return ntohl(a.s_addr);
}

static int open_sock(const struct opts *o, struct sock *s)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->stamped = o->stamped;
	if (o->native) {
		struct rtn_chan_opts co;
		int rc;

		rtn_chan_opts_init(&co);
		co.udp_port = (uint16_t)o->port;
		co.udp_flags = o->stamped ? RTN_UDP_F_STAMPED : 0;
		co.depth = 1024;
		rc = rtn_app_open(o->dev, o->netns, &co, &s->ch);
		if (rc < 0) {
			fprintf(stderr, "sockperf_native: rtn_app_open: %s\n", rtn_last_error());
			return -1;
		}
		return 0;
	}
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons((uint16_t)o->port),
				 .sin_addr.s_addr = htonl(ip_of(o->ip)) };
	/* blocking, without a receive time-out, as sockperf's sockets: a signal (SIGTERM,
	 * the client's SIGALRM watchdog) interrupts a receive with EINTR */
	s->fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (s->fd < 0 || bind(s->fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		fprintf(stderr, "sockperf_native: socket %s:%u: %s\n", o->ip, o->port,
			strerror(errno));
		return -1;
	}
	return 0;
}

static void record_stages(const struct rtn_app_msg_info *in)
{
	int64_t v[NSTAGES];
	int i;

	if (!in->handover_ns || !in->pickup_ns || !in->tx_ns || !in->rx_ns || !in->rx_rt_ns ||
	    !in->take_ns || stage_n >= MAX_STAGE)
		return;
	v[0] = in->pickup_ns - in->handover_ns;
	v[1] = in->tx_ns - in->pickup_ns;
	v[2] = in->rx_ns - in->tx_ns;
	v[3] = in->rx_rt_ns - in->rx_ns;
	v[4] = in->take_ns - in->rx_rt_ns;
	for (i = 0; i < NSTAGES; i++)
		stage_v[i][stage_n] = v[i];
	stage_n++;
}

/* >= 0: bytes received; -EAGAIN: nothing within the time-out (native: 200 ms; posix: until
 * a signal); else an error */
static int s_recv(struct sock *s, void *buf, uint32_t cap, uint32_t *ip, uint16_t *port)
{
	if (s->ch) {
		struct rtn_app_msg_info info;
		struct rtn_app_udp_info from;
		int n = rtn_app_recvfrom(s->ch, buf, cap, &info, &from, 200000000);
		if (n >= 0) {
			*ip = from.src_ip;
			*port = from.src_port;
			if (s->stamped)
				record_stages(&info);
		}
		return n;
	}
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	ssize_t n = recvfrom(s->fd, buf, cap, 0, (struct sockaddr *)&a, &al);
	if (n < 0)
		return errno == EWOULDBLOCK || errno == EINTR ? -EAGAIN : -errno;
	*ip = ntohl(a.sin_addr.s_addr);
	*port = ntohs(a.sin_port);
	return (int)n;
}

static int s_send(struct sock *s, const void *buf, uint32_t len, uint32_t ip, uint16_t port)
{
	for (;;) {
		int rc;
		if (s->ch) {
			rc = rtn_app_sendto(s->ch, ip, port, buf, len, RTN_APP_SCHED_NOW, NULL);
		} else {
			struct sockaddr_in a = { .sin_family = AF_INET,
						 .sin_port = htons(port),
						 .sin_addr.s_addr = htonl(ip) };
			rc = sendto(s->fd, buf, len, 0, (struct sockaddr *)&a, sizeof(a)) < 0 ?
				     -errno :
				     0;
		}
		if (rc != -ENOBUFS && rc != -EAGAIN)
			return rc;
		if (stop)
			return rc;
		usleep(10);
	}
}

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static double pct(const int64_t *v, size_t n, double q)
{
	size_t k;
	if (!n)
		return -1;
	k = (size_t)(q / 100.0 * (double)n + 0.999999);
	if (k < 1)
		k = 1;
	if (k > n)
		k = n;
	return (double)v[k - 1] / 1000.0;
}

static void print_stages(void)
{
	int i;
	printf("\"stages_n\": %u, \"stages_p50_us\": {", stage_n);
	for (i = 0; i < NSTAGES; i++) {
		qsort(stage_v[i], stage_n, sizeof(int64_t), cmp64);
		printf("%s\"%s\": %.3f", i ? ", " : "", stage_name[i],
		       pct(stage_v[i], stage_n, 50));
	}
	printf("}, \"stages_p99_us\": {");
	for (i = 0; i < NSTAGES; i++)
		printf("%s\"%s\": %.3f", i ? ", " : "", stage_name[i],
		       pct(stage_v[i], stage_n, 99));
	printf("}");
}

static void print_chan(const struct sock *s)
{
	struct rtn_app_stats st;
	if (!s->ch) {
		printf("null");
		return;
	}
	rtn_app_stats(s->ch, &st);
	printf("{\"tx_sent\": %llu, \"kicks\": %llu, \"rx_received\": %llu, \"rx_drops\": %llu, "
	       "\"tx_full\": %llu}",
	       (unsigned long long)st.tx_sent, (unsigned long long)st.kicks,
	       (unsigned long long)st.rx_received, (unsigned long long)st.rx_drops,
	       (unsigned long long)st.tx_full);
}

static int serve(const struct opts *o, struct sock *s)
{
	static uint8_t buf[65536];
	uint64_t served = 0, errors = 0;

	printf("ready\n");
	fflush(stdout);
	while (!stop) {
		uint32_t ip;
		uint16_t port;
		int n = s_recv(s, buf, sizeof(buf), &ip, &port);
		if (n == -EAGAIN)
			continue;
		if (n < 0) {
			fprintf(stderr, "sockperf_native: receive: %s\n", strerror(-n));
			return 1;
		}
		if (s_send(s, buf, (uint32_t)n, ip, port) < 0)
			errors++;
		else
			served++;
	}
	printf("{\"role\": \"server\", \"api\": \"%s\", \"served\": %llu, \"send_errors\": %llu, ",
	       o->native ? "native" : "posix", (unsigned long long)served,
	       (unsigned long long)errors);
	print_stages();
	printf(", \"channel\": ");
	print_chan(s);
	printf("}\n");
	return 0;
}

static int client(const struct opts *o, struct sock *s)
{
	static uint8_t out[65536], in[65536];
	uint32_t peer = ip_of(o->peer);
	uint64_t seq = 0, lost = 0, stray = 0, sent = 0;
	int64_t *rtt = malloc(sizeof(int64_t) * MAX_SAMPLES), t_end = 0, t_start = 0;
	size_t n = 0;
	double sum = 0;
	unsigned i;

	if (!rtt) {
		fprintf(stderr, "sockperf_native: out of memory\n");
		return 1;
	}
	memset(out, 0xA5, sizeof(out));
	if (!o->native) {
		/* a lost answer must not block a POSIX receive forever: a 200 ms tick */
		struct itimerval it = { { 0, 200000 }, { 0, 200000 } };
		setitimer(ITIMER_REAL, &it, NULL);
	}
	for (i = 0; !stop; i++) {
		int measuring = i >= o->warmup, rc;
		int64_t t0, t1;
		uint32_t ip;
		uint16_t port;

		if (measuring && !t_start) {
			t_start = now_ns();
			t_end = t_start + (int64_t)(o->seconds * 1e9);
			stage_n = 0; /* the warm-up's stamps do not count */
		}
		if (t_start && now_ns() >= t_end)
			break;
		seq++;
		memcpy(out, &seq, sizeof(seq));
		t0 = now_ns();
		rc = s_send(s, out, o->size, peer, (uint16_t)o->port);
		if (rc < 0) {
			fprintf(stderr, "sockperf_native: send: %s\n", strerror(-rc));
			return 1;
		}
		sent += measuring;
		for (;;) {
			uint64_t got;
			rc = s_recv(s, in, sizeof(in), &ip, &port);
			t1 = now_ns();
			if (rc == -EAGAIN) {
				if (t1 - t0 < 1000000000 && !stop)
					continue; /* up to 1 s for an answer */
				lost += measuring;
				break;
			}
			if (rc < 0) {
				fprintf(stderr, "sockperf_native: receive: %s\n", strerror(-rc));
				return 1;
			}
			memcpy(&got, in, sizeof(got));
			if (rc < (int)sizeof(got) || got != seq) {
				stray++; /* a late answer to an earlier one */
				continue;
			}
			if (measuring && n < MAX_SAMPLES) {
				rtt[n++] = t1 - t0;
				sum += (double)(t1 - t0);
			}
			break;
		}
	}
	qsort(rtt, n, sizeof(int64_t), cmp64);
	printf("{\"role\": \"client\", \"api\": \"%s\", \"size\": %u, \"seconds\": %.3f, "
	       "\"sent\": %llu, \"samples\": %zu, \"lost\": %llu, \"stray\": %llu, "
	       "\"rtt_us\": {\"min\": %.3f, \"p50\": %.3f, \"p99\": %.3f, \"p99.9\": %.3f, "
	       "\"max\": %.3f, \"avg\": %.3f}, ",
	       o->native ? "native" : "posix", o->size, (double)(now_ns() - t_start) / 1e9,
	       (unsigned long long)sent, n, (unsigned long long)lost, (unsigned long long)stray,
	       pct(rtt, n, 0), pct(rtt, n, 50), pct(rtt, n, 99), pct(rtt, n, 99.9),
	       pct(rtt, n, 100), n ? sum / (double)n / 1000.0 : -1.0);
	print_stages();
	printf(", \"channel\": ");
	print_chan(s);
	printf("}\n");
	free(rtt);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { { "api", 1, 0, 'a' },    { "ip", 1, 0, 'i' },
					    { "peer", 1, 0, 'P' },   { "port", 1, 0, 'p' },
					    { "size", 1, 0, 'm' },   { "seconds", 1, 0, 't' },
					    { "warmup", 1, 0, 'w' }, { "dev", 1, 0, 'd' },
					    { "netns", 1, 0, 'n' },  { "stamped", 0, 0, 's' },
					    { 0, 0, 0, 0 } };
	struct opts o = { .dev = "rteth0", .port = 11111, .size = 64, .warmup = 200, .seconds = 1 };
	struct sock s;
	struct sigaction sa;
	int c, i, rc;
	char *end;

	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "server"))
		o.server = 1;
	else if (strcmp(argv[1], "client"))
		usage();
	optind = 2;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'a':
			if (!strcmp(optarg, "native"))
				o.native = 1;
			else if (strcmp(optarg, "posix"))
				usage();
			break;
		case 'i':
			o.ip = optarg;
			break;
		case 'P':
			o.peer = optarg;
			break;
		case 'p':
			o.port = (unsigned)strtoul(optarg, &end, 10);
			if (*end || !o.port || o.port > 65535)
				usage();
			break;
		case 'm':
			o.size = (unsigned)strtoul(optarg, &end, 10);
			if (*end || o.size < 8 || o.size > 1400)
				usage();
			break;
		case 't':
			o.seconds = strtod(optarg, &end);
			if (*end || !(o.seconds > 0 && o.seconds <= 3600))
				usage();
			break;
		case 'w':
			o.warmup = (unsigned)strtoul(optarg, &end, 10);
			if (*end)
				usage();
			break;
		case 'd':
			o.dev = optarg;
			break;
		case 'n':
			o.netns = optarg;
			break;
		case 's':
			o.stamped = 1;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || (!o.native && !o.ip) || (!o.server && !o.peer) ||
	    (o.stamped && !o.native))
		usage();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal; /* no SA_RESTART: a blocked receive returns */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_alarm;
	sigaction(SIGALRM, &sa, NULL);
	for (i = 0; i < NSTAGES; i++)
		if (!(stage_v[i] = malloc(sizeof(int64_t) * MAX_STAGE)))
			return 1;
	if (open_sock(&o, &s) < 0)
		return 1;
	rc = o.server ? serve(&o, &s) : client(&o, &s);
	fflush(stdout);
	if (s.ch)
		rtn_app_close(s.ch);
	if (s.fd >= 0)
		close(s.fd);
	return rc;
}
