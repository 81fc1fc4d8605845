/* SPDX-License-Identifier: MIT */
/*
 * libibverbs' providers, loaded for the devices present and no others.
 *
 * The first ibv_get_device_list() of a process matches the kernel's uverbs devices
 * against the providers already registered, and only when one is left unmatched does it
 * dlopen every provider /etc/libibverbs.d configures (17 on Debian 12). Those dlopens are
 * most of a first init: on the Soft-RoCE bed 50-150 ms of it, against 6-14 ms with the one
 * provider the devices need loaded beforehand. So before the first list we load the
 * providers the devices name, by their ibdev name ("mlx5_0", "rxe0") or their kernel
 * driver ("mlx5_core"), and libibverbs skips the rest. Loading a provider only registers
 * it; libibverbs still does every match itself, so a wrong guess costs one dlopen and a
 * device no configured provider names leaves the plan empty: libibverbs then scans as it
 * would without us. RDMAV_DRIVERS / IBV_DRIVERS (a user's own providers, which libibverbs
 * tries first) also leave the plan empty.
 */
#ifndef RN_PROVIDER_H
#define RN_PROVIDER_H

#define RN_PROVIDER_MAX 8
#define RN_PROVIDER_NAME 32

struct rn_provider_plan {
	int n;           /* providers to load; 0: leave libibverbs its own scan */
	char name[RN_PROVIDER_MAX][RN_PROVIDER_NAME];
	int ndevs;       /* uverbs devices seen */
	int nconfigured; /* providers /etc/libibverbs.d names */
	char why[160];   /* when n is 0: why, for the INFO line */
};

/*
 * Which providers the host's devices need, read through rn_sys (the environment, the
 * provider configuration, /sys/class/infiniband_verbs). Never fails: a plan that cannot
 * be made is an empty one with its reason.
 */
void rn_provider_plan(struct rn_provider_plan *plan);

/*
 * Make the plan and dlopen its providers from @dir (libibverbs' provider directory), with
 * an INFO line saying which, or why none. Call it once, before the process's first list.
 */
void rn_provider_preload(const char *dir);

#endif /* RN_PROVIDER_H */
