// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file fuzz_preload_rules.c
 * @brief Fuzz target: rtnet-run's rules parser (preload/rtn_rules.c), which
 *        reads what a user wrote in a file or the environment.
 *
 * Input: the rules text.  Checked besides the sanitizers: a refusal keeps
 * nothing and says one line naming its origin and line; an acceptance
 * keeps at most RTN_RULES_MAX rules, each with its fields in range; the
 * lookups over what was kept return one of its rules or NULL, and agree
 * with a parse of the same text again (the parser has no hidden state).
 */
#include <stdlib.h>
#include <string.h>
#include "rtn_chan.h"
#include "rtn_rules.h"
#include "fuzz_input.h"

static void check(int ok, const char *what)
{
	if (!ok)
		fuzz_fail("%s", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rtn_rules a = { 0 }, b = { 0 };
	char *text = malloc(size + 1), err[320], err2[320];
	int rc, rc2, i;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0; /* the library reads C strings (a file's bytes up to a NUL) */
	rc = rtn_rules_parse(text, "fuzz", &a, err, sizeof(err));
	rc2 = rtn_rules_parse(text, "fuzz", &b, err2, sizeof(err2));
	check(rc == rc2 && a.n == b.n && !strcmp(err, err2), "two parses of one text differ");
	if (rc) {
		check(rc == -1 && a.n == 0, "a refused text kept rules");
		check(!strncmp(err, "fuzz line ", 10) && !strchr(err, '\n'),
		      "the error is not one line naming the origin and line");
	} else {
		check(err[0] == 0 && a.n >= 0 && a.n <= RTN_RULES_MAX, "accepted: bad count");
	}
	for (i = 0; i < a.n; i++) {
		const struct rtn_rule *r = &a.r[i];

		check(r->action == RTN_RULE_RT || r->action == RTN_RULE_OS, "action");
		check(r->proto == RTN_RULE_UDP || r->proto == RTN_RULE_PACKET, "protocol");
		check(r->prio >= -1 && r->prio <= 31 && r->slot >= -1 && r->slot <= 63,
		      "prio/slot");
		check(r->l_port >= -1 && r->l_port <= 65535 && r->r_port >= -1 &&
			      r->r_port <= 65535,
		      "port");
		check((r->l_addr & ~r->l_mask) == 0 && (r->r_addr & ~r->r_mask) == 0,
		      "address outside its mask");
		check(r->ethertype == -1 || (r->ethertype >= 0x0600 && r->ethertype <= 0xffff),
		      "EtherType");
		check(r->lifetime_ns == 0 || (r->lifetime_ns >= 1000 &&
					      r->lifetime_ns <= RTN_CHAN_LIFETIME_MAX_NS &&
					      r->lifetime_ns % 1000 == 0),
		      "lifetime");
		check(r->line >= 1, "line");
	}
	if (size >= 12) {
		uint32_t la, ra;
		uint16_t lp, rp, et;
		const struct rtn_rule *m;

		memcpy(&la, data, 4);
		memcpy(&ra, data + 4, 4);
		memcpy(&lp, data + 8, 2);
		memcpy(&rp, data + 10, 2);
		et = lp;
		m = rtn_rules_match_udp(&a, la, lp, rp & 1, ra, rp);
		check(!m || (m >= a.r && m < a.r + a.n && m->proto == RTN_RULE_UDP), "udp match");
		m = rtn_rules_match_packet(&a, et);
		check(!m || (m >= a.r && m < a.r + a.n && m->proto == RTN_RULE_PACKET),
		      "packet match");
	}
	free(text);
	return 0;
}
