// SPDX-License-Identifier: GPL-2.0-or-later
/**
 * @file rtn_rules.c
 * @brief The rules of rtn_rules.h: a parser for text a user wrote (so every
 *        word is checked and a bad one named) and the first-match lookups.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "rtn_chan.h"
#include "rtn_rules.h"

#define WORDS_MAX 8
#define WORD_MAX  64

struct line_ctx {
	const char *origin;
	int line;
	char *err;
	size_t errcap;
};

static int fail(struct line_ctx *c, const char *fmt, const char *word)
{
	char what[WORD_MAX + 64];

	snprintf(what, sizeof(what), fmt, word);
	snprintf(c->err, c->errcap, "%s line %d: %s", c->origin, c->line, what);
	return -1;
}

/* What may follow a rule's addresses: a name and a number in its range. */
enum option_kind { OPT_PRIO, OPT_SLOT, OPT_LIFETIME };

struct option {
	const char *name;
	enum option_kind kind;
	long lo, hi;
	const char *says; /* the error for a number outside it */
};

static const struct option options[] = {
	{ "prio", OPT_PRIO, 0, 31, "prio '%s' is not 0..31" },
	{ "slot", OPT_SLOT, 0, 63, "slot '%s' is not 0..63" },
	{ "lifetime", OPT_LIFETIME, 1, RTN_CHAN_LIFETIME_MAX_NS / 1000,
	  "lifetime '%s' is not 1..10000000 us" },
};

_Static_assert(RTN_CHAN_LIFETIME_MAX_NS == 10000000000LL, "the lifetime error's range");

static const struct option *option_named(const char *w)
{
	size_t i;

	for (i = 0; i < sizeof(options) / sizeof(options[0]); i++)
		if (!strcmp(w, options[i].name))
			return &options[i];
	return NULL;
}

/* A decimal or 0x number within lo..hi; the whole word must be the number. */
static int number(const char *w, long lo, long hi, long *out)
{
	char *end;
	long v;

	if (!*w || *w == '-' || *w == '+')
		return -1;
	errno = 0;
	v = strtol(w, &end, 0);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int ipv4(const char *w, uint32_t *out)
{
	unsigned a[4];
	char tail;
	int i;

	if (sscanf(w, "%3u.%3u.%3u.%3u%c", &a[0], &a[1], &a[2], &a[3], &tail) != 4)
		return -1;
	for (i = 0; i < 4; i++)
		if (a[i] > 255)
			return -1;
	/* sscanf's %u takes a sign and spaces: only digits and dots are an address */
	for (; *w; w++)
		if (!isdigit((unsigned char)*w) && *w != '.')
			return -1;
	*out = a[0] << 24 | a[1] << 16 | a[2] << 8 | a[3];
	return 0;
}

/* '*', ADDRESS[/PREFIX][:PORT|:*] or *:PORT */
static int endpoint(struct line_ctx *c, const char *w, uint32_t *addr, uint32_t *mask,
		    int32_t *port)
{
	char buf[WORD_MAX], *colon, *slash;
	long v;

	*addr = *mask = 0;
	*port = -1;
	if (strlen(w) >= sizeof(buf))
		return fail(c, "'%s' is too long for an address", w);
	strcpy(buf, w);
	colon = strchr(buf, ':');
	if (colon) {
		*colon++ = 0;
		if (strcmp(colon, "*") != 0) {
			if (number(colon, 1, 65535, &v))
				return fail(c, "'%s': the port is not 1..65535 or *", w);
			*port = (int32_t)v;
		}
	}
	if (!strcmp(buf, "*"))
		return 0;
	slash = strchr(buf, '/');
	v = 32;
	if (slash) {
		*slash++ = 0;
		if (number(slash, 0, 32, &v))
			return fail(c, "'%s': the prefix is not 0..32", w);
	}
	if (ipv4(buf, addr))
		return fail(c, "'%s' is not * or an IPv4 address[/prefix][:port]", w);
	*mask = v ? 0xffffffffu << (32 - v) : 0;
	*addr &= *mask;
	return 0;
}

/* Split @p s (NUL-terminated, modified) into words; -1 for too many. */
static int split(char *s, char **words)
{
	int n = 0;

	for (;;) {
		while (*s == ' ' || *s == '\t' || *s == '\r')
			s++;
		if (!*s)
			return n;
		if (n == WORDS_MAX)
			return -1;
		words[n++] = s;
		while (*s && *s != ' ' && *s != '\t' && *s != '\r')
			s++;
		if (*s)
			*s++ = 0;
	}
}

static int parse_line(struct line_ctx *c, char *s, struct rtn_rule *r, int *got)
{
	char *w[WORDS_MAX], *hash = strchr(s, '#');
	int n, i;
	long v;

	*got = 0;
	if (hash)
		*hash = 0;
	n = split(s, w);
	if (n < 0)
		return fail(c, "%stoo many words", "");
	if (n == 0)
		return 0;
	for (i = 0; i < n; i++)
		if (strlen(w[i]) >= WORD_MAX)
			return fail(c, "a word of more than %s characters", "63");
	memset(r, 0, sizeof(*r));
	r->prio = r->slot = r->ethertype = r->l_port = r->r_port = -1;
	r->line = c->line;
	if (!strcmp(w[0], "rt"))
		r->action = RTN_RULE_RT;
	else if (!strcmp(w[0], "os"))
		r->action = RTN_RULE_OS;
	else
		return fail(c, "'%s': a rule starts with rt or os", w[0]);
	if (n < 2)
		return fail(c, "%sno protocol (udp or packet)", "");
	if (!strcmp(w[1], "udp")) {
		r->proto = RTN_RULE_UDP;
		if (n < 4)
			return fail(c, "%sudp takes LOCAL and REMOTE ('*' for any)", "");
		if (endpoint(c, w[2], &r->l_addr, &r->l_mask, &r->l_port) ||
		    endpoint(c, w[3], &r->r_addr, &r->r_mask, &r->r_port))
			return -1;
		i = 4;
	} else if (!strcmp(w[1], "packet")) {
		r->proto = RTN_RULE_PACKET;
		if (n < 3)
			return fail(c, "%spacket takes an EtherType ('*' for any)", "");
		if (strcmp(w[2], "*") != 0) {
			if (number(w[2], 0x0600, 0xffff, &v))
				return fail(c, "'%s' is not an EtherType 0x0600..0xffff or *",
					    w[2]);
			r->ethertype = (int32_t)v;
		}
		i = 3;
	} else {
		return fail(c, "'%s': the protocol is udp or packet", w[1]);
	}
	for (; i < n; i += 2) {
		const struct option *o = option_named(w[i]);

		if (!o)
			return fail(c, "'%s': only prio N, slot N and lifetime US may follow",
				    w[i]);
		if (i + 1 >= n)
			return fail(c, "'%s' without its number", w[i]);
		if (number(w[i + 1], o->lo, o->hi, &v))
			return fail(c, o->says, w[i + 1]);
		switch (o->kind) {
		case OPT_PRIO:
			r->prio = (int32_t)v;
			break;
		case OPT_SLOT:
			r->slot = (int32_t)v;
			break;
		case OPT_LIFETIME:
			r->lifetime_ns = (int64_t)v * 1000;
			break;
		}
	}
	*got = 1;
	return 0;
}

int rtn_rules_parse(const char *text, const char *origin, struct rtn_rules *out, char *err,
		    size_t errcap)
{
	struct line_ctx c = { .origin = origin, .line = 1, .err = err, .errcap = errcap };
	char buf[512];
	int n0 = out->n, next_line = 1;

	if (errcap)
		err[0] = 0;
	while (*text) {
		/* a rule ends at ';' or the line's end; a comment runs to the line's end */
		size_t len = strcspn(text, ";#\n");
		struct rtn_rule r;
		int got;

		c.line = next_line;
		if (len >= sizeof(buf)) {
			out->n = n0;
			return fail(&c, "%sa line longer than 511 characters", "");
		}
		memcpy(buf, text, len);
		buf[len] = 0;
		text += len;
		if (*text == '#')
			text += strcspn(text, "\n");
		if (*text == '\n')
			next_line++;
		if (*text)
			text++;
		if (parse_line(&c, buf, &r, &got)) {
			out->n = n0;
			return -1;
		}
		if (!got)
			continue;
		if (out->n == RTN_RULES_MAX) {
			out->n = n0;
			return fail(&c, "more than %s rules", "64");
		}
		out->r[out->n++] = r;
	}
	return 0;
}

const struct rtn_rule *rtn_rules_match_udp(const struct rtn_rules *rs, uint32_t laddr,
					   uint16_t lport, int have_remote, uint32_t raddr,
					   uint16_t rport)
{
	int i;

	for (i = 0; i < rs->n; i++) {
		const struct rtn_rule *r = &rs->r[i];

		if (r->proto != RTN_RULE_UDP)
			continue;
		if ((laddr & r->l_mask) != r->l_addr)
			continue;
		if (r->l_port >= 0 && r->l_port != lport)
			continue;
		if (!have_remote && (r->r_mask || r->r_port >= 0))
			continue;
		if (have_remote &&
		    ((raddr & r->r_mask) != r->r_addr || (r->r_port >= 0 && r->r_port != rport)))
			continue;
		return r;
	}
	return NULL;
}

const struct rtn_rule *rtn_rules_match_packet(const struct rtn_rules *rs, uint16_t ethertype)
{
	int i;

	for (i = 0; i < rs->n; i++) {
		const struct rtn_rule *r = &rs->r[i];

		if (r->proto == RTN_RULE_PACKET && (r->ethertype < 0 || r->ethertype == ethertype))
			return r;
	}
	return NULL;
}
