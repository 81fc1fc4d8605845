/* SPDX-License-Identifier: MIT */
/*
 * The one clock: CLOCK_MONOTONIC, for deadlines, watchdogs and timings. Its own
 * header so that files sharing nothing else (conn.c, xfer.c, conncheck.c, host.c) do
 * not include each other's headers for it.
 */
#ifndef RN_CLOCK_H
#define RN_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t rn_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline double rn_now_ms(void)
{
	return (double)rn_now_ns() / 1e6;
}

#endif /* RN_CLOCK_H */
