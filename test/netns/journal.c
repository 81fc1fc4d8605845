// SPDX-License-Identifier: MIT
/*
 * rn-journal: append one record to a host's journal of failed comms through the plugin's
 * own writer (src/errlog.c), as the plugin does when it fails a comm; for the tests of its
 * readers (roce-doctor health).
 *   rn-journal DIR CAUSE STATUS IBDEV:PORT NETDEV PEER_HOST [PEER_NETDEV]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_errlog.h"

int main(int argc, char **argv)
{
	struct rn_errlog_rec r = { 0 };
	char ibdev[64];
	int ret;

	if (argc < 7 || sscanf(argv[4], "%63[^:]:%d", ibdev, &r.port) != 2) {
		fprintf(stderr, "usage: rn-journal DIR CAUSE STATUS IBDEV:PORT NETDEV PEER_HOST "
			"[PEER_NETDEV]\n");
		return 2;
	}
	r.cause = argv[2];
	r.status = argv[3];
	r.ibdev = ibdev;
	r.netdev = argv[5];
	r.peer_host = argv[6];
	r.peer_netdev = argc > 7 ? argv[7] : NULL;
	ret = rn_errlog_add(argv[1], &r);
	if (ret) {
		fprintf(stderr, "rn-journal: %s: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	return 0;
}
