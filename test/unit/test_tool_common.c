// SPDX-License-Identifier: MIT
/*
 * The tools' shared code: the side channel's address handling (src/tools/tool_common.c,
 * built into this test unoptimised: resolve_free() once called itself instead of
 * freeaddrinfo(), which -O0 turns into a stack overflow on any TCP address and -O2 into a
 * leak; ASan/LSan see either) and the command-line helpers of include/rn_cli.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <cmocka.h>

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O0")
#endif
#include "../../src/tools/tool_common.c"
/* the tools' NCCL log filter, once it lives in a file of its own */
#if __has_include("../../src/tools/nccl_log.c")
#include "../../src/tools/nccl_log.c"
#endif

#include "rn_cli.h"

static void test_addr_check(void **state)
{
	static const char *const good[] = { "127.0.0.1:18515", "198.18.0.1:0", "[::1]:80", ":18515",
					    "unix:/tmp/x.sock" };
	static const char *const bad[] = { "127.0.0.1",    "127.0.0.1:",   "127.0.0.1:65536",
					   "127.0.0.1:8x", "999.1.1.1:80", "host.example:80",
					   "[::1:80",      "unix:",        "" };
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_int_equal(side_addr_check(good[i]), 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(side_addr_check(bad[i]), -EINVAL);
}

/* A TCP listen resolves, binds and frees the address list (the path that crashed). */
static void test_tcp_listen_frees(void **state)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd = side_listen("127.0.0.1:0");

	assert_true(fd >= 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &len), 0);
	assert_int_not_equal(ntohs(sin.sin_port), 0);
	close(fd);
	/* nobody listens there any more: refused, retried until the timeout, list freed */
	{
		char addr[64];

		snprintf(addr, sizeof(addr), "127.0.0.1:%d", ntohs(sin.sin_port));
		fd = side_connect(addr, 1);
		assert_true(fd < 0);
	}
}

/* The whole side channel over a unix: socket: listen, connect, accept, bytes both ways. */
static void test_unix_round_trip(void **state)
{
	char path[64], addr[80], buf[8];
	int lfd, cfd, afd;

	snprintf(path, sizeof(path), "/tmp/rn-tool-common.%d.sock", getpid());
	snprintf(addr, sizeof(addr), "unix:%s", path);
	unlink(path);
	lfd = side_listen(addr);
	assert_true(lfd >= 0);
	cfd = side_connect(addr, 1000);
	assert_true(cfd >= 0);
	afd = side_accept(lfd, 1000);
	assert_true(afd >= 0);
	assert_int_equal(side_send(cfd, "ping", 5, 1000), 0);
	assert_int_equal(side_recv(afd, buf, 5, 1000), 0);
	assert_string_equal(buf, "ping");
	close(cfd);
	assert_int_equal(side_recv(afd, buf, 1, 1000), -ECONNRESET);
	close(afd);
	close(lfd);
	unlink(path);
}

/* A client process: strays first (connect+close, garbage, a wrong greeting, more silent
 * connections than the server keeps waiting), then the real peer, which must get "ok". */
static int greeted_client(const char *addr)
{
	int silent[SIDE_MAX_PENDING + 2], i, fd;
	char buf[3] = "";

	fd = side_connect(addr, 2000);
	close(fd);
	fd = side_connect(addr, 2000);
	side_send(fd, "GET / HTTP/1.0\r\n\r\n", 18, 1000);
	close(fd);
	fd = side_connect(addr, 2000);
	side_send(fd, "hellp", 5, 1000); /* one byte off */
	for (i = 0; i < SIDE_MAX_PENDING + 2; i++)
		silent[i] = side_connect(addr, 2000);
	fd = side_connect(addr, 2000);
	if (fd < 0 || side_send(fd, "hello", 5, 1000) || side_recv(fd, buf, 2, 5000))
		return 1;
	for (i = 0; i < SIDE_MAX_PENDING + 2; i++)
		close(silent[i]);
	return strcmp(buf, "ok") ? 1 : 0;
}

/* The server waits for the connection that greets it and drops every other one. */
static void test_accept_greeted(void **state)
{
	char path[64], addr[80];
	int lfd, fd, status;
	pid_t pid;

	snprintf(path, sizeof(path), "/tmp/rn-tool-greet.%d.sock", getpid());
	snprintf(addr, sizeof(addr), "unix:%s", path);
	unlink(path);
	lfd = side_listen(addr);
	assert_true(lfd >= 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid)
		_exit(greeted_client(addr));
	fd = side_accept_greeted(lfd, "hello", 5, 10000);
	assert_true(fd >= 0);
	assert_int_equal(side_send(fd, "ok", 2, 1000), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(fd);
	/* nobody greets: a timeout, not a stray taken for the peer */
	fd = side_connect(addr, 1000);
	assert_int_equal(side_accept_greeted(lfd, "hello", 5, 200), -ETIMEDOUT);
	close(fd);
	close(lfd);
	unlink(path);
}

static void test_cli_numbers(void **state)
{
	long v = 0;
	int i = 0;
	size_t sz = 0;

	assert_int_equal(rn_cli_long("7", 1, 10, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(rn_cli_long("-3", -5, 10, &v), 0);
	assert_int_equal(v, -3);
	assert_int_equal(rn_cli_long("0", 1, 10, &v), -EINVAL);
	assert_int_equal(rn_cli_long("11", 1, 10, &v), -EINVAL);
	assert_int_equal(rn_cli_long("7x", 1, 10, &v), -EINVAL);
	assert_int_equal(rn_cli_long("", 1, 10, &v), -EINVAL);
	assert_int_equal(rn_cli_long(" 7", 1, 10, &v), -EINVAL);
	assert_int_equal(rn_cli_long("99999999999999999999", 1, 10, &v), -EINVAL);
	assert_int_equal(rn_cli_int("65535", 1, 65535, &i), 0);
	assert_int_equal(i, 65535);
	assert_int_equal(rn_cli_int("65536", 1, 65535, &i), -EINVAL);

	assert_int_equal(rn_cli_size("4K", 1u << 30, &sz), 0);
	assert_int_equal(sz, 4096);
	assert_int_equal(rn_cli_size("1g", 1u << 30, &sz), 0);
	assert_int_equal(sz, 1u << 30);
	assert_int_equal(rn_cli_size("0", 1u << 30, &sz), 0);
	assert_int_equal(sz, 0);
	assert_int_equal(rn_cli_size("2G", 1u << 30, &sz), -EINVAL);
	assert_int_equal(rn_cli_size("1Q", 1u << 30, &sz), -EINVAL);
	assert_int_equal(rn_cli_size("-1", 1u << 30, &sz), -EINVAL);
	assert_int_equal(rn_cli_size("K", 1u << 30, &sz), -EINVAL);
	assert_int_equal(rn_cli_size("1KK", 1u << 30, &sz), -EINVAL);
	assert_int_equal(rn_cli_size("18446744073709551615K", ~0ull, &sz), -EINVAL);
}

static void test_cli_json_error(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	rn_cli_json_error(f, RN_EXIT_USAGE, "bad \"x\"\\\n\001");
	fclose(f);
	assert_string_equal(buf, "{\"error\": {\"code\": 2, \"kind\": \"usage\", \"message\": "
				 "\"bad \\\"x\\\"\\\\\\n\\u0001\"}}\n");
	free(buf);
	assert_string_equal(rn_exit_kind(RN_EXIT_NODEV), "no-device");
	assert_string_equal(rn_exit_kind(RN_EXIT_FAIL), "failure");
}

static void test_cli_wants_json(void **state)
{
	char x[] = "x", peer[] = "peer", ip[] = "1.2.3.4", json[] = "--json", j[] = "-j",
	     dd[] = "--";
	char *a[] = { x, peer, ip, json, NULL };
	char *b[] = { x, j, NULL };
	char *c[] = { x, dd, json, NULL };

	assert_true(rn_cli_wants_json(4, a, 0));
	assert_true(rn_cli_wants_json(2, b, 1));
	assert_false(rn_cli_wants_json(2, b, 0));
	assert_false(rn_cli_wants_json(3, c, 1));
}

/* A plugin's logger call as the ABI types it: no format attribute, so nothing checks it. */
static void (*volatile plugin_log)(ncclDebugLogLevel, unsigned long, const char *, int,
				   const char *, ...) = tool_logger;

static int fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = tool_vformat(buf, len, f, ap);
	va_end(ap);
	return n;
}

/* A plugin's malformed format reaches the logger: bad %s pointers, %n, missing arguments. */
static void test_logger_bad_format(void **state)
{
	char buf[256], want[256];
	int n = 7;

	tool_log_set_level(NCCL_LOG_NONE); /* WARNs are still recorded for tool_last_warn */
	plugin_log(NCCL_LOG_WARN, NCCL_INIT, "x.c", 1, "dev %s: %d", (const char *)16, 3);
	assert_string_equal(tool_last_warn(), "dev (bad pointer): 3");
	plugin_log(NCCL_LOG_WARN, NCCL_INIT, "x.c", 1, "null %s, end", (const char *)NULL);
	assert_string_equal(tool_last_warn(), "null (null), end");
	/* what a missing argument reads (garbage, or a page we may not read): no fault (the
	 * call with arguments really missing is test/abi/driver_fakeplugin.t's: ASan here
	 * would report the read of the caller's stack itself) */
	plugin_log(NCCL_LOG_WARN, NCCL_INIT, "x.c", 1, "%s|%s|%.3s", (const char *)-1L,
		   (const char *)4096, (const char *)"abcdef");
	assert_string_equal(tool_last_warn(), "(bad pointer)|(bad pointer)|abc");
	/* the plugin logs its whole message as one %s: a long WARN (a diagnosis with its fix
	 * parts) comes out whole, not cut at one conversion's buffer */
	{
		char longmsg[1501];

		memset(longmsg, 'a', 1499);
		longmsg[1499] = 'Z';
		longmsg[1500] = '\0';
		plugin_log(NCCL_LOG_WARN, NCCL_INIT, "x.c", 1, "%s", longmsg);
		assert_int_equal(strlen(tool_last_warn()), 1500);
		assert_int_equal(tool_last_warn()[1499], 'Z');
	}
	plugin_log(NCCL_LOG_WARN, NCCL_INIT, "x.c", 1, "count%n", &n);
	assert_int_equal(n, 7);
	assert_string_equal(tool_last_warn(), "count");
	/* well-formed formats print as vsnprintf prints them */
	fmt(buf, sizeof(buf), "%5.2s|%-4d|%lld|%zu|%.3f|%x|%%|%08lx|%c|%*d|%.*s|%p", "abc", 42,
	    -5ll, (size_t)9, 1.5, 255u, 0xbeefUL, 'q', 4, 7, 2, "xyz", (void *)0x10);
	snprintf(want, sizeof(want), "%5.2s|%-4d|%lld|%zu|%.3f|%x|%%|%08lx|%c|%*d|%.*s|%p", "abc",
		 42, -5ll, (size_t)9, 1.5, 255u, 0xbeefUL, 'q', 4, 7, 2, "xyz", (void *)0x10);
	assert_string_equal(buf, want);
	/* unknown conversions stay as text; truncation keeps the NUL */
	fmt(buf, sizeof(buf), "a %y b %");
	assert_string_equal(buf, "a %y b ");
	assert_int_equal(fmt(buf, 4, "abcdef"), 6);
	assert_string_equal(buf, "abc");
	tool_log_set_level(NCCL_LOG_WARN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_addr_check),      cmocka_unit_test(test_tcp_listen_frees),
		cmocka_unit_test(test_unix_round_trip), cmocka_unit_test(test_accept_greeted),
		cmocka_unit_test(test_cli_numbers),     cmocka_unit_test(test_cli_json_error),
		cmocka_unit_test(test_cli_wants_json),  cmocka_unit_test(test_logger_bad_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
