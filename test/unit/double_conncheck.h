/* SPDX-License-Identifier: MIT */
/*
 * Scripted route awareness for transport tests: the per-connection verdict
 * (rn_conn_check_*) and the diagnosis (rn_diagnose_peer), per local NIC name.
 * A NIC without a script passes its checks. Definitions in double_conncheck.c, which a
 * test #includes once.
 */
#ifndef DOUBLE_CONNCHECK_H
#define DOUBLE_CONNCHECK_H

#include "rn_path.h"

struct fake_path_script {
	int start_ret;    /* rn_conn_check_start's answer */
	int eagain_polls; /* -EAGAIN this many times first */
	int poll_ret;     /* then this (0, -EHOSTUNREACH, -errno) */
	struct rn_finding finding;
	int diag_ret;     /* rn_diagnose_peer's answer */
	struct rn_finding diag;
};

/* Script the checks run from NIC @ibdev (NULL clears every script). */
void fake_path_set(const char *ibdev, const struct fake_path_script *s);
/* Checks started / diagnoses asked since the last fake_path_set(NULL, NULL). */
int fake_path_checks(void);
int fake_path_diagnoses(void);
/* The peer facts the last check was started with. */
const struct rn_peer_facts *fake_path_last_peer(void);

#endif /* DOUBLE_CONNCHECK_H */
