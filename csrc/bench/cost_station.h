/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file cost_station.h
 * @brief What the two station harnesses (cost_stages.c, cost_preload.c)
 *        share: the station of the station fuzz targets
 *        (../fuzz/station_harness.h) set up as a TDMA master, and the
 *        command line "STAGE COUNT".
 */
#ifndef RTN_BENCH_COST_STATION_H
#define RTN_BENCH_COST_STATION_H

#include "station_harness.h"
#include "cost_app.h"
#include "cost_common.h"

#define WARMUP 8

struct stage {
	const char *name;
	void (*run)(uint32_t n);
	const char *unit;
	double per_round; /* units per round */
};

static void die(const char *what)
{
	fprintf(stderr, "bench_cost: %s\n", what);
	exit(2);
}

/*
 * The station as a TDMA master with a schedule of its own: a 1 ms cycle
 * with one RT slot (the harness's engines also wake for a VNIC window and
 * a third slot, which would charge every frame with wake-ups it does not
 * need).  The channels the harness opens are all still live.
 */
/* A TDMA engine of the station's, started now with @p cfg, in place of the one it has. */
static void cost_station_engine(const struct rtn_tdma_cfg *cfg)
{
	struct rtn_tdma_port port = rtn_station_tdma_port(H.s);
	struct rtn_tdma *engine;

	if (rtn_tdma_create(H.s->o.mac, &port, &engine) ||
	    rtn_tdma_start(engine, cfg, fuzz_clock_ns))
		die("cannot start the TDMA engine");
	H.s->tdma = engine;
	H.s->tdma_cfg = *cfg;
	rtn_tdma_set_lazy_begin(engine, 0);
}

static void cost_station_master(void)
{
	struct station_mode m = { .disc = DISC_TDMA_MASTER };
	struct rtn_tdma_cfg cfg;

	station_reset(&m);
	rtn_tdma_cfg_init(&cfg, RTN_TDMA_ROLE_MASTER);
	cfg.listen_cycles = 0;
	harness_slot(&cfg, 0, 100000, 1500, 0);
	cost_station_engine(&cfg);
}

/*
 * The stage argv[1] names in @p stages and the count argv[2] (1..1000000)
 * into @p n; otherwise the usage, naming every stage, and exit 2.
 */
static const struct stage *cost_stage_arg(int argc, char **argv, const char *prog,
					  const struct stage *stages, size_t nstages,
					  unsigned long *n)
{
	const struct stage *st = NULL;
	char *end;
	size_t i;

	if (argc == 3)
		for (i = 0; i < nstages; i++)
			if (!strcmp(argv[1], stages[i].name))
				st = &stages[i];
	*n = argc == 3 ? strtoul(argv[2], &end, 10) : 0;
	if (!st || !*n || *end || *n > 1000000) {
		fprintf(stderr, "usage: %s STAGE COUNT (1..1000000); stages:", prog);
		for (i = 0; i < nstages; i++)
			fprintf(stderr, " %s", stages[i].name);
		fputc('\n', stderr);
		exit(2);
	}
	return st;
}

#endif
