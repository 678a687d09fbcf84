/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdarg.h>
#include <stdio.h>
#include "rtn_core.h"

#ifndef RTN_VERSION
#error "RTN_VERSION must be defined by the build"
#endif

static __thread char last_error[256];

const char *rtn_version(void)
{
	return RTN_VERSION;
}

const char *rtn_last_error(void)
{
	return last_error;
}

void rtn_clear_error(void)
{
	last_error[0] = '\0';
}

int rtn_set_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	return err;
}
