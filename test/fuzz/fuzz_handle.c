// SPDX-License-Identifier: MIT
/*
 * The listen handle parser: any 0..256 bytes. A handle that decodes must encode
 * back to a handle that decodes to the same thing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rn_net.h"
#include "rn_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rn_handle_info h, h2;
	uint8_t buf[RN_HANDLE_SIZE];

	if (rn_handle_decode(data, size, &h))
		return 0;
	if (rn_handle_encode(&h, buf, sizeof(buf)))
		abort();
	if (rn_handle_decode(buf, sizeof(buf), &h2) || memcmp(&h, &h2, sizeof(h)))
		abort();
	return 0;
}
