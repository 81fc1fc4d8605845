// SPDX-License-Identifier: MIT
/*
 * `roce-doctor mesh`: the long-running agent, one per host. Four threads:
 *
 *   serve     the doctor's own `serve` (doctor_serve.c, its bounds and queue): peers' pair
 *             checks against this host are answered as `peer` is answered;
 *   checkers  two, one for the peers that answered their last check and one for the others
 *             (so absent hosts' connect timeouts delay no present host's check), each one
 *             peer at a time when it is due (every --check-interval; a failing one backs
 *             off): the pair engine's A end (rn_pair_run_a, as `peer` without the RDMA ping)
 *             against the peer's agent, which gives the peer's NICs (name, address, link)
 *             and each NIC pair's route/neighbour/ARP/MTU cause (the second scouts first:
 *             one connection to every due peer of its kind at once, see scout()); the first
 *             re-reads the host list too (a file, or a command such as `scontrol show
 *             hostnames`), never the prober;
 *   prober    (the caller's) never blocks: one UDP socket per local NIC, bound to the NIC's
 *             address (so its datagrams take the NIC's policy rule and ARP entry, as RoCE v2's
 *             UDP does), answers peers' probes (a capped rate) and sends its own: each NIC
 *             pair at most once per --interval, the host at most --rate a second, in rotation
 *             (rn_mesh_sched_pick); each probe expires after RN_MESH_PROBE_MS. It also serves
 *             the metrics (a bounded table of HTTP connections, each with a deadline) and
 *             writes them to the textfile directory.
 *
 * Bounds: the host list (--max-hosts), RN_MESH_NICS NICs a host, so a fixed few KB a peer;
 * two pair checks at a time (each by its deadlines); probes by rate and by one outstanding a
 * pair; answers by --echo-rate; HTTP by MESH_HTTP connections of MESH_HTTP_MS each. A peer
 * that lies (a forged or replayed answer) matches no outstanding probe (a random nonce, the
 * NIC pair's index and the address it must come from) and is counted, never believed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "doctor_mesh.h"
#include "doctor_pair.h"
#include "doctor_result.h"
#include "rn_log.h"

#define PROG "roce-doctor mesh"
#define MESH_PROBE_PORT 18516
#define RN_MESH_PROBE_MS 1000 /* a probe's answer by then, or it is lost */
#define MESH_TICK_MS 50
#define MESH_HTTP 16          /* metrics connections at once */
#define MESH_HTTP_MS 3000     /* each, whole */
#define MESH_HTTP_REQ 4096
#define MESH_LINE 512
#define MESH_MAGIC 0x524e4d50u /* "RNMP" */
#define MESH_REQ 1
#define MESH_ANS 2
#define MESH_PKT 24
#define MESH_HREQ 3                /* the RC listener's handle of the NIC it comes to, please */
#define MESH_HANS 4                /* here it is: MESH_PKT + RN_MESH_RC_HANDLE bytes */
#define MESH_HNONE 5               /* that NIC has no RC listener (no RDMA port, or --no-rc) */
#define MESH_HANDLE_ASK_MS 2000    /* a handle not come: asked again after */
#define MESH_HANDLE_FRESH_MS 30000 /* a handle's age when asked again (a restarted agent) */
#define MESH_CHECK_RUN_MS 30000    /* one pair check, whole */
#define MESH_CONNECT_MS 3000
#define MESH_SCOUT 64              /* connections a scout tries at once */

struct mopts {
	const char *hosts, *hosts_cmd, *netdevs, *listen, *metrics, *textdir, *group;
	int port, probe_port, rate, echo_rate, interval_ms, check_s, reload_s, max_hosts;
	int duration_s, verbose;
	int rc_rate, rc_qps, no_rc;
};

/* One NIC pair: ours (row) to the peer's (column). */
struct mpair {
	struct rn_mesh_win win;
	double last_ms; /* the last probe's send time */
	double sent_ms; /* the outstanding one's, 0: none */
	double base_us; /* RTT baseline: a moving average of answers, 0: none yet */
	uint32_t nonce;
};

struct mpeer {
	char addr[256]; /* the list's: where its agent listens */
	char group[64];
	int self;
	/* the checker's (under the lock) */
	int known, reach;
	int fails;         /* checks failed in a row: the next waits longer */
	double scouted_ms; /* its agent's port last took a connection (scout) */
	double next_ms;    /* when it is checked next (0: as soon as may be) */
	char host[64];
	int nnics;
	char netdev[RN_MESH_NICS][16];
	struct sockaddr_storage ip[RN_MESH_NICS];
	int link_up[RN_MESH_NICS];
	uint16_t cause[RN_MESH_NICS][RN_MESH_NICS]; /* the checks', [ours][theirs] */
	/* the prober's */
	struct mpair p[RN_MESH_NICS][RN_MESH_NICS];
	/* the peer NICs' RC listener handles (the prober's), asked for over UDP */
	uint8_t rch[RN_MESH_NICS][RN_MESH_RC_HANDLE];
	double rch_ms[RN_MESH_NICS]; /* when it came, 0: none */
	double rch_asked[RN_MESH_NICS];
	uint32_t rch_nonce[RN_MESH_NICS];
	uint8_t rc_none[RN_MESH_NICS]; /* it said it has none */
	/* the RC thread's */
	struct mpair rc[RN_MESH_NICS][RN_MESH_NICS];
};

struct mhttp {
	int fd; /* -1: free */
	double by;
	size_t got, sent, len;
	char req[MESH_HTTP_REQ];
	char *out;
};

struct mesh {
	struct mopts o;
	pthread_mutex_t lock; /* the peers, the counters */
	volatile sig_atomic_t *stop;
	struct mpeer *peers;
	int npeers;
	char host[64], group[64];
	/* our NICs, from the prober's gather at start */
	int nnics;
	char netdev[RN_MESH_NICS][16];
	struct sockaddr_storage ip[RN_MESH_NICS];
	int link_up[RN_MESH_NICS];
	int ufd[RN_MESH_NICS];
	struct rn_mesh_bucket send_b, echo_b;
	struct rn_mesh_sched sched;
	struct rn_mesh_self self;
	int lfd;    /* metrics, -1 none */
	struct mhttp http[MESH_HTTP];
	double now; /* the prober's tick */
	/* the RC probes (doctor_mesh_rc.c), NULL: none here (UDP only) */
	struct rn_mesh_rc *rc;
	uint8_t rc_handle[RN_MESH_NICS][RN_MESH_RC_HANDLE];
	int rc_ok[RN_MESH_NICS];
	struct rn_mesh_bucket rc_b;
	struct rn_mesh_sched rc_sched;
	double rc_now;
};

static volatile sig_atomic_t mesh_stop;

static void on_signal(int sig)
{
	(void)sig;
	mesh_stop = 1;
}

static void mlog(const char *fmt, ...) __rn_printf(1, 2);
static void mlog(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, PROG ": %s\n", msg);
}

/* ---- the host list ------------------------------------------------------------------- */

/* 1 when @addr is one of this host's addresses (a bind to it works) or its name. */
static int is_self(const char *addr, const char *hostname)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICHOST }, *res;
	int fd, self = 0;

	if (!strcmp(addr, hostname))
		return 1;
	if (getaddrinfo(addr, NULL, &hints, &res))
		return 0;
	fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		self = !bind(fd, res->ai_addr, res->ai_addrlen);
		close(fd);
	}
	freeaddrinfo(res);
	return self;
}

/*
 * One line of the list: "ADDRESS [GROUP]" ('#' starts a comment). 0 with @p filled, 1 for
 * a line with nothing on it, -EINVAL with @why.
 */
static int parse_host_line(char *line, struct mpeer *p, char *why, size_t len)
{
	char *tok[3], *save = NULL, *s;
	int n = 0;
	size_t i;

	line[strcspn(line, "#\r\n")] = 0;
	for (s = strtok_r(line, " \t", &save); s && n < 3; s = strtok_r(NULL, " \t", &save))
		tok[n++] = s;
	if (!n)
		return 1;
	if (n > 2) {
		snprintf(why, len, "'%.40s': more than an address and a group", tok[2]);
		return -EINVAL;
	}
	if (strlen(tok[0]) >= sizeof(p->addr) || (n == 2 && strlen(tok[1]) >= sizeof(p->group))) {
		snprintf(why, len, "too long a name");
		return -EINVAL;
	}
	for (i = 0; tok[0][i]; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_:",
			    tok[0][i])) {
			snprintf(why, len, "'%.60s' is not a host name or an address", tok[0]);
			return -EINVAL;
		}
	memset(p, 0, sizeof(*p));
	snprintf(p->addr, sizeof(p->addr), "%s", tok[0]);
	snprintf(p->group, sizeof(p->group), "%s", n == 2 ? tok[1] : "all");
	return 0;
}

/* The list from --hosts or --hosts-cmd into a new array (*@out, *@n). 0 or -errno (@why). */
static int read_hosts(const struct mopts *o, struct mpeer **out, int *n, char *why, size_t len)
{
	FILE *f = o->hosts ? fopen(o->hosts, "re") : popen(o->hosts_cmd, "re");
	struct mpeer *v = NULL;
	char line[MESH_LINE];
	int k = 0, lineno = 0, ret = 0;

	if (!f) {
		snprintf(why, len, "%s: %s", o->hosts ? o->hosts : o->hosts_cmd, strerror(errno));
		return -errno;
	}
	v = calloc((size_t)o->max_hosts, sizeof(*v));
	if (!v)
		ret = -ENOMEM;
	while (!ret && fgets(line, sizeof(line), f)) {
		char w[160];
		int r;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			snprintf(why, len, "line %d: longer than %d bytes", lineno, MESH_LINE - 2);
			ret = -EINVAL;
			break;
		}
		if (k == o->max_hosts) {
			snprintf(why, len, "more than --max-hosts %d hosts", o->max_hosts);
			ret = -E2BIG;
			break;
		}
		r = parse_host_line(line, &v[k], w, sizeof(w));
		if (r < 0) {
			snprintf(why, len, "line %d: %s", lineno, w);
			ret = r;
		} else if (!r) {
			k++;
		}
	}
	if (o->hosts)
		fclose(f);
	else if (pclose(f) && !ret) {
		snprintf(why, len, "'%s' failed", o->hosts_cmd);
		ret = -EIO;
	}
	if (ret) {
		free(v);
		return ret;
	}
	*out = v;
	*n = k;
	return 0;
}

/* The new list in place of the old: what was learnt of a host that stays, stays. */
static void merge_hosts(struct mesh *m, struct mpeer *v, int n)
{
	int i, k;

	for (i = 0; i < n; i++) {
		v[i].self = is_self(v[i].addr, m->host);
		if (v[i].self && !m->o.group)
			snprintf(m->group, sizeof(m->group), "%s", v[i].group);
	}
	pthread_mutex_lock(&m->lock);
	for (i = 0; i < n; i++)
		for (k = 0; k < m->npeers; k++)
			if (!strcmp(v[i].addr, m->peers[k].addr)) {
				char group[64];

				memcpy(group, v[i].group, sizeof(group));
				v[i] = m->peers[k];
				memcpy(v[i].group, group, sizeof(group));
				break;
			}
	free(m->peers);
	m->peers = v;
	m->npeers = n;
	for (i = 0, k = 0; i < n; i++)
		k += !v[i].self;
	m->self.peers = k;
	pthread_mutex_unlock(&m->lock);
}

/* ---- the checker --------------------------------------------------------------------- */

/* What one pair check learnt. */
struct check_out {
	char host[64];
	int nnics;
	char netdev[RN_MESH_NICS][16];
	struct sockaddr_storage ip[RN_MESH_NICS];
	int link_up[RN_MESH_NICS];
	uint16_t cause[RN_MESH_NICS][RN_MESH_NICS];
	int local_up[RN_MESH_NICS];
};

static void to_sockaddr(const struct rn_ip *ip, int port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (ip->family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		s->sin_addr = ip->v4;
		s->sin_port = htons((uint16_t)port);
	} else if (ip->family == AF_INET6) {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		s->sin6_family = AF_INET6;
		s->sin6_addr = ip->v6;
		s->sin6_port = htons((uint16_t)port);
	}
}

/* Our NIC @idx of the inventory we sent, as the prober's index (by netdev), -1 none. */
static int our_index(const struct mesh *m, const struct rn_dw_inv *local, int idx)
{
	int i;

	if (idx < 0 || idx >= local->nnics)
		return -1;
	for (i = 0; i < m->nnics; i++)
		if (!strcmp(m->netdev[i], local->nics[idx].netdev))
			return i;
	return -1;
}

/*
 * What the run found into @c: the peer's NICs, and each NIC pair's cause as the sweep judges
 * a cell (rn_pair_result_run, rn_pair_judge: the worse of the two sides' findings). 0 or
 * -ENOMEM.
 */
static int check_take(const struct mesh *m, const struct rn_pair_run *r, const char *addr,
		      struct check_out *c)
{
	struct rn_pair_result res = { .na = r->local->nnics, .nb = r->remote->nnics };
	int k, j, n = RN_MIN(r->remote->nnics, RN_MESH_NICS);

	res.cells = calloc((size_t)res.na * res.nb + 1, sizeof(*res.cells));
	if (!res.cells)
		return -ENOMEM;
	rn_pair_result_run(&res, r, addr);
	snprintf(c->host, sizeof(c->host), "%s", r->remote->host);
	c->nnics = n;
	for (j = 0; j < n; j++) {
		const struct rn_dw_nic *x = &r->remote->nics[j];

		snprintf(c->netdev[j], sizeof(c->netdev[j]), "%s", x->netdev);
		to_sockaddr(&x->ip, m->o.probe_port, &c->ip[j]);
		c->link_up[j] = x->link_up;
	}
	for (k = 0; k < r->local->nnics; k++) {
		int i = our_index(m, r->local, k);

		if (i < 0)
			continue;
		c->local_up[i] = r->local->nics[k].link_up;
		for (j = 0; j < n; j++) {
			int cause;
			enum rn_pair_judged v = rn_pair_judge(&res.cells[k * res.nb + j], &cause);

			if (v == RN_PAIR_BY_A || v == RN_PAIR_BY_B)
				c->cause[i][j] = (uint16_t)cause;
		}
	}
	rn_pair_result_clear(&res);
	return 0;
}

/* One pair check of the peer at @addr: the pair engine's A end. 0 or -errno (@why). */
static int check_peer(struct mesh *m, struct rn_doctor *d, const char *addr, struct check_out *c,
		      char *why, size_t len)
{
	struct rn_dw_inv *local = calloc(1, sizeof(*local)), *remote = calloc(1, sizeof(*remote));
	struct rn_pair_run *r = calloc(1, sizeof(*r));
	double end = rn_doctor_now_ms() + MESH_CHECK_RUN_MS;
	struct rn_dw_io io;
	int fd = -1, ret;

	if (!local || !remote || !r) {
		ret = -ENOMEM;
		snprintf(why, len, "out of memory");
		goto out;
	}
	/* the routes, rules and links of now, not of the agent's start */
	ret = rn_doctor_gather(d);
	if (!ret)
		ret = rn_dw_inv_from_doctor(d, local);
	if (ret) {
		snprintf(why, len, "cannot read this host's NICs: %s", strerror(-ret));
		goto out;
	}
	ret = rn_dw_connect(addr, m->o.port, rn_doctor_now_ms() + MESH_CONNECT_MS, &fd, why, len);
	if (ret)
		goto out;
	rn_dw_io_init(&io, fd, RN_DOCTOR_IO_TIMEOUT_S * 1000.0, end);
	r->d = d;
	r->io = &io.io;
	r->flags = RN_PAIR_INV | RN_PAIR_CHECKS;
	r->local = local;
	r->remote = remote;
	ret = rn_pair_run_a(r);
	if (ret)
		snprintf(why, len, "%s", r->why[0] ? r->why : strerror(-ret));
	else if ((ret = check_take(m, r, addr, c)))
		snprintf(why, len, "out of memory");
out:
	if (fd >= 0)
		close(fd);
	if (r)
		rn_pair_run_clear(r);
	if (local)
		rn_dw_inv_clear(local);
	if (remote)
		rn_dw_inv_clear(remote);
	free(r);
	free(local);
	free(remote);
	return ret;
}

/* When @p is checked next: an interval on, or later after failures (backoff). */
static void next_due(const struct mesh *m, struct mpeer *p, int ret)
{
	double s = m->o.check_s;

	p->fails = ret ? RN_MIN(p->fails + 1, 5) : 0;
	if (p->fails)
		s = RN_MIN(m->o.check_s * (double)(1 << (p->fails - 1)), 16.0 * m->o.check_s);
	p->next_ms = rn_doctor_now_ms() + s * 1000.0;
}

/* What a check learnt, into the peer the list still holds at @addr. */
static void check_store(struct mesh *m, const char *addr, int ret, const struct check_out *c)
{
	int k, i, j;

	pthread_mutex_lock(&m->lock);
	m->self.checks_run++;
	m->self.checks_failed += ret != 0;
	if (!ret)
		for (i = 0; i < m->nnics; i++)
			m->link_up[i] = c->local_up[i];
	for (k = 0; k < m->npeers; k++) {
		struct mpeer *p = &m->peers[k];

		if (strcmp(p->addr, addr))
			continue;
		p->reach = !ret;
		next_due(m, p, ret);
		if (ret)
			break;
		/* a NIC that moved to another place in the list starts its pairs afresh */
		for (j = 0; j < c->nnics; j++)
			if (p->known && (j >= p->nnics || strcmp(p->netdev[j], c->netdev[j])))
				for (i = 0; i < RN_MESH_NICS; i++)
					memset(&p->p[i][j], 0, sizeof(p->p[i][j]));
		/* a name of ours the list gave (an FQDN, an alias): no pairs with ourselves */
		if (!strcmp(c->host, m->host)) {
			p->self = 1;
			m->self.peers--;
			if (!m->o.group)
				snprintf(m->group, sizeof(m->group), "%s", p->group);
			break;
		}
		p->known = 1;
		snprintf(p->host, sizeof(p->host), "%s", c->host);
		p->nnics = c->nnics;
		memcpy(p->netdev, c->netdev, sizeof(p->netdev));
		memcpy(p->ip, c->ip, sizeof(p->ip));
		memcpy(p->link_up, c->link_up, sizeof(p->link_up));
		memcpy(p->cause, c->cause, sizeof(p->cause));
		break;
	}
	m->self.peers_reached = 0;
	for (k = 0; k < m->npeers; k++)
		m->self.peers_reached += m->peers[k].reach;
	pthread_mutex_unlock(&m->lock);
}

/*
 * The peer due first (its next_ms the smallest) of the peers that answered their last check
 * (@failing 0) or of the others (1: not yet checked, or failed), and how long until it is
 * due (*@wait_ms, 0: now). Each kind has a checker thread of its own, so the connections
 * that time out towards absent hosts never delay the checks of present ones; and a peer
 * that does not answer waits twice as long each time, up to 16 intervals.
 */
static int next_peer(struct mesh *m, int failing, char *addr, size_t len, double *wait_ms)
{
	int k, pick = -1;

	pthread_mutex_lock(&m->lock);
	for (k = 0; k < m->npeers; k++) {
		const struct mpeer *p = &m->peers[k];

		if (!p->self && (!p->known || p->fails) == failing &&
		    (pick < 0 || p->next_ms < m->peers[pick].next_ms))
			pick = k;
	}
	if (pick >= 0) {
		snprintf(addr, len, "%s", m->peers[pick].addr);
		*wait_ms = RN_MAX(0.0, m->peers[pick].next_ms - rn_doctor_now_ms());
	}
	pthread_mutex_unlock(&m->lock);
	return pick;
}

static void nap(const struct mesh *m, double ms)
{
	double until = rn_doctor_now_ms() + ms;

	while (!*m->stop && rn_doctor_now_ms() < until)
		usleep(100000);
}

struct checker {
	struct mesh *m;
	struct rn_doctor *d;
	int failing; /* checks the peers that did not answer, not the others */
};

/*
 * The failing checker's scout: the due peers of its kind (never reached, or failed) that
 * no scout reached lately, MESH_SCOUT at a time, each a non-blocking connection to its
 * agent's port, MESH_CONNECT_MS for all of them together. Those that take none fail their
 * check at once (backed off as any failure); those that do are checked next, whole. So a
 * list of absent hosts costs one connect timeout a round, not one per host.
 */
struct scout_one {
	char addr[256];
	int fd, err;
	int pending; /* connecting, no answer yet */
};

static int scout_pick(struct mesh *m, struct scout_one *w)
{
	double now = rn_doctor_now_ms();
	int k, n = 0;

	pthread_mutex_lock(&m->lock);
	for (k = 0; k < m->npeers && n < MESH_SCOUT; k++) {
		const struct mpeer *p = &m->peers[k];

		if (!p->self && (!p->known || p->fails) && p->next_ms <= now &&
		    now - p->scouted_ms > 2.0 * MESH_CONNECT_MS) {
			snprintf(w[n].addr, sizeof(w[n].addr), "%s", p->addr);
			w[n].fd = -1;
			w[n].err = ETIMEDOUT;
			n++;
		}
	}
	pthread_mutex_unlock(&m->lock);
	return n;
}

static void scout_connect(const struct mesh *m, struct scout_one *w)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV }, *res;
	char port[8];

	snprintf(port, sizeof(port), "%d", m->o.port);
	if (getaddrinfo(w->addr, port, &hints, &res)) {
		w->err = EHOSTUNREACH;
		return;
	}
	w->fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (w->fd < 0)
		w->err = errno;
	else if (!connect(w->fd, res->ai_addr, res->ai_addrlen))
		w->err = 0;
	else if (errno != EINPROGRESS)
		w->err = errno;
	else
		w->pending = 1;
	freeaddrinfo(res);
}

static void scout(struct mesh *m)
{
	struct scout_one *w = calloc(MESH_SCOUT, sizeof(*w));
	struct pollfd pfd[MESH_SCOUT];
	double end = rn_doctor_now_ms() + MESH_CONNECT_MS;
	int n = w ? scout_pick(m, w) : 0, k, left;

	for (k = 0; k < n; k++)
		scout_connect(m, &w[k]);
	do {
		double wait = end - rn_doctor_now_ms();

		for (k = 0, left = 0; k < n; k++) {
			pfd[k] = (struct pollfd){ .fd = w[k].pending ? w[k].fd : -1,
						  .events = POLLOUT };
			left += pfd[k].fd >= 0;
		}
		if (!left || wait <= 0 || *m->stop || poll(pfd, n, (int)wait + 1) < 0)
			break;
		for (k = 0; k < n; k++) {
			socklen_t l = sizeof(w[k].err);

			if (pfd[k].fd < 0 || !pfd[k].revents)
				continue;
			w[k].pending = 0;
			if (getsockopt(w[k].fd, SOL_SOCKET, SO_ERROR, &w[k].err, &l))
				w[k].err = errno;
		}
	} while (left);
	for (k = 0; k < n; k++) {
		if (w[k].fd >= 0)
			close(w[k].fd);
		if (w[k].err) {
			check_store(m, w[k].addr, -w[k].err, NULL);
		} else {
			pthread_mutex_lock(&m->lock);
			for (left = 0; left < m->npeers; left++)
				if (!strcmp(m->peers[left].addr, w[k].addr))
					m->peers[left].scouted_ms = rn_doctor_now_ms();
			pthread_mutex_unlock(&m->lock);
		}
	}
	free(w);
}

static void *checker(void *arg)
{
	struct checker *ck = arg;
	struct mesh *m = ck->m;
	double reload = rn_doctor_now_ms() + m->o.reload_s * 1000.0;

	while (!*m->stop) {
		struct check_out *c;
		char addr[256], why[RN_DW_WHY_MAX];
		double wait = 0;
		int ret;

		if (!ck->failing && rn_doctor_now_ms() >= reload) {
			struct mpeer *v;
			int n;

			reload = rn_doctor_now_ms() + m->o.reload_s * 1000.0;
			if (read_hosts(&m->o, &v, &n, why, sizeof(why)))
				mlog("host list not re-read (the old one kept): %s", why);
			else
				merge_hosts(m, v, n);
		}
		if (ck->failing)
			scout(m);
		if (next_peer(m, ck->failing, addr, sizeof(addr), &wait) < 0 || wait > 0) {
			nap(m, RN_MIN(wait ? wait : 1000, 1000));
			continue;
		}
		c = calloc(1, sizeof(*c));
		ret = c ? check_peer(m, ck->d, addr, c, why, sizeof(why)) : -ENOMEM;
		if (ret && m->o.verbose)
			mlog("pair check of %s: %s", addr, ret == -ENOMEM ? "out of memory" : why);
		check_store(m, addr, ret, c);
		free(c);
	}
	return NULL;
}

/* ---- the prober ---------------------------------------------------------------------- */

static void put32(uint8_t *b, uint32_t v)
{
	v = htonl(v);
	memcpy(b, &v, 4);
}

static uint32_t get32(const uint8_t *b)
{
	uint32_t v;

	memcpy(&v, b, 4);
	return ntohl(v);
}

#define PAIRS_PER_PEER (RN_MESH_NICS * RN_MESH_NICS)

static struct mpair *pair_at(struct mesh *m, int idx, struct mpeer **peer, int *i, int *j)
{
	struct mpeer *p = &m->peers[idx / PAIRS_PER_PEER];

	*i = idx % PAIRS_PER_PEER / RN_MESH_NICS;
	*j = idx % RN_MESH_NICS;
	*peer = p;
	return &p->p[*i][*j];
}

static int pair_ready(void *arg, int idx)
{
	struct mesh *m = arg;
	struct mpeer *p;
	int i, j;
	struct mpair *x = pair_at(m, idx, &p, &i, &j);

	return !p->self && p->known && i < m->nnics && j < p->nnics && !x->sent_ms &&
	       p->ip[j].ss_family == m->ip[i].ss_family && m->now - x->last_ms >= m->o.interval_ms;
}

static void send_probe(struct mesh *m, int idx)
{
	uint8_t b[MESH_PKT] = { 0 };
	struct mpeer *p;
	int i, j;
	struct mpair *x = pair_at(m, idx, &p, &i, &j);
	socklen_t sl = p->ip[j].ss_family == AF_INET ? sizeof(struct sockaddr_in) :
						       sizeof(struct sockaddr_in6);

	if (getrandom(&x->nonce, sizeof(x->nonce), GRND_NONBLOCK) != sizeof(x->nonce))
		x->nonce = (uint32_t)rand();
	put32(b, MESH_MAGIC);
	b[4] = 1;
	b[5] = MESH_REQ;
	put32(b + 8, (uint32_t)idx);
	put32(b + 12, x->nonce);
	x->last_ms = m->now;
	x->sent_ms = m->now;
	m->self.probes_sent++;
	/* a send that fails (no route, a full buffer) is a probe lost like any other */
	if (sendto(m->ufd[i], b, sizeof(b), MSG_DONTWAIT, (struct sockaddr *)&p->ip[j], sl) < 0)
		x->sent_ms = m->now - RN_MESH_PROBE_MS;
}

static socklen_t ss_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
}

/*
 * Ask each known peer NIC for its RC listener's handle, from our first NIC of its family
 * (the answer must come from that NIC's address with the nonce): when none came yet, every
 * MESH_HANDLE_ASK_MS, else every MESH_HANDLE_FRESH_MS (an agent that started again has
 * another listener) or after an RC ping to it failed. Each ask takes a token of the probes'
 * rate, so --rate bounds every datagram we send. Nothing when we cannot do RC ourselves.
 */
static void ask_handles(struct mesh *m)
{
	int k, i, j;

	if (!m->rc)
		return;
	for (k = 0; k < m->npeers; k++) {
		struct mpeer *p = &m->peers[k];

		if (p->self || !p->known)
			continue;
		for (j = 0; j < p->nnics; j++) {
			uint8_t b[MESH_PKT] = { 0 };

			if (m->now - p->rch_asked[j] < (p->rch_ms[j] || p->rc_none[j] ?
								MESH_HANDLE_FRESH_MS :
								MESH_HANDLE_ASK_MS))
				continue;
			for (i = 0; i < m->nnics; i++)
				if (m->ip[i].ss_family == p->ip[j].ss_family)
					break;
			if (i == m->nnics)
				continue;
			if (!rn_mesh_bucket_take(&m->send_b, m->now / 1000.0))
				return;
			if (getrandom(&p->rch_nonce[j], 4, GRND_NONBLOCK) != 4)
				p->rch_nonce[j] = (uint32_t)rand();
			put32(b, MESH_MAGIC);
			b[4] = 1;
			b[5] = MESH_HREQ;
			put32(b + 8, (uint32_t)(k * PAIRS_PER_PEER + i * RN_MESH_NICS + j));
			put32(b + 12, p->rch_nonce[j]);
			p->rch_asked[j] = m->now;
			sendto(m->ufd[i], b, sizeof(b), MSG_DONTWAIT, (struct sockaddr *)&p->ip[j],
			       ss_len(&p->ip[j]));
		}
	}
}

/* A handle answer (@r bytes) to one of ours: the NIC it names, its nonce, its address. */
static void take_handle(struct mesh *m, int nic, const uint8_t *b, ssize_t r,
			const struct sockaddr_storage *from)
{
	uint32_t idx = get32(b + 8);
	struct mpeer *p;
	int i, j;

	if (idx >= (uint32_t)(m->npeers * PAIRS_PER_PEER) ||
	    r != (b[5] == MESH_HANS ? MESH_PKT + RN_MESH_RC_HANDLE : MESH_PKT)) {
		m->self.bad_packets++;
		return;
	}
	pair_at(m, (int)idx, &p, &i, &j);
	if (i != nic || j >= p->nnics || !p->rch_asked[j] || get32(b + 12) != p->rch_nonce[j] ||
	    !rn_doctor_same_ip(from, &p->ip[j])) {
		m->self.bad_packets++;
		return;
	}
	p->rch_nonce[j] = 0; /* once: a replay is bad */
	p->rc_none[j] = b[5] == MESH_HNONE;
	p->rch_ms[j] = p->rc_none[j] ? 0 : m->now;
	if (!p->rc_none[j])
		memcpy(p->rch[j], b + MESH_PKT, RN_MESH_RC_HANDLE);
}

/* Lost: the probes whose deadline passed. Then the next ones, as the rate allows. */
static void tick(struct mesh *m)
{
	int n = m->npeers * PAIRS_PER_PEER, k, got, max = 0;
	int *pick;

	for (k = 0; k < n; k++) {
		struct mpeer *p;
		int i, j;
		struct mpair *x = pair_at(m, k, &p, &i, &j);

		if (x->sent_ms && m->now - x->sent_ms >= RN_MESH_PROBE_MS) {
			x->sent_ms = 0;
			rn_mesh_win_add(&x->win, RN_MESH_LOST);
		}
	}
	while (max < n && rn_mesh_bucket_take(&m->send_b, m->now / 1000.0))
		max++;
	if (max) {
		pick = malloc((size_t)max * sizeof(*pick));
		got = pick ? rn_mesh_sched_pick(&m->sched, n, pair_ready, m, max, pick) : 0;
		for (k = 0; k < got; k++)
			send_probe(m, pick[k]);
		/* the tokens not spent go back: an idle tick must not burn the rate */
		m->send_b.tokens = RN_MIN(m->send_b.burst, m->send_b.tokens + (max - got));
		free(pick);
	}
	/* the probes first: the handles' asks take what they left */
	ask_handles(m);
}

/* An answer to one of ours: the pair it names, its nonce, from the address it must. */
static void take_answer(struct mesh *m, int nic, const uint8_t *b,
			const struct sockaddr_storage *from)
{
	uint32_t idx = get32(b + 8);
	struct mpeer *p;
	struct mpair *x;
	double us;
	int i, j;

	if (idx >= (uint32_t)(m->npeers * PAIRS_PER_PEER)) {
		m->self.bad_packets++;
		return;
	}
	x = pair_at(m, (int)idx, &p, &i, &j);
	if (i != nic || !x->sent_ms || get32(b + 12) != x->nonce || j >= p->nnics ||
	    !rn_doctor_same_ip(from, &p->ip[j])) {
		m->self.bad_packets++;
		return;
	}
	us = RN_MIN((m->now - x->sent_ms) * 1000.0, 1e9);
	rn_mesh_win_add(&x->win, (uint32_t)us);
	/* the pair's usual RTT, which a loss does not move: localize's groups where none given */
	x->base_us = x->base_us ? 0.8 * x->base_us + 0.2 * us : us;
	x->sent_ms = 0;
}

/* What came on NIC @nic's socket: answer requests (capped), take answers; never blocks. */
static void drain(struct mesh *m, int nic)
{
	int k;

	/* a bounded batch: a flood on one NIC cannot starve the others or the clock */
	for (k = 0; k < 256; k++) {
		struct sockaddr_storage from;
		socklen_t fl = sizeof(from);
		uint8_t b[MESH_PKT + RN_MESH_RC_HANDLE + 8];
		ssize_t r = recvfrom(m->ufd[nic], b, sizeof(b), MSG_DONTWAIT,
				     (struct sockaddr *)&from, &fl);

		if (r < 0)
			return;
		if (r < MESH_PKT || get32(b) != MESH_MAGIC || b[4] != 1 ||
		    (r != MESH_PKT && b[5] != MESH_HANS)) {
			m->self.bad_packets++;
			continue;
		}
		if (b[5] == MESH_HANS || b[5] == MESH_HNONE) {
			take_handle(m, nic, b, r, &from);
		} else if (b[5] == MESH_HREQ) {
			size_t n = MESH_PKT;

			/* the answers' cap covers these too: a flood of asks costs no more */
			if (!rn_mesh_bucket_take(&m->echo_b, m->now / 1000.0)) {
				m->self.echoes_dropped++;
				continue;
			}
			b[5] = m->rc_ok[nic] ? MESH_HANS : MESH_HNONE;
			if (m->rc_ok[nic]) {
				memcpy(b + MESH_PKT, m->rc_handle[nic], RN_MESH_RC_HANDLE);
				n += RN_MESH_RC_HANDLE;
			}
			sendto(m->ufd[nic], b, n, MSG_DONTWAIT, (struct sockaddr *)&from, fl);
		} else if (b[5] == MESH_ANS) {
			take_answer(m, nic, b, &from);
		} else if (b[5] == MESH_REQ) {
			if (!rn_mesh_bucket_take(&m->echo_b, m->now / 1000.0)) {
				m->self.echoes_dropped++;
				continue;
			}
			b[5] = MESH_ANS;
			if (sendto(m->ufd[nic], b, MESH_PKT, MSG_DONTWAIT, (struct sockaddr *)&from,
				   fl) == MESH_PKT)
				m->self.echoes_sent++;
		} else {
			m->self.bad_packets++;
		}
	}
}

/* ---- the RC prober ------------------------------------------------------------------- */

/* Pair @idx of the ring may get an RC ping now (the caller holds the lock). */
static int rc_ready(void *arg, int idx)
{
	struct mesh *m = arg;
	struct mpeer *p;
	int i, j;

	pair_at(m, idx, &p, &i, &j);
	return !p->self && p->known && i < m->nnics && m->rc_ok[i] && j < p->nnics &&
	       p->rch_ms[j] && !p->rc[i][j].sent_ms && p->ip[j].ss_family == m->ip[i].ss_family &&
	       m->rc_now - p->rc[i][j].last_ms >= m->o.interval_ms;
}

static struct mpeer *peer_of(struct mesh *m, const char *addr)
{
	int k;

	for (k = 0; k < m->npeers; k++)
		if (!strcmp(m->peers[k].addr, addr))
			return &m->peers[k];
	return NULL;
}

/* A ping's outcome into its pair's window (gone from the list: dropped). */
static void rc_done(void *arg, const char *addr, int i, int j, uint32_t us, const char *why)
{
	struct mesh *m = arg;
	struct mpeer *p;
	struct mpair *x;

	pthread_mutex_lock(&m->lock);
	p = peer_of(m, addr);
	if (p && j < p->nnics) {
		x = &p->rc[i][j];
		x->sent_ms = 0;
		rn_mesh_win_add(&x->win, us);
		if (us != RN_MESH_LOST)
			x->base_us = x->base_us ? 0.8 * x->base_us + 0.2 * us : us;
		else if (m->o.verbose && x->win.lost_run == 1)
			mlog("RC %s -> %s %s: %s", m->netdev[i], p->host, p->netdev[j], why);
		/* its agent may have started again (another listener): ask for the handle now */
		if (us == RN_MESH_LOST)
			p->rch_asked[j] = 0;
	}
	pthread_mutex_unlock(&m->lock);
}

/* Start the pings the rate allows (the picks copied out, the pings started unlocked). */
static void rc_start(struct mesh *m, double now)
{
	struct {
		char addr[256];
		int i, j;
		uint8_t h[RN_MESH_RC_HANDLE];
	} *go;
	int n, k, max = 0, got = 0, pick[64];

	pthread_mutex_lock(&m->lock);
	n = m->npeers * PAIRS_PER_PEER;
	m->rc_now = now;
	while (max < (int)RN_ARRAY_SIZE(pick) && max < n &&
	       rn_mesh_bucket_take(&m->rc_b, now / 1000.0))
		max++;
	go = max ? calloc((size_t)max, sizeof(*go)) : NULL;
	if (go)
		got = rn_mesh_sched_pick(&m->rc_sched, n, rc_ready, m, max, pick);
	m->rc_b.tokens = RN_MIN(m->rc_b.burst, m->rc_b.tokens + (max - got));
	for (k = 0; k < got; k++) {
		struct mpeer *p;
		int i, j;

		pair_at(m, pick[k], &p, &i, &j);
		snprintf(go[k].addr, sizeof(go[k].addr), "%s", p->addr);
		go[k].i = i;
		go[k].j = j;
		memcpy(go[k].h, p->rch[j], RN_MESH_RC_HANDLE);
		p->rc[i][j].sent_ms = now;
		p->rc[i][j].last_ms = now;
	}
	m->self.rc_probes_sent += (uint64_t)got;
	pthread_mutex_unlock(&m->lock);
	for (k = 0; k < got; k++) {
		int ret = rn_mesh_rc_ping(m->rc, go[k].addr, go[k].i, go[k].j, go[k].h, now);

		/* not started (every connection busy): no outcome, the pair's turn comes again */
		if (ret) {
			struct mpeer *p;

			pthread_mutex_lock(&m->lock);
			p = peer_of(m, go[k].addr);
			if (p)
				p->rc[go[k].i][go[k].j].sent_ms = 0;
			m->self.rc_probes_sent--;
			pthread_mutex_unlock(&m->lock);
		}
	}
	free(go);
}

/*
 * The RC thread: its own engine (doctor_mesh_rc.c) on its own doctor context, so nothing
 * of it is shared with serve's or the checkers'; it naps 100 us while a ping is in flight
 * (the RTT's resolution) and 10 ms otherwise.
 */
static void *rc_thread(void *arg)
{
	struct mesh *m = arg;
	struct rn_mesh_rc_stats st = { 0 };

	while (!*m->stop) {
		double now = rn_doctor_now_ms();
		int busy;

		rc_start(m, now);
		busy = rn_mesh_rc_step(m->rc, rn_doctor_now_ms(), rc_done, m, &st);
		pthread_mutex_lock(&m->lock);
		m->self.rc_qps = st.qps;
		m->self.rc_answered = st.answered;
		pthread_mutex_unlock(&m->lock);
		usleep(busy ? 100 : 10000);
	}
	return NULL;
}

/* ---- the metrics --------------------------------------------------------------------- */

static const char *cause_of(const struct mesh *m, const struct mpeer *p, int i, int j,
			    const struct mpair *x, int *up)
{
	*up = 1;
	if (p->cause[i][j]) {
		*up = 0;
		return rn_cause_id((enum rn_cause)p->cause[i][j]);
	}
	if (x->win.lost_run < RN_MESH_DOWN_AFTER)
		return NULL;
	*up = 0;
	if (!m->link_up[i] || !p->link_up[j])
		return "link-down";
	return "no-reply";
}

/* Pair (@i, @j)'s series of @kind into @v: 1, or 0 when nothing is known of it yet. */
static int view_of(const struct mesh *m, const struct mpeer *p, int i, int j, const struct mpair *w,
		   const char *kind, struct rn_mesh_view *x)
{
	x->cause = cause_of(m, p, i, j, w, &x->up);
	/* RC: only the pairs it probes (UDP alone where either NIC cannot do RC) */
	if (!w->win.n && (x->up || w == &p->rc[i][j]))
		return 0;
	x->host = m->host;
	x->nic = m->netdev[i];
	x->peer_host = p->host;
	x->peer_nic = p->netdev[j];
	x->group = m->group;
	x->peer_group = p->group;
	x->kind = kind;
	rn_mesh_win_figs(&w->win, &x->figs);
	x->base_s = w->base_us / 1e6;
	x->sent = w->win.sent;
	x->lost = w->win.lost;
	return 1;
}

/* The metrics text (malloc'ed, *@len) from the state now; NULL when out of memory. */
static char *render(struct mesh *m, size_t *len)
{
	struct rn_mesh_view *v;
	char *buf = NULL;
	FILE *f;
	int k, i, j, n = 0;

	pthread_mutex_lock(&m->lock);
	/* the views of the pairs there are, not of every pair there could be */
	for (k = 0; k < m->npeers; k++)
		n += m->peers[k].known && !m->peers[k].self ? 2 * m->nnics * m->peers[k].nnics : 0;
	v = calloc((size_t)n + 1, sizeof(*v));
	n = 0;
	f = v ? open_memstream(&buf, len) : NULL;
	if (!f) {
		pthread_mutex_unlock(&m->lock);
		free(v);
		return NULL;
	}
	for (k = 0; k < m->npeers; k++) {
		struct mpeer *p = &m->peers[k];

		if (p->self || !p->known)
			continue;
		for (i = 0; i < m->nnics; i++)
			for (j = 0; j < p->nnics; j++) {
				n += view_of(m, p, i, j, &p->p[i][j], "udp", &v[n]);
				n += view_of(m, p, i, j, &p->rc[i][j], "rc", &v[n]);
			}
	}
	m->self.pairs = n;
	rn_mesh_render(f, v, n, &m->self);
	pthread_mutex_unlock(&m->lock);
	/* the plugin's journal of failed comms, as `roce-doctor --prometheus` exports it */
	rn_doctor_prom_comm_failures(f);
	free(v);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void fill_text(FILE *f, const void *arg)
{
	fputs(arg, f);
}

static void write_textfile(struct mesh *m)
{
	char path[4096];
	size_t len;
	char *t = render(m, &len);
	int ret;

	if (!t)
		return;
	snprintf(path, sizeof(path), "%s/roce-mesh.prom", m->o.textdir);
	ret = rn_doctor_write_file(path, fill_text, t);
	if (ret)
		mlog("cannot write %s: %s", path, strerror(-ret));
	free(t);
}

static void http_close(struct mhttp *h)
{
	close(h->fd);
	free(h->out);
	h->fd = -1;
	h->out = NULL;
	h->got = h->sent = h->len = 0;
}

static void http_accept(struct mesh *m)
{
	int fd, k, old = 0;

	while ((fd = accept4(m->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		for (k = 0; k < MESH_HTTP && m->http[k].fd >= 0; k++)
			if (m->http[k].by < m->http[old].by)
				old = k;
		/* full: the one that has waited longest makes room (a slow scraper, a squatter) */
		if (k == MESH_HTTP) {
			http_close(&m->http[old]);
			k = old;
		}
		m->http[k].fd = fd;
		m->http[k].by = m->now + MESH_HTTP_MS;
	}
}

static void http_reply(struct mesh *m, struct mhttp *h)
{
	static const char hdr[] = "HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
				  "Connection: close\r\n\r\n";
	static const char bad[] = "HTTP/1.0 404 Not Found\r\nConnection: close\r\n\r\n"
				  "roce-doctor mesh: GET /metrics\n";
	size_t len = 0;
	char *t = NULL;

	if (!strncmp(h->req, "GET /metrics ", 13) || !strncmp(h->req, "GET / ", 6))
		t = render(m, &len);
	h->out = malloc((t ? sizeof(hdr) + len : sizeof(bad)) + 1);
	if (h->out)
		h->len = (size_t)sprintf(h->out, "%s%s", t ? hdr : bad, t ? t : "");
	free(t);
}

/* One connection's step: read the request, then write the answer, as far as it goes now. */
static void http_step(struct mesh *m, struct mhttp *h)
{
	ssize_t r;

	if (m->now >= h->by) {
		http_close(h);
		return;
	}
	if (!h->out) {
		r = recv(h->fd, h->req + h->got, sizeof(h->req) - 1 - h->got, MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
			http_close(h);
			return;
		}
		h->got += r > 0 ? (size_t)r : 0;
		h->req[h->got] = 0;
		if (!strstr(h->req, "\r\n\r\n") && !strstr(h->req, "\n\n")) {
			if (h->got == sizeof(h->req) - 1)
				http_close(h); /* no request is this long */
			return;
		}
		http_reply(m, h);
		if (!h->out) {
			http_close(h);
			return;
		}
	}
	r = send(h->fd, h->out + h->sent, h->len - h->sent, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (r < 0 && errno != EAGAIN && errno != EINTR) {
		http_close(h);
		return;
	}
	h->sent += r > 0 ? (size_t)r : 0;
	if (h->sent == h->len)
		http_close(h);
}

/* ---- the agent ----------------------------------------------------------------------- */

/* A doctor context as main makes one: the environment's config, this host's name. */
static struct rn_doctor *doctor_new(const struct mopts *o)
{
	struct rn_doctor *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->out = stderr;
	d->port = o->port;
	d->timeout_s = -1;
	d->no_rdma = 1;
	d->listen = o->listen;
	d->bad_env = rn_config_load(&d->cfg);
	if (gethostname(d->hostname, sizeof(d->hostname) - 1))
		snprintf(d->hostname, sizeof(d->hostname), "?");
	if (o->netdevs && rn_doctor_set_netdevs(d, o->netdevs)) {
		mlog("--netdev: %s", d->err);
		free(d);
		return NULL;
	}
	return d;
}

static void doctor_free(struct rn_doctor *d)
{
	if (!d)
		return;
	rn_doctor_release(d);
	free(d);
}

/* Our NICs (the first RN_MESH_NICS of the doctor's) and one probe socket on each. */
static int open_nics(struct mesh *m, struct rn_doctor *d)
{
	int i, one = 1;

	if (rn_doctor_gather(d))
		return -EIO;
	snprintf(m->host, sizeof(m->host), "%s", d->hostname);
	m->nnics = RN_MIN(d->nnics, RN_MESH_NICS);
	if (d->nnics > RN_MESH_NICS)
		mlog("%d NICs: the first %d are probed", d->nnics, RN_MESH_NICS);
	for (i = 0; i < m->nnics; i++) {
		const struct rn_nic *n = &d->nics[i].nic;
		socklen_t sl;
		char ip[INET6_ADDRSTRLEN];

		snprintf(m->netdev[i], sizeof(m->netdev[i]), "%s", n->netdev);
		to_sockaddr(&n->ip, m->o.probe_port, &m->ip[i]);
		m->link_up[i] = 1;
		sl = m->ip[i].ss_family == AF_INET ? sizeof(struct sockaddr_in) :
						     sizeof(struct sockaddr_in6);
		m->ufd[i] = socket(m->ip[i].ss_family ? m->ip[i].ss_family : AF_INET,
				   SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (m->ufd[i] < 0)
			return -errno;
		setsockopt(m->ufd[i], SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		/* bound to the NIC's address: its rule, its route, its ARP entry, as RoCE v2 */
		if (!m->ip[i].ss_family || bind(m->ufd[i], (struct sockaddr *)&m->ip[i], sl)) {
			mlog("%s: cannot bind UDP %s port %d: %s", n->netdev,
			     rn_ip_str(&n->ip, ip, sizeof(ip)), m->o.probe_port,
			     m->ip[i].ss_family ? strerror(errno) : "no address");
			return -EADDRNOTAVAIL;
		}
	}
	return m->nnics ? 0 : -ENODEV;
}

/* --listen-metrics [ADDR:]PORT, non-blocking. */
static int open_metrics(struct mesh *m)
{
	char addr[128] = "";
	const char *colon = strrchr(m->o.metrics, ':');
	int port, fd, ret;

	if (colon) {
		snprintf(addr, sizeof(addr), "%.*s", (int)(colon - m->o.metrics), m->o.metrics);
		if (addr[0] == '[' && addr[strlen(addr) - 1] == ']') {
			memmove(addr, addr + 1, strlen(addr));
			addr[strlen(addr) - 1] = 0;
		}
	}
	if (rn_cli_int(colon ? colon + 1 : m->o.metrics, 1, 65535, &port))
		return -EINVAL;
	ret = rn_dw_listen(addr[0] ? addr : NULL, port, &fd);
	if (ret)
		return ret;
	if (fcntl(fd, F_SETFL, O_NONBLOCK)) {
		close(fd);
		return -errno;
	}
	m->lfd = fd;
	return 0;
}

static void *serve_thread(void *arg)
{
	struct rn_doctor *d = arg;
	int rc = rn_doctor_cmd_serve(d, 0, NULL);

	if (rc == RN_DOCTOR_ERROR)
		mlog("the serve side stopped (exit %d): peers cannot check this host", rc);
	return NULL;
}

/* The prober's loop until a signal or --duration. */
static void run(struct mesh *m)
{
	struct pollfd pfd[RN_MESH_NICS + 1 + MESH_HTTP];
	double end = m->o.duration_s ? rn_doctor_now_ms() + m->o.duration_s * 1000.0 : 0;
	double next_tick = 0, next_file = 0;
	int i, np;

	while (!*m->stop && (!end || rn_doctor_now_ms() < end)) {
		np = 0;
		for (i = 0; i < m->nnics; i++)
			pfd[np++] = (struct pollfd){ .fd = m->ufd[i], .events = POLLIN };
		pfd[np++] = (struct pollfd){ .fd = m->lfd, .events = POLLIN };
		for (i = 0; i < MESH_HTTP; i++)
			pfd[np++] = (struct pollfd){ .fd = m->http[i].fd,
						     .events = m->http[i].out ? POLLOUT : POLLIN };
		if (poll(pfd, np, MESH_TICK_MS) < 0 && errno != EINTR)
			break;
		m->now = rn_doctor_now_ms();
		pthread_mutex_lock(&m->lock);
		for (i = 0; i < m->nnics; i++)
			if (pfd[i].revents)
				drain(m, i);
		if (m->now >= next_tick) {
			tick(m);
			next_tick = m->now + MESH_TICK_MS;
		}
		pthread_mutex_unlock(&m->lock);
		if (m->lfd >= 0 && pfd[m->nnics].revents)
			http_accept(m);
		for (i = 0; i < MESH_HTTP; i++)
			if (m->http[i].fd >= 0)
				http_step(m, &m->http[i]);
		if (m->o.textdir && m->now >= next_file) {
			write_textfile(m);
			next_file = m->now + 5000;
		}
	}
}

static void mesh_usage(FILE *f)
{
	fprintf(f,
		"Usage: roce-doctor mesh (--hosts FILE | --hosts-cmd CMD) [options]\n"
		"\n"
		"The long-running agent, one per host: answers peers' pair checks (as serve), and\n"
		"probes a rotating sample of peer NICs at a low, bounded rate (a UDP echo from each\n"
		"NIC's own address, so the NIC's rule, route and ARP entry carry it as they carry\n"
		"RoCE v2) and, between NICs with an RDMA port, an RC ping over a kept connection,\n"
		"plus each pair's route/neighbour/ARP/MTU checks, as peer does. Per NIC\n"
		"pair: reachability, RTT p50/p99, loss, and the cause of a failure (the verdict\n"
		"catalogue's id), as Prometheus metrics.\n"
		"\n"
		"  --hosts FILE          the hosts: 'ADDRESS [GROUP]' a line (where each agent\n"
		"                        listens; GROUP: its switch or rack, for localize)\n"
		"  --hosts-cmd CMD       the same from a command, e.g. 'scontrol show hostnames'\n"
		"  --group NAME          this host's group (default: its line in the list, or 'all')\n"
		"  -n, --netdev LIST     these netdevs (default: the RDMA ports, as the plugin)\n"
		"  -p, --port N          the agents' TCP port (serve; default %d)\n"
		"      --listen ADDR     serve on this address only (default: every address)\n"
		"      --probe-port N    the UDP probes' port (default %d)\n"
		"      --listen-metrics [ADDR:]PORT   serve /metrics over HTTP\n"
		"      --textfile-dir DIR write DIR/roce-mesh.prom every 5 s (node-exporter)\n"
		"      --rate N          probes a second from this host, at most (default 100)\n"
		"      --interval MS     each NIC pair at most once in MS (default 1000)\n"
		"      --echo-rate N     peers' probes answered a second, at most (default 2000)\n"
		"      --check-interval S  each peer's pair checks once in S seconds (default 60)\n"
		"      --reload S        re-read the host list every S seconds (default 60)\n"
		"      --max-hosts N     refuse a longer list (default 4096)\n"
		"      --rc-rate N       RC pings a second from this host, at most (default 10)\n"
		"      --rc-qps N        RC connections to peer NICs kept, at most (default 16)\n"
		"      --no-rc           UDP probes only (no RC listener, no RC pings)\n"
		"      --duration S      exit after S seconds (default: run until SIGTERM)\n"
		"  -v, --verbose         log failed pair checks\n",
		RN_DOCTOR_PORT, MESH_PROBE_PORT);
}

static int opt_int(const char *opt, const char *s, int lo, int hi, int *out)
{
	if (rn_cli_int(s, lo, hi, out))
		return rn_cli_error(PROG, NULL, RN_DOCTOR_ERROR,
				    "%s: '%s' is not a number in "
				    "%d..%d",
				    opt, s, lo, hi);
	return 0;
}

/* The numeric options: letter, name, range, and where the value goes. */
static const struct {
	int c;
	const char *name;
	int lo, hi;
	size_t off;
} mesh_nums[] = {
	{ 'p', "--port", 1, 65535, offsetof(struct mopts, port) },
	{ 'P', "--probe-port", 1, 65535, offsetof(struct mopts, probe_port) },
	{ 'r', "--rate", 1, 100000, offsetof(struct mopts, rate) },
	{ 'i', "--interval", 10, 3600000, offsetof(struct mopts, interval_ms) },
	{ 'e', "--echo-rate", 1, 1000000, offsetof(struct mopts, echo_rate) },
	{ 'c', "--check-interval", 1, 86400, offsetof(struct mopts, check_s) },
	{ 'R', "--reload", 1, 86400, offsetof(struct mopts, reload_s) },
	{ 'X', "--max-hosts", 1, 65536, offsetof(struct mopts, max_hosts) },
	{ 'D', "--duration", 1, 864000, offsetof(struct mopts, duration_s) },
	{ 'q', "--rc-rate", 1, 10000, offsetof(struct mopts, rc_rate) },
	{ 'Q', "--rc-qps", 1, 1024, offsetof(struct mopts, rc_qps) },
};

/* A numeric option @c into @o: 0, RN_DOCTOR_ERROR (said), or -ENOENT (not one). */
static int opt_num(int c, const char *arg, struct mopts *o)
{
	size_t k;

	for (k = 0; k < RN_ARRAY_SIZE(mesh_nums); k++)
		if (mesh_nums[k].c == c)
			return opt_int(mesh_nums[k].name, arg, mesh_nums[k].lo, mesh_nums[k].hi,
				       (int *)((char *)o + mesh_nums[k].off));
	return -ENOENT;
}

static int parse_opts(int argc, char **argv, struct mopts *o)
{
	static const struct option opts[] = {
		{ "hosts", required_argument, NULL, 'H' },
		{ "hosts-cmd", required_argument, NULL, 'C' },
		{ "group", required_argument, NULL, 'g' },
		{ "netdev", required_argument, NULL, 'n' },
		{ "port", required_argument, NULL, 'p' },
		{ "listen", required_argument, NULL, 'L' },
		{ "probe-port", required_argument, NULL, 'P' },
		{ "listen-metrics", required_argument, NULL, 'M' },
		{ "textfile-dir", required_argument, NULL, 'T' },
		{ "rate", required_argument, NULL, 'r' },
		{ "interval", required_argument, NULL, 'i' },
		{ "echo-rate", required_argument, NULL, 'e' },
		{ "check-interval", required_argument, NULL, 'c' },
		{ "reload", required_argument, NULL, 'R' },
		{ "max-hosts", required_argument, NULL, 'X' },
		{ "duration", required_argument, NULL, 'D' },
		{ "rc-rate", required_argument, NULL, 'q' },
		{ "rc-qps", required_argument, NULL, 'Q' },
		{ "no-rc", no_argument, NULL, 'N' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, ret = 0;

	*o = (struct mopts){ .port = RN_DOCTOR_PORT,
			     .probe_port = MESH_PROBE_PORT,
			     .rate = 100,
			     .echo_rate = 2000,
			     .interval_ms = 1000,
			     .check_s = 60,
			     .reload_s = 60,
			     .max_hosts = 4096,
			     .rc_rate = 10,
			     .rc_qps = 16 };
	opterr = 0;
	optind = 1;
	while (!ret && (c = getopt_long(argc, argv, ":n:p:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'H':
			o->hosts = optarg;
			break;
		case 'C':
			o->hosts_cmd = optarg;
			break;
		case 'g':
			o->group = optarg;
			break;
		case 'n':
			o->netdevs = optarg;
			break;
		case 'L':
			o->listen = optarg;
			break;
		case 'M':
			o->metrics = optarg;
			break;
		case 'T':
			o->textdir = optarg;
			break;
		case 'N':
			o->no_rc = 1;
			break;
		case 'v':
			o->verbose++;
			break;
		case 'h':
			mesh_usage(stdout);
			return 1;
		default:
			ret = opt_num(c, optarg, o);
			if (ret == -ENOENT)
				return rn_cli_bad_option(PROG, NULL, c, argv, optind, optopt);
		}
	}
	if (ret)
		return ret;
	if (optind < argc)
		return rn_cli_error(PROG, NULL, RN_DOCTOR_ERROR, "unexpected argument '%s'",
				    argv[optind]);
	if (!o->hosts == !o->hosts_cmd)
		return rn_cli_error(PROG, NULL, RN_DOCTOR_ERROR,
				    "give the hosts: --hosts FILE "
				    "or --hosts-cmd CMD (one of them)");
	if (o->metrics) {
		const char *colon = strrchr(o->metrics, ':');
		int port;

		if (rn_cli_int(colon ? colon + 1 : o->metrics, 1, 65535, &port))
			return rn_cli_error(PROG, NULL, RN_DOCTOR_ERROR,
					    "--listen-metrics: '%s' "
					    "is not [ADDR:]PORT",
					    o->metrics);
	}
	if (o->probe_port == o->port)
		return rn_cli_error(PROG, NULL, RN_DOCTOR_ERROR,
				    "--probe-port and --port are "
				    "both %d",
				    o->port);
	if (o->textdir) {
		struct stat st;

		if (stat(o->textdir, &st) || !S_ISDIR(st.st_mode))
			return rn_cli_error(PROG, NULL, RN_DOCTOR_ERROR,
					    "--textfile-dir: '%s' is "
					    "not a directory",
					    o->textdir);
	}
	return 0;
}

/*
 * The RC probes on @dr (a context of their own, with RDMA): their listeners' handles for
 * the prober's answers. None (no RDMA port, --no-rc): the UDP probes alone, said once.
 */
static void rc_open(struct mesh *m, struct rn_doctor *dr)
{
	char why[256] = "--no-rc";
	int i;

	if (!m->o.no_rc && !rn_doctor_gather(dr))
		m->rc = rn_mesh_rc_new(dr, (const char(*)[16])m->netdev, m->nnics, m->o.rc_qps,
				       RN_MESH_PROBE_MS, why, sizeof(why));
	else if (!m->o.no_rc)
		snprintf(why, sizeof(why), "this host's RDMA ports could not be read");
	for (i = 0; m->rc && i < m->nnics; i++) {
		m->rc_ok[i] = !rn_mesh_rc_handle(m->rc, i, m->rc_handle[i]);
		m->self.rc_nics += m->rc_ok[i];
	}
	if (!m->rc)
		mlog("no RC probes (%s): UDP probes only", why);
	else if (m->self.rc_nics < m->nnics)
		mlog("RC probes from %d of %d NICs (%s): UDP probes only from the others",
		     m->self.rc_nics, m->nnics, why[0] ? why : "the others have no RDMA port");
}

static int mesh_start(struct mesh *m, struct rn_doctor *dp, struct rn_doctor *ds,
		      struct rn_doctor *dr, struct rn_doctor **dc, struct checker *ck)
{
	pthread_t th;
	char why[256];
	struct mpeer *v;
	int n, ret, k;

	/* what follows are the system's errors, not the command line's: no usage hint */
	ret = read_hosts(&m->o, &v, &n, why, sizeof(why));
	if (ret) {
		mlog("%s", why);
		return RN_DOCTOR_ERROR;
	}
	ret = open_nics(m, dp);
	if (ret) {
		free(v);
		mlog("no NIC to probe from: %s",
		     ret == -ENODEV ? "none found (--netdev to name "
				      "them)" :
		     ret == -EIO    ? "this host's NICs could not be read (above)" :
				      strerror(-ret));
		return RN_DOCTOR_ERROR;
	}
	snprintf(m->group, sizeof(m->group), "%s", m->o.group ? m->o.group : "all");
	merge_hosts(m, v, n);
	if (m->o.metrics && (ret = open_metrics(m))) {
		mlog("--listen-metrics %s: %s", m->o.metrics,
		     ret == -EINVAL ? "not [ADDR:]PORT" : strerror(-ret));
		return RN_DOCTOR_ERROR;
	}
	rc_open(m, dr);
	if (m->rc && (pthread_create(&th, NULL, rc_thread, m) || pthread_detach(th))) {
		mlog("cannot start a thread");
		return RN_DOCTOR_ERROR;
	}
	if (pthread_create(&th, NULL, serve_thread, ds) || pthread_detach(th)) {
		mlog("cannot start a thread");
		return RN_DOCTOR_ERROR;
	}
	for (k = 0; k < 2; k++) {
		ck[k] = (struct checker){ .m = m, .d = dc[k], .failing = k };
		if (pthread_create(&th, NULL, checker, &ck[k]) || pthread_detach(th)) {
			mlog("cannot start a thread");
			return RN_DOCTOR_ERROR;
		}
	}
	mlog("%d peer%s, %d NIC%s here (group %s), probes on UDP port %d at most %d/s%s%s",
	     m->self.peers, m->self.peers == 1 ? "" : "s", m->nnics, m->nnics == 1 ? "" : "s",
	     m->group, m->o.probe_port, m->o.rate, m->o.metrics ? ", metrics on " : "",
	     m->o.metrics ? m->o.metrics : "");
	return 0;
}

int rn_doctor_mesh(int argc, char **argv)
{
	struct rn_doctor *dp = NULL, *ds = NULL, *dr = NULL, *dc[2] = { NULL, NULL };
	static struct checker ck[2];
	struct mesh *m;
	int ret, i;

	m = calloc(1, sizeof(*m));
	if (!m)
		return rn_cli_error(PROG, NULL, RN_DOCTOR_ERROR, "out of memory");
	ret = parse_opts(argc, argv, &m->o);
	if (ret) {
		free(m);
		return ret == 1 ? RN_DOCTOR_OK : RN_DOCTOR_ERROR;
	}
	pthread_mutex_init(&m->lock, NULL);
	m->stop = &mesh_stop;
	m->lfd = -1;
	for (i = 0; i < MESH_HTTP; i++)
		m->http[i].fd = -1;
	for (i = 0; i < RN_MESH_NICS; i++)
		m->ufd[i] = -1;
	m->self.started_s = (double)time(NULL);
	rn_mesh_bucket_init(&m->send_b, m->o.rate, m->o.rate, rn_doctor_now_ms() / 1000.0);
	rn_mesh_bucket_init(&m->echo_b, m->o.echo_rate, m->o.echo_rate,
			    rn_doctor_now_ms() / 1000.0);
	rn_doctor_log_init(m->o.verbose > 1);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	dp = doctor_new(&m->o);
	ds = dp ? doctor_new(&m->o) : NULL;
	dc[0] = ds ? doctor_new(&m->o) : NULL;
	dc[1] = dc[0] ? doctor_new(&m->o) : NULL;
	dr = dc[1] ? doctor_new(&m->o) : NULL;
	if (!dr) {
		ret = RN_DOCTOR_ERROR;
		goto out;
	}
	m->self.host = m->host;
	dr->no_rdma = 0; /* the RC prober's own context: its engine is its alone */
	rn_mesh_bucket_init(&m->rc_b, m->o.rc_rate, m->o.rc_rate, rn_doctor_now_ms() / 1000.0);
	ret = mesh_start(m, dp, ds, dr, dc, ck);
	if (ret)
		goto out;
	run(m);
	mlog("stopping: %llu probes sent, %llu answered for peers",
	     (unsigned long long)m->self.probes_sent, (unsigned long long)m->self.echoes_sent);
	if (m->o.textdir)
		write_textfile(m);
	/* NOTE: the serve and checker threads still hold @ds, @dc and @m: the process ends */
	fflush(stderr);
	_exit(RN_DOCTOR_OK);
out:
	doctor_free(dp);
	doctor_free(ds);
	doctor_free(dc[0]);
	doctor_free(dc[1]);
	doctor_free(dr);
	free(m);
	return ret;
}
