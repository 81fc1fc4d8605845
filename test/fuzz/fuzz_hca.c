// SPDX-License-Identifier: MIT
/*
 * NCCL_IB_HCA matching on arbitrary specs and names: no crash, no overread, and
 * '^' is exactly the complement of the same list without it.
 * Input: spec '\n' device name '\n' port byte.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rn_dev.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char spec[300], neg[302], name[64];
	const uint8_t *nl = memchr(data, '\n', size), *nl2;
	size_t sl, nlen;
	int port;

	if (!nl)
		return 0;
	sl = (size_t)(nl - data);
	nl2 = memchr(nl + 1, '\n', size - sl - 1);
	if (!nl2 || sl >= sizeof(spec))
		return 0;
	nlen = (size_t)(nl2 - nl - 1);
	if (nlen >= sizeof(name))
		return 0;
	memcpy(spec, data, sl);
	spec[sl] = '\0';
	memcpy(name, nl + 1, nlen);
	name[nlen] = '\0';
	port = nl2 + 1 < data + size ? nl2[1] : 1;
	if (strlen(spec) != sl || spec[0] == '^')
		return 0;
	neg[0] = '^';
	strcpy(neg + 1, spec);
	/* an empty list selects all, and excluding nothing also selects all */
	if (spec[0] && rn_hca_match(spec, name, port) == rn_hca_match(neg, name, port))
		abort();
	if (!spec[0] && !rn_hca_match(spec, name, port))
		abort();
	return 0;
}
