/* SPDX-License-Identifier: MIT */
/*
 * The doctor's pieces a unit test does not #include, as no-ops, for tests that #include
 * some of the files in src/doctor/ (doctor_host.c calls into all of them). Before including this,
 * define what the test has itself: STUB_DOCTOR_HAS_RDMA (doctor_rdma.c), STUB_DOCTOR_HAS_PROM
 * (doctor_prom.c), STUB_DOCTOR_HAS_K8S (doctor_k8s.c).
 */
#ifndef STUB_DOCTOR_H
#define STUB_DOCTOR_H

#ifndef STUB_DOCTOR_HAS_RDMA
void rn_probe_release(void)
{
}
#endif

#ifndef STUB_DOCTOR_HAS_PROM
int rn_doctor_prom(struct rn_doctor *d, const char *textfile, int gather_err)
{
	(void)d, (void)textfile, (void)gather_err;
	return 0;
}
#endif

#ifndef STUB_DOCTOR_HAS_K8S
int rn_doctor_cni(struct rn_doctor *d, int gather_err)
{
	(void)d, (void)gather_err;
	return 0;
}

int rn_doctor_nfd(struct rn_doctor *d, const char *file, int gather_err)
{
	(void)d, (void)file, (void)gather_err;
	return 0;
}
#endif

#endif /* STUB_DOCTOR_H */
