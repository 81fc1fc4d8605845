// SPDX-License-Identifier: MIT
/*
 * The host's journal of failed comms (src/errlog.c): one JSON line a record, every field
 * there and escaped; the directory made by the first writer; many processes appending at
 * once lose no record and cut none; a full journal is rotated (errors.jsonl.1), never cut.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "rn_errlog.h"

static char dir[64], sub[96];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/rn-errlog-XXXXXX");
	assert_non_null(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/state", dir);
	return 0;
}

static int teardown(void **state)
{
	char p[160];

	(void)state;
	snprintf(p, sizeof(p), "%s/%s", sub, RN_ERRLOG_FILE);
	unlink(p);
	snprintf(p, sizeof(p), "%s/%s.1", sub, RN_ERRLOG_FILE);
	unlink(p);
	rmdir(sub);
	rmdir(dir);
	return 0;
}

static const struct rn_errlog_rec rec = {
	.cause = "replies-elsewhere",
	.status = "RETRY_EXC_ERR",
	.ibdev = "mlx5_0",
	.port = 1,
	.netdev = "ens1f0np0",
	.ip = "198.18.0.10",
	.peer_host = "gpu-07",
	.peer_netdev = "ens1f0np0.100",
	.peer_ip = "198.18.0.20",
	.counters = "rxe0: \"out_of_sequence\" +12",
};

/* The journal's lines (NULL-terminated, malloc'd) and their count in @n. */
static char *slurp(const char *name, int *n)
{
	char p[160], *buf;
	FILE *f;
	long len;

	snprintf(p, sizeof(p), "%s/%s", sub, name);
	f = fopen(p, "r");
	if (!f) {
		*n = -1;
		return NULL;
	}
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = calloc(1, (size_t)len + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)len, f), (size_t)len);
	fclose(f);
	*n = 0;
	for (char *s = buf; *s; s++)
		*n += *s == '\n';
	return buf;
}

/* One record: its fields, as JSON, on one line; the directory made on the way. */
static void one_record(void **state)
{
	char *s;
	int n;

	(void)state;
	assert_int_equal(rn_errlog_add(sub, &rec), 0);
	s = slurp(RN_ERRLOG_FILE, &n);
	assert_int_equal(n, 1);
	assert_int_equal(s[0], '{');
	assert_non_null(strstr(s, "\"cause\": \"replies-elsewhere\""));
	assert_non_null(strstr(s, "\"status\": \"RETRY_EXC_ERR\""));
	assert_non_null(strstr(s, "\"nic\": \"mlx5_0:1\""));
	assert_non_null(strstr(s, "\"peer_host\": \"gpu-07\""));
	assert_non_null(strstr(s, "\"peer_netdev\": \"ens1f0np0.100\""));
	assert_non_null(strstr(s, "\"pid\": "));
	assert_non_null(strstr(s, "\"time\": "));
	/* a quote in a field is escaped: the line stays one JSON object */
	assert_non_null(strstr(s, "rxe0: \\\"out_of_sequence\\\" +12"));
	assert_string_equal(s + strlen(s) - 2, "}\n");
	free(s);
}

/* No cause known: "unknown", never an empty id. */
static void no_cause(void **state)
{
	struct rn_errlog_rec r = rec;
	char *s;
	int n;

	(void)state;
	r.cause = NULL;
	r.counters = NULL;
	assert_int_equal(rn_errlog_add(sub, &r), 0);
	s = slurp(RN_ERRLOG_FILE, &n);
	assert_non_null(strstr(s, "\"cause\": \"unknown\""));
	assert_non_null(strstr(s, "\"counters\": \"\""));
	free(s);
}

/* 4 processes x 200 records at once: 800 whole lines. */
static void many_writers(void **state)
{
	pid_t pid[4];
	char *s, *line;
	int i, k, n, st;

	(void)state;
	for (k = 0; k < 4; k++) {
		pid[k] = fork();
		assert_true(pid[k] >= 0);
		if (!pid[k]) {
			for (i = 0; i < 200; i++)
				if (rn_errlog_add(sub, &rec))
					_exit(1);
			_exit(0);
		}
	}
	for (k = 0; k < 4; k++) {
		assert_int_equal(waitpid(pid[k], &st, 0), pid[k]);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	s = slurp(RN_ERRLOG_FILE, &n);
	assert_int_equal(n, 800);
	for (line = strtok(s, "\n"); line; line = strtok(NULL, "\n")) {
		assert_int_equal(line[0], '{');
		assert_int_equal(line[strlen(line) - 1], '}');
		assert_non_null(strstr(line, "\"peer_ip\": \"198.18.0.20\""));
	}
	free(s);
}

/* Past RN_ERRLOG_MAX the journal becomes errors.jsonl.1; both stay bounded, no line cut. */
static void rotates(void **state)
{
	static char big[RN_ERRLOG_LINE];
	struct rn_errlog_rec r = rec;
	char p[160], *s;
	struct stat st;
	int i, n, n1;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	r.counters = big; /* cut to what fits a line */
	for (i = 0; i < 2 * RN_ERRLOG_MAX / 1000 + 10; i++)
		assert_int_equal(rn_errlog_add(sub, &r), 0);
	snprintf(p, sizeof(p), "%s/%s.1", sub, RN_ERRLOG_FILE);
	assert_int_equal(stat(p, &st), 0);
	assert_true(st.st_size <= RN_ERRLOG_MAX);
	snprintf(p, sizeof(p), "%s/%s", sub, RN_ERRLOG_FILE);
	assert_int_equal(stat(p, &st), 0);
	assert_true(st.st_size <= RN_ERRLOG_MAX);
	s = slurp(RN_ERRLOG_FILE ".1", &n1);
	assert_true(n1 > 0);
	assert_string_equal(s + strlen(s) - 2, "}\n");
	free(s);
	s = slurp(RN_ERRLOG_FILE, &n);
	assert_true(n > 0);
	assert_true(strlen(s) / (size_t)n <= RN_ERRLOG_LINE);
	free(s);
}

/* A directory that cannot be made: an error, nothing else. */
static void unwritable(void **state)
{
	(void)state;
	assert_int_equal(rn_errlog_add("/proc/self/no-such-dir", &rec) < 0, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(one_record, setup, teardown),
		cmocka_unit_test_setup_teardown(no_cause, setup, teardown),
		cmocka_unit_test_setup_teardown(many_writers, setup, teardown),
		cmocka_unit_test_setup_teardown(rotates, setup, teardown),
		cmocka_unit_test_setup_teardown(unwritable, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
