// SPDX-License-Identifier: MIT
/*
 * Which libibverbs providers the host's devices need, and loading only those before the
 * first device list (see rn_provider.h for why).
 */
#include <ctype.h>
#include <dirent.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rn_compiler.h"
#include "rn_log.h"
#include "rn_provider.h"
#include "rn_sys.h"

/* rdma-core's configuration directory (IBV_CONFIG_DIR) on every distribution we know. */
#define CONFIG_DIR "/etc/libibverbs.d"
#define UVERBS_DIR "/sys/class/infiniband_verbs"
#define MAX_CONFIGURED 64

struct config {
	int n;
	char name[MAX_CONFIGURED][RN_PROVIDER_NAME];
};

/*
 * "driver mlx5" lines. A name with a '/' is a provider outside libibverbs' directory:
 * not ours to guess at, so it is no candidate (a device only it serves leaves the plan
 * empty).
 */
static void config_parse(struct config *cfg, char *text)
{
	char *line, *save = NULL;

	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char word[16], name[RN_PROVIDER_NAME];

		if (sscanf(line, " %15s %31s", word, name) != 2 || strcmp(word, "driver") ||
		    strchr(name, '/') || cfg->n >= MAX_CONFIGURED)
			continue;
		snprintf(cfg->name[cfg->n++], RN_PROVIDER_NAME, "%s", name);
	}
}

static int config_file(const char *entry, void *arg)
{
	size_t len = strlen(entry);
	char path[PATH_MAX], text[1024];

	if (len < 7 || strcmp(entry + len - 7, ".driver"))
		return 0;
	snprintf(path, sizeof(path), CONFIG_DIR "/%s", entry);
	if (!rn_sys.read(path, text, sizeof(text)))
		config_parse(arg, text);
	return 0;
}

/* @s names provider @p: "mlx5_0", "mlx5_core" and "rxe0" do; "mlx5_0" is not "mlx4"'s. */
static int names(const char *s, const char *p)
{
	size_t n = strlen(p);

	return *s && !strncmp(s, p, n) && !isalpha((unsigned char)s[n]);
}

struct scan {
	const struct config *cfg;
	struct rn_provider_plan *plan;
	int unmatched; /* a device no configured provider names, or too many: stop */
};

/* -1 when the plan is full: too many to guess at, libibverbs scans */
static int plan_add(struct rn_provider_plan *plan, const char *name)
{
	int i;

	for (i = 0; i < plan->n; i++)
		if (!strcmp(plan->name[i], name))
			return 0;
	if (plan->n >= RN_PROVIDER_MAX)
		return -1;
	snprintf(plan->name[plan->n++], RN_PROVIDER_NAME, "%s", name);
	return 0;
}

/* "4: RNIC" */
static const char *soft_driver(const char *ibdev)
{
	char type[32];

	if (!rn_sys_readf(type, sizeof(type), "/sys/class/infiniband/%s/node_type", ibdev) &&
	    !strncmp(type, "4:", 2))
		return "siw";
	return "rxe";
}

static int uverbs_dev(const char *entry, void *arg)
{
	struct scan *s = arg;
	char path[PATH_MAX], ibdev[64], link[PATH_MAX];
	const char *driver = "";
	int i, found = 0;

	if (strncmp(entry, "uverbs", 6))
		return 0;
	snprintf(path, sizeof(path), UVERBS_DIR "/%s/ibdev", entry);
	if (rn_sys.read(path, ibdev, sizeof(ibdev)))
		return 0; /* gone meanwhile: libibverbs will not list it either */
	s->plan->ndevs++;
	/*
	 * The kernel driver of the device behind it (a PCI or auxiliary device). The
	 * software devices have none but a "parent" netdev, whatever name `rdma link add`
	 * gave them: Soft-RoCE is a CA, siw an RNIC.
	 */
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/driver", ibdev);
	if (!rn_sys.readlink(path, link, sizeof(link)))
		driver = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
	else if (!rn_sys_readf(link, sizeof(link), "/sys/class/infiniband/%s/parent", ibdev))
		driver = soft_driver(ibdev);
	for (i = 0; i < s->cfg->n; i++) {
		if (!names(ibdev, s->cfg->name[i]) && !names(driver, s->cfg->name[i]))
			continue;
		if (plan_add(s->plan, s->cfg->name[i])) {
			snprintf(s->plan->why, sizeof(s->plan->why),
				 "the devices name more than %d providers", RN_PROVIDER_MAX);
			s->unmatched = 1;
			return 1;
		}
		found = 1;
	}
	if (found)
		return 0;
	snprintf(s->plan->why, sizeof(s->plan->why), "%s%s%.40s%s names none of the %d configured",
		 ibdev, *driver ? " (driver " : "", driver, *driver ? ")" : "", s->cfg->n);
	s->unmatched = 1;
	return 1;
}

void rn_provider_plan(struct rn_provider_plan *plan)
{
	struct config cfg = { 0 };
	struct scan s = { &cfg, plan, 0 };
	const char *env = NULL;

	if (getenv("RDMAV_DRIVERS"))
		env = "RDMAV_DRIVERS";
	else if (getenv("IBV_DRIVERS"))
		env = "IBV_DRIVERS";

	memset(plan, 0, sizeof(*plan));
	if (env) {
		/* The user's own providers, which libibverbs registers first: keep its order. */
		snprintf(plan->why, sizeof(plan->why), "%s is set", env);
		return;
	}
	if (rn_sys.list(CONFIG_DIR, config_file, &cfg) || !cfg.n) {
		snprintf(plan->why, sizeof(plan->why), "no providers configured in " CONFIG_DIR);
		return;
	}
	plan->nconfigured = cfg.n;
	if (rn_sys.list(UVERBS_DIR, uverbs_dev, &s) || !plan->ndevs) {
		snprintf(plan->why, sizeof(plan->why), "no uverbs device in " UVERBS_DIR);
		plan->n = 0;
		return;
	}
	if (s.unmatched)
		plan->n = 0;
}

/* lib<name>-rdmav<ABI>.so in @dir, as libibverbs' own load_driver() names it. */
static int provider_file(const char *entry, const char *name)
{
	size_t n = strlen(name), len = strlen(entry);

	return !strncmp(entry, "lib", 3) && !strncmp(entry + 3, name, n) &&
	       !strncmp(entry + 3 + n, "-rdmav", 6) && isdigit((unsigned char)entry[9 + n]) &&
	       !strcmp(entry + len - 3, ".so");
}

static int load(const char *dir, const char *name)
{
	char path[PATH_MAX] = "";
	struct dirent *de;
	DIR *d;

	/* opendir, not rn_sys: the library loads from the live system whatever root the
	 * sysfs reads have */
	d = opendir(dir);
	while (d && (de = readdir(d)))
		if (provider_file(de->d_name, name)) {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			break;
		}
	if (d)
		closedir(d);
	if (!path[0]) {
		rn_info(RN_SUB_INIT, RN_PFX "libibverbs provider %s: no lib%s-rdmav*.so in %s",
			name, name, dir);
		return -1;
	}
	/* Never closed, as libibverbs never closes its own: its devices point into it. */
	if (!dlopen(path, RTLD_NOW)) {
		rn_info(RN_SUB_INIT, RN_PFX "libibverbs provider %s: %s", name, dlerror());
		return -1;
	}
	return 0;
}

void rn_provider_preload(const char *dir)
{
	struct rn_provider_plan plan;
	char list[RN_PROVIDER_MAX * (RN_PROVIDER_NAME + 1)] = "";
	int i, loaded = 0;

	rn_provider_plan(&plan);
	for (i = 0; i < plan.n; i++)
		if (!load(dir, plan.name[i])) {
			loaded++;
			strcat(strcat(list, *list ? "," : ""), plan.name[i]);
		}
	if (loaded < plan.n)
		/* a device is left unmatched: libibverbs loads the rest itself */
		snprintf(plan.why, sizeof(plan.why), "%d of %d providers did not load",
			 plan.n - loaded, plan.n);
	if (loaded && loaded == plan.n)
		rn_info(RN_SUB_INIT,
			RN_PFX "libibverbs providers: %s loaded for %d device%s; the other %d "
			       "configured are left unloaded",
			list, plan.ndevs, plan.ndevs == 1 ? "" : "s", plan.nconfigured - loaded);
	else
		rn_info(RN_SUB_INIT,
			RN_PFX "libibverbs providers: libibverbs loads all it has "
			       "configured (%s)",
			plan.why);
}
