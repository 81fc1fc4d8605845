/* SPDX-License-Identifier: MIT */
/* The plugin's journal of failed comms, as the health check reads it (doctor_journal.c). */
#ifndef RN_DOCTOR_JOURNAL_H
#define RN_DOCTOR_JOURNAL_H

#include <stddef.h>

#define RN_JOURNAL_HITS 64 /* records kept a scan (the newest replace the last when full) */

/* A recent record that puts a node at fault. */
struct rn_journal_hit {
	char cause[48];      /* the verdict catalogue id */
	char node[64];       /* the node at fault (a short host name) */
	char seen_from[160]; /* "<host> <ibdev:port>" of the comm that failed */
	int peer;            /* the node is the failed comm's peer, not the host that wrote it */
	long long time;
};

struct rn_journal {
	long long since; /* records at or after this time (unix s) count */
	int records;     /* lines read */
	int n;
	struct rn_journal_hit hit[RN_JOURNAL_HITS];
};

/* The records of @dir's journal (and its rotated half) from the last @window_s seconds. */
void rn_journal_scan(const char *dir, long long window_s, struct rn_journal *j);
/* The newest hit on this host (@peer 0) or on a peer (@peer 1, of @node when not NULL). */
const struct rn_journal_hit *rn_journal_latest(const struct rn_journal *j, int peer,
					       const char *node);
/* The journal's records per NIC and cause (roce-doctor --prometheus). */
struct rn_journal_count {
	char ibdev[64], netdev[64], cause[48];
	int port;
	long long n, last; /* records, and the newest one's time (unix s) */
};

/* Fill @out (room for @max) from @dir's journal and its rotated half; how many filled. */
int rn_journal_counts(const char *dir, struct rn_journal_count *out, int max);
/* A drain reason for @h: "roce: <cause> seen from <host> <nic> <age>s ago (journal <path>)". */
void rn_journal_reason(const struct rn_journal_hit *h, char *buf, size_t len);

#endif /* RN_DOCTOR_JOURNAL_H */
