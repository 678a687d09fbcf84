/* SPDX-License-Identifier: GPL-2.0-or-later */
/**
 * @file rtnet_app.h
 * @brief The one header a C real-time application includes: channels
 *        (rtn_app.h) and the cyclic task helper (rtn_cyclic.h).
 *
 * Build: make -C csrc app, then compile with -Icsrc and link
 * csrc/librtnet_app.a -lpthread (see examples/rt_publisher.c).
 */
#ifndef RTNET_APP_H
#define RTNET_APP_H

#include "rtn_core.h"
#include "rtn_app.h"
#include "rtn_cyclic.h"

#endif
