// SPDX-License-Identifier: MIT
/*
 * rn-connstorm: N connections at once to one listener, through the transport the
 * plugin runs (rn_listen / rn_connect / rn_accept on the real devices, called again
 * until done, as NCCL does). For the listener flood test on the Soft-RoCE bed
 * (test/vm/plugin_flood.t); linked with the core like the netns tools.
 *
 *   rn-connstorm server DEV N TIMEOUT_S [LINGER_S]
 *                                         listen on device DEV, print "handle HEX" and
 *                                         "listening ADDR:PORT", accept N connections, then
 *                                         go on calling accept until LINGER_S from the start
 *   rn-connstorm client DEV N TIMEOUT_S HEX
 *                                         connect N times to that handle at once
 * Both print "done N in S s" and exit 0 when all N came up, 1 otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rn_dev.h"
#include "rn_net.h"
#include "rn_wire.h"

#define MAXN 256

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static unsigned char h[MAXN][RN_HANDLE_SIZE];
	static void *comms[MAXN];
	struct rn_listen_comm *lc = NULL;
	struct rn_engine *eng;
	int dev, n, up = 0, i, ret = 0, server;
	double tmo, t0, linger = 0;
	char a[80];

	if (argc < 5 || (strcmp(argv[1], "server") && (strcmp(argv[1], "client") || argc < 6))) {
		fprintf(stderr, "usage: rn-connstorm server DEV N TIMEOUT_S | client DEV N TIMEOUT_S HEX\n");
		return 2;
	}
	server = !strcmp(argv[1], "server");
	dev = atoi(argv[2]);
	n = atoi(argv[3]);
	tmo = atof(argv[4]);
	if (server && argc > 5)
		linger = atof(argv[5]);
	if (n < 1 || n > MAXN)
		return 2;
	ret = rn_engine_get(&eng);
	if (ret || dev >= eng->ndevs) {
		fprintf(stderr, "rn-connstorm: no device %d (%s)\n", dev, strerror(-ret));
		return 1;
	}
	if (server) {
		struct rn_handle_info hi;

		ret = rn_listen(eng, dev, h[0], &lc);
		if (ret || rn_handle_decode(h[0], RN_HANDLE_SIZE, &hi)) {
			fprintf(stderr, "rn-connstorm: listen: %s\n", strerror(-ret));
			return 1;
		}
		printf("handle ");
		for (i = 0; i < RN_HANDLE_PUBLIC; i++)
			printf("%02x", h[0][i]);
		printf("\nlistening %s\n", rn_sockaddr_str(&hi.addr, a, sizeof(a)));
	} else {
		const char *hex = argv[5];

		if (strlen(hex) != 2 * RN_HANDLE_PUBLIC)
			return 2;
		for (i = 0; i < RN_HANDLE_PUBLIC; i++)
			sscanf(hex + 2 * i, "%2hhx", &h[0][i]);
		for (i = 1; i < n; i++)
			memcpy(h[i], h[0], RN_HANDLE_SIZE);
	}
	fflush(stdout);
	t0 = now_s();
	while (up < n && now_s() - t0 < tmo) {
		if (server) {
			struct rn_recv_comm *rc = NULL;

			ret = rn_accept(lc, &rc);
			if (ret) {
				fprintf(stderr, "rn-connstorm: accept: %s\n", strerror(-ret));
				break;
			}
			if (rc)
				comms[up++] = rc;
			continue;
		}
		for (i = 0; i < n; i++) {
			struct rn_send_comm *sc = NULL;

			if (comms[i])
				continue;
			ret = rn_connect(eng, dev, h[i], -1, &sc);
			if (ret) {
				fprintf(stderr, "rn-connstorm: connect %d: %s\n", i, strerror(-ret));
				goto out;
			}
			if (sc) {
				comms[i] = sc;
				up++;
			}
		}
	}
out:
	printf("done %d of %d in %.3f s\n", up, n, now_s() - t0);
	fflush(stdout);
	/* the listener stays (and keeps dropping strangers) while the flood goes on */
	while (server && up == n && now_s() - t0 < linger) {
		struct rn_recv_comm *rc = NULL;

		if (rn_accept(lc, &rc) || rc) {
			fprintf(stderr, "rn-connstorm: an unexpected connection while lingering\n");
			rn_close_recv(rc);
			up = -1;
		}
		nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
	}
	for (i = 0; i < MAXN; i++)
		if (comms[i]) {
			if (server)
				rn_close_recv(comms[i]);
			else
				rn_close_send(comms[i]);
		}
	if (lc)
		rn_close_listen(lc);
	rn_engine_put();
	return up == n ? 0 : 1;
}
