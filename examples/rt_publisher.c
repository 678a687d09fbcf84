// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rt_publisher.c
 * @brief Example real-time application: publish one message per TDMA cycle
 *        at a fixed offset after the cycle start, then print how late the
 *        task woke up, as cyclictest does.
 *
 * Usage: rt_publisher [-d dev] [-n netns] [-e ethertype] [-o offset_us]
 *                     [-c cycles] [-p priority] [-a cpu] [-s payload]
 *                     [-l lifetime_us] DST-MAC
 * -l: a message not on the wire within lifetime_us of its scheduled time is
 * dropped and counted by the station (a cycle's worth suits cyclic data).
 * Needs a running station daemon on dev (its control socket).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "rtnet_app.h"

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned int b[6];
	int i;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6)
		return -1;
	for (i = 0; i < 6; i++) {
		if (b[i] > 255)
			return -1;
		mac[i] = b[i];
	}
	return 0;
}

static void usage(const char *me)
{
	fprintf(stderr, "usage: %s [-d dev] [-n netns] [-e ethertype] [-o offset_us] "
		"[-c cycles] [-p priority] [-a cpu] [-s payload_bytes] [-l lifetime_us] "
		"DST-MAC\n", me);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *dev = "rteth0", *netns = NULL;
	struct rtn_chan_opts co;
	struct rtn_cyclic_opts o;
	struct rtn_cyclic_stats st;
	struct rtn_cyclic_pub pub;
	struct rtn_app_chan *ch;
	struct rtn_cyclic *task;
	long long lifetime_us;
	int opt, rc;

	rtn_chan_opts_init(&co);
	co.ethertype = 0x88b5;
	rtn_cyclic_opts_init(&o);
	o.cycles = 1000;
	o.rt.priority = 80;
	memset(&pub, 0, sizeof(pub));
	while ((opt = getopt(argc, argv, "d:n:e:o:c:p:a:s:l:h")) != -1) {
		switch (opt) {
		case 'd': dev = optarg; break;
		case 'n': netns = optarg; break;
		case 'e': co.ethertype = (uint16_t)strtoul(optarg, NULL, 0); break;
		case 'o': o.offset_ns = strtoll(optarg, NULL, 10) * 1000; break;
		case 'c': o.cycles = strtoull(optarg, NULL, 10); break;
		case 'p': o.rt.priority = atoi(optarg); break;
		case 'a': o.rt.cpu = atoi(optarg); break;
		case 's': pub.payload_len = strtoul(optarg, NULL, 10); break;
		case 'l':
			lifetime_us = strtoll(optarg, NULL, 10);
			if (lifetime_us < 0 || lifetime_us > RTN_CHAN_LIFETIME_MAX_NS / 1000)
				usage(argv[0]);
			co.lifetime_ns = lifetime_us * 1000;
			break;
		default: usage(argv[0]);
		}
	}
	if (optind != argc - 1 || parse_mac(argv[optind], pub.dst) < 0)
		usage(argv[0]);

	rc = rtn_app_open(dev, netns, &co, &ch);
	if (rc < 0) {
		fprintf(stderr, "rt_publisher: %s\n", rtn_last_error());
		return 1;
	}
	pub.ch = ch;
	rc = rtn_cyclic_start(ch, &o, rtn_cyclic_publisher, &pub, &task);
	if (rc < 0) {
		fprintf(stderr, "rt_publisher: %s\n", rtn_last_error());
		rtn_app_close(ch);
		return 1;
	}
	rtn_cyclic_wait(task, -1);
	rc = rtn_cyclic_stop(task, &st);
	if (rc < 0)
		fprintf(stderr, "rt_publisher: task failed: %s\n", rtn_last_error());
	printf("T: 0 P:%2d C:%8llu Min:%7lld Act:%5s Avg:%7lld Max:%8lld  (us, wake-up lateness)\n",
	       st.priority, (unsigned long long)st.hist.count,
	       (long long)(st.hist.min_ns / 1000), "-",
	       (long long)(st.hist.count ? st.hist.sum_ns / (int64_t)st.hist.count / 1000 : 0),
	       (long long)(st.hist.max_ns / 1000));
	printf("sent %llu, TX ring full %llu, missed cycles %llu, %s\n",
	       (unsigned long long)pub.sent, (unsigned long long)pub.refused,
	       (unsigned long long)st.missed,
	       st.policy == RTN_RT_POLICY_FIFO ? "SCHED_FIFO" : "SCHED_OTHER");
	rtn_app_close(ch);
	return rc < 0 ? 1 : 0;
}
