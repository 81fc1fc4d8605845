// SPDX-License-Identifier: MIT
/*
 * Listen handles as another rank sends them: any bytes.
 * 1. The parser on 0..256 bytes: a handle that decodes must encode back to a handle
 *    that decodes to the same thing.
 * 2. A full handle through rn_connect, called again as NCCL does, to a comm or a clean
 *    error within the connect timeout: never a crash, a hang or a leak. The private
 *    half (bytes 64..127) is the fuzzer's, cookie included: handle bytes are data,
 *    never a pointer. The address is rewritten to this process's listener or to a
 *    closed loopback port (first byte: bit 1), so nothing leaves 127.0.0.1; bit 0
 *    makes the header valid and bit 2 the nonce right, to get past the first checks.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rn_clock.h"
#include "fuzz_fx.h"
#include "rn_net.h"
#include "rn_wire.h"

#define COOKIE 0x524e4353434f4e4eull /* what rn_connect keeps in the private half */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_parser(const uint8_t *data, size_t size)
{
	struct rn_handle_info h, h2;
	uint8_t buf[RN_HANDLE_SIZE];

	if (rn_handle_decode(data, size, &h))
		return;
	if (rn_handle_encode(&h, buf, sizeof(buf)))
		abort();
	if (rn_handle_decode(buf, sizeof(buf), &h2) || memcmp(&h, &h2, sizeof(h)))
		abort();
}

static void check_connect(const uint8_t *data, size_t size)
{
	static struct fx f;
	unsigned char lh[RN_HANDLE_SIZE], h[RN_HANDLE_SIZE];
	struct rn_listen_comm *lc;
	struct rn_send_comm *sc = NULL;
	struct rn_recv_comm *rc = NULL;
	uint8_t mode;
	uint64_t t0;
	int ret = 0, i;

	if (size < 1)
		return;
	mode = data[0];
	memset(h, 0, sizeof(h));
	memcpy(h, data + 1, size - 1 < sizeof(h) ? size - 1 : sizeof(h));
	fz_setup(&f, 300);
	if (rn_listen(&f.eng, 1, lh, &lc))
		abort();
	if (mode & 1)
		memcpy(h, lh, 6);                  /* magic, version */
	if (mode & 2) {
		memcpy(h + 6, lh + 6, 22);         /* family, port, address: our listener */
	} else {
		memset(h + 6, 0, 22);              /* 127.0.0.1:1, nobody there */
		h[6] = 4;
		h[9] = 1;
		h[12] = 127;
		h[15] = 1;
	}
	if (mode & 4)
		memcpy(h + 28, lh + 28, 8);        /* the listener's nonce */
	if (mode & 8)
		memcpy(h + RN_HANDLE_PUBLIC, &(uint64_t){ COOKIE }, 8);
	t0 = rn_now_ns();
	while (!sc && !ret) {
		ret = rn_connect(&f.eng, 0, h, 0, &sc);
		fz_check_ret(ret);
		if (!rc) {
			fz_check_ret(rn_accept(lc, &rc));
		}
		if (rn_now_ns() - t0 > 3000000000ull)
			abort(); /* past the 300 ms connect timeout: a hang */
	}
	/* a connect that started and ended leaves nothing in the handle's private half */
	if (sc || ret == -ECONNREFUSED || ret == -ECONNRESET || ret == -ETIMEDOUT)
		for (i = RN_HANDLE_PUBLIC; i < RN_HANDLE_PUBLIC + 16; i++)
			if (h[i])
				abort();
	/* the accept side finishes too (its comm, or the drop of a stray) */
	for (i = 0; i < 2000 && sc && !rc; i++)
		fz_check_ret(rn_accept(lc, &rc));
	rn_close_send(sc);
	rn_close_recv(rc);
	rn_close_listen(lc);
	fz_teardown(&f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_parser(data, size);
	check_connect(data, size);
	return 0;
}
