// SPDX-License-Identifier: MIT
/*
 * A link that flaps: carrier_down_count counts the netdev's lost carriers since it was
 * made, which is at most since boot. Within a day of boot that is the 24 h window the
 * health checks use; later only the average over the uptime is known, and that is what
 * the finding says (never a window we did not see).
 */
#include <stdio.h>
#include <stdlib.h>

#include "rn_flap.h"
#include "rn_nic.h"
#include "rn_sys.h"

#define DAY_S 86400.0

static int read_double(double *out, const char *path)
{
	char buf[64], *end;

	if (rn_sys.read(path, buf, sizeof(buf)))
		return -1;
	*out = strtod(buf, &end);
	return end == buf ? -1 : 0;
}

void rn_flap_read(const struct rn_nic *nic, struct rn_flap_facts *f)
{
	f->carrier_changes = f->carrier_down = f->link_downed = -1;
	if (nic->netdev[0]) {
		if (rn_sys_read_long(&f->carrier_changes, "/sys/class/net/%s/carrier_changes",
				     nic->netdev))
			f->carrier_changes = -1;
		if (rn_sys_read_long(&f->carrier_down, "/sys/class/net/%s/carrier_down_count",
				     nic->netdev))
			f->carrier_down = -1;
	}
	/* the PMA's where the driver answers it, else the driver's own (rxe) */
	if (nic->ibdev[0] &&
	    rn_sys_read_long(&f->link_downed, "/sys/class/infiniband/%s/ports/%d/%s", nic->ibdev,
			     nic->port, "counters/link_downed") &&
	    rn_sys_read_long(&f->link_downed, "/sys/class/infiniband/%s/ports/%d/%s", nic->ibdev,
			     nic->port, "hw_counters/link_downed"))
		f->link_downed = -1;
}

void rn_flap_assess(struct rn_nic *nic)
{
	struct rn_vars v = RN_VARS_INIT;
	struct rn_flap_facts f;
	double up, per_day;
	long down;

	if (!nic->netdev[0] ||
	    rn_sys_read_long(&down, "/sys/class/net/%s/carrier_down_count", nic->netdev))
		return;
	/* the rest only for a finding: init reads one file per NIC, not five */
	if (down <= RN_FLAP_MAX_PER_DAY || read_double(&up, "/proc/uptime") || up <= 0)
		return;
	rn_flap_read(nic, &f);
	per_day = up <= DAY_S ? (double)down : (double)down * DAY_S / up;
	if (down <= RN_FLAP_MAX_PER_DAY || per_day <= RN_FLAP_MAX_PER_DAY)
		return;
	rn_vars_set(&v, "nic", "%s:%d", nic->ibdev[0] ? nic->ibdev : nic->netdev, nic->port);
	rn_vars_set(&v, "dev", "%s", nic->netdev);
	rn_vars_set(&v, "count", "%ld", down);
	if (up <= DAY_S)
		rn_vars_set(&v, "window", "in the %.1f h since boot", up / 3600);
	else
		rn_vars_set(&v, "window", "in the %.1f days since boot, %.1f per 24 h on average",
			    up / DAY_S, per_day);
	if (f.link_downed >= 0)
		rn_vars_set(&v, "extra", "; the port counted %ld link downs", f.link_downed);
	else
		rn_vars_set(&v, "extra", "%s", "");
	rn_nic_add_finding(nic, RN_CAUSE_LINK_FLAPPING, &v);
	rn_vars_free(&v);
}
