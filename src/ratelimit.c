// SPDX-License-Identifier: MIT
/* Once-per-peer-per-period logging: see rn_ratelimit.h. */
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>

#include "rn_ratelimit.h"

struct rl_entry {
	int family;        /* 0: free */
	int kind;          /* what is said about the peer (rn_ratelimit_peer_kind) */
	uint8_t ip[16];
	uint64_t last_ns;  /* when a message was last let through */
	unsigned int held; /* messages held back since */
};

static pthread_mutex_t rl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rl_entry rl_tab[RN_RATELIMIT_PEERS];

static int ip_of(const struct sockaddr_storage *ss, uint8_t ip[16])
{
	memset(ip, 0, 16);
	if (ss->ss_family == AF_INET) {
		memcpy(ip, &((const struct sockaddr_in *)ss)->sin_addr, 4);
		return AF_INET;
	}
	if (ss->ss_family == AF_INET6) {
		memcpy(ip, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
		return AF_INET6;
	}
	return AF_UNSPEC; /* no address (getpeername failed): all such peers share one entry */
}

int rn_ratelimit_peer(const struct sockaddr_storage *peer, uint64_t now_ns, uint64_t period_ns,
		      unsigned int *suppressed)
{
	return rn_ratelimit_peer_kind(peer, 0, now_ns, period_ns, suppressed);
}

int rn_ratelimit_peer_kind(const struct sockaddr_storage *peer, int kind, uint64_t now_ns,
			   uint64_t period_ns, unsigned int *suppressed)
{
	struct rl_entry *e = NULL, *lru = &rl_tab[0];
	uint8_t ip[16];
	int fam = ip_of(peer, ip) + 1; /* +1: 0 marks a free entry */
	int i, ok;

	pthread_mutex_lock(&rl_lock);
	for (i = 0; i < RN_RATELIMIT_PEERS; i++) {
		struct rl_entry *t = &rl_tab[i];

		if (t->family == fam && t->kind == kind && !memcmp(t->ip, ip, 16)) {
			e = t;
			break;
		}
		if (!t->family || (lru->family && t->last_ns < lru->last_ns))
			lru = t;
	}
	if (!e) {
		/* a new peer takes a free entry, else the one warned about longest ago */
		e = lru;
		e->family = fam;
		e->kind = kind;
		memcpy(e->ip, ip, 16);
		e->held = 0;
		e->last_ns = 0;
		ok = 1;
	} else {
		ok = now_ns - e->last_ns >= period_ns;
	}
	if (ok) {
		*suppressed = e->held;
		e->held = 0;
		e->last_ns = now_ns;
	} else {
		e->held++;
		*suppressed = e->held;
	}
	pthread_mutex_unlock(&rl_lock);
	return ok;
}

void rn_ratelimit_reset(void)
{
	pthread_mutex_lock(&rl_lock);
	memset(rl_tab, 0, sizeof(rl_tab));
	pthread_mutex_unlock(&rl_lock);
}
