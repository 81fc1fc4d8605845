// SPDX-License-Identifier: MIT
/*
 * rn_nic_own_device (src/nic.c): in rdma's shared netns mode a pod sees the node's devices
 * through its own interfaces' GIDs beside the devices made in the pod. The node's device
 * on net1 yields to net1's own device; one on an interface with none of its own, a
 * pod's own device, a namesake of another ifindex and an own device with no GID do not.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "rn_nic.h"

static void nic(struct rn_nic *n, const char *ibdev, const char *netdev, int ifindex,
		const char *port_netdev, int gid_index)
{
	memset(n, 0, sizeof(*n));
	snprintf(n->ibdev, sizeof(n->ibdev), "%s", ibdev);
	snprintf(n->netdev, sizeof(n->netdev), "%s", netdev);
	snprintf(n->port_netdev, sizeof(n->port_netdev), "%s", port_netdev);
	n->port = 1;
	n->ifindex = ifindex;
	n->gid_index = gid_index;
}

static void test_node_device_yields(void **state)
{
	struct rn_nic a[6];
	const struct rn_nic *p[6];
	int i;

	nic(&a[0], "rxe0", "net1", 3, "eth0", 2); /* the node's, through net1's GID */
	nic(&a[1], "rxe1", "net2", 4, "eth1", 2); /* the node's; net2's own has no GID */
	nic(&a[2], "rxa0", "net1", 3, "", 1);     /* net1's own */
	nic(&a[3], "rxa1", "net2", 4, "", -1);
	nic(&a[4], "rxe2", "eth0", 2, "eth2", 1); /* the pod's eth0: no device of its own */
	nic(&a[5], "rxb0", "net1", 7, "", 1);     /* a namesake in another pod's numbering */
	for (i = 0; i < 6; i++)
		p[i] = &a[i];
	assert_int_equal(rn_nic_own_device(p, 6, 0), 2);
	assert_int_equal(rn_nic_own_device(p, 6, 1), -1);
	assert_int_equal(rn_nic_own_device(p, 6, 2), -1);
	assert_int_equal(rn_nic_own_device(p, 6, 3), -1);
	assert_int_equal(rn_nic_own_device(p, 6, 4), -1);
	assert_int_equal(rn_nic_own_device(p, 6, 5), -1);
	/* net1's own out of the list: the node's is kept */
	assert_int_equal(rn_nic_own_device(p, 2, 0), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_node_device_yields),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
