// SPDX-License-Identifier: MIT
/*
 * Real NCCL with the plugin (test/gpu/run drives it). NCCL and the CUDA runtime are
 * opened with dlopen, so this builds with a plain C compiler and runs against whichever
 * libnccl.so.2 the machine has (CUDA's, the system's, PyTorch's nvidia-nccl-cu* wheel):
 *
 *   nccl_check one                       a one-rank communicator: NCCL loads the net
 *                                        plugin and calls init/devices/getProperties
 *   nccl_check allreduce RANK NRANKS IDFILE [SIZES...]
 *                                        one rank of an all-reduce (float sum), each size
 *                                        checked, NCCL's bus bandwidth printed; rank 0
 *                                        writes the unique id to IDFILE, the others wait
 *
 * The few NCCL and CUDA declarations are ours (their ABI has been stable since NCCL 2.0
 * and CUDA 4): no header is needed. Environment: NCCL_CHECK_LIB (default libnccl.so.2),
 * NCCL_CHECK_CUDART (default: libcudart.so, .so.13, .so.12, .so.11.0), NCCL_CHECK_ITERS.
 * Exit: 0 pass, 1 fail, 2 usage or setup (library, GPU) error.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct { char internal[128]; } nccl_unique_id;
typedef void *nccl_comm;
typedef void *cuda_stream;

enum { NCCL_FLOAT32 = 7, NCCL_SUM = 0 };
enum { CUDA_MEMCPY_H2D = 1, CUDA_MEMCPY_D2H = 2 };

static struct {
	int (*get_version)(int *);
	int (*get_unique_id)(nccl_unique_id *);
	int (*comm_init_rank)(nccl_comm *, int, nccl_unique_id, int);
	int (*all_reduce)(const void *, void *, size_t, int, int, nccl_comm, cuda_stream);
	int (*comm_destroy)(nccl_comm);
	const char *(*get_error_string)(int);
	int (*set_device)(int);
	int (*get_device_count)(int *);
	int (*malloc_)(void **, size_t);
	int (*free_)(void *);
	int (*memcpy_)(void *, const void *, size_t, int);
	int (*stream_create)(cuda_stream *);
	int (*stream_sync)(cuda_stream);
	const char *(*cuda_error_string)(int);
} api;

static void *sym(void *lib, const char *name, const char *libname)
{
	void *p = dlsym(lib, name);

	if (!p) {
		fprintf(stderr, "nccl_check: %s has no %s\n", libname, name);
		exit(2);
	}
	return p;
}

static void load(void)
{
	static const char *cudarts[] = { "libcudart.so", "libcudart.so.13", "libcudart.so.12",
					 "libcudart.so.11.0" };
	const char *nl = getenv("NCCL_CHECK_LIB"), *cl = getenv("NCCL_CHECK_CUDART");
	void *nccl, *cuda = NULL;
	size_t i;

	if (!nl || !*nl)
		nl = "libnccl.so.2";
	if (cl && *cl) {
		cuda = dlopen(cl, RTLD_NOW | RTLD_GLOBAL);
	} else {
		for (i = 0; i < sizeof(cudarts) / sizeof(cudarts[0]) && !cuda; i++)
			cuda = dlopen(cl = cudarts[i], RTLD_NOW | RTLD_GLOBAL);
	}
	if (!cuda) {
		fprintf(stderr, "nccl_check: cannot load the CUDA runtime: %s (set NCCL_CHECK_CUDART)\n",
			dlerror());
		exit(2);
	}
	nccl = dlopen(nl, RTLD_NOW | RTLD_GLOBAL);
	if (!nccl) {
		fprintf(stderr, "nccl_check: cannot load %s: %s (set NCCL_CHECK_LIB)\n", nl, dlerror());
		exit(2);
	}
	*(void **)&api.get_version = sym(nccl, "ncclGetVersion", nl);
	*(void **)&api.get_unique_id = sym(nccl, "ncclGetUniqueId", nl);
	*(void **)&api.comm_init_rank = sym(nccl, "ncclCommInitRank", nl);
	*(void **)&api.all_reduce = sym(nccl, "ncclAllReduce", nl);
	*(void **)&api.comm_destroy = sym(nccl, "ncclCommDestroy", nl);
	*(void **)&api.get_error_string = sym(nccl, "ncclGetErrorString", nl);
	*(void **)&api.set_device = sym(cuda, "cudaSetDevice", cl);
	*(void **)&api.get_device_count = sym(cuda, "cudaGetDeviceCount", cl);
	*(void **)&api.malloc_ = sym(cuda, "cudaMalloc", cl);
	*(void **)&api.free_ = sym(cuda, "cudaFree", cl);
	*(void **)&api.memcpy_ = sym(cuda, "cudaMemcpy", cl);
	*(void **)&api.stream_create = sym(cuda, "cudaStreamCreate", cl);
	*(void **)&api.stream_sync = sym(cuda, "cudaStreamSynchronize", cl);
	*(void **)&api.cuda_error_string = sym(cuda, "cudaGetErrorString", cl);
}

#define NCCL(call)                                                                          \
	do {                                                                                \
		int r_ = (call);                                                            \
		if (r_) {                                                                   \
			fprintf(stderr, "nccl_check: %s: %s (%d)\n", #call,                  \
				api.get_error_string(r_), r_);                              \
			return 1;                                                           \
		}                                                                           \
	} while (0)
#define CUDA(call)                                                                          \
	do {                                                                                \
		int r_ = (call);                                                            \
		if (r_) {                                                                   \
			fprintf(stderr, "nccl_check: %s: %s (%d)\n", #call,                  \
				api.cuda_error_string(r_), r_);                             \
			return 2;                                                           \
		}                                                                           \
	} while (0)

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int gpu_setup(void)
{
	int n = 0, v = 0;

	CUDA(api.get_device_count(&n));
	if (n < 1) {
		fprintf(stderr, "nccl_check: no CUDA device\n");
		return 2;
	}
	CUDA(api.set_device(0));
	api.get_version(&v);
	printf("nccl_check: NCCL %d.%d.%d, %d GPU%s\n", v / 10000, v / 100 % 100, v % 100, n,
	       n == 1 ? "" : "s");
	return 0;
}

/* One rank: NCCL initialises the net plugin for every communicator. */
static int one(void)
{
	nccl_unique_id id;
	nccl_comm comm;
	cuda_stream st;
	float *buf, h[4] = { 1, 2, 3, 4 }, back[4];
	int ret = gpu_setup(), i;

	if (ret)
		return ret;
	NCCL(api.get_unique_id(&id));
	NCCL(api.comm_init_rank(&comm, 1, id, 0));
	CUDA(api.stream_create(&st));
	CUDA(api.malloc_((void **)&buf, sizeof(h)));
	CUDA(api.memcpy_(buf, h, sizeof(h), CUDA_MEMCPY_H2D));
	NCCL(api.all_reduce(buf, buf, 4, NCCL_FLOAT32, NCCL_SUM, comm, st));
	CUDA(api.stream_sync(st));
	CUDA(api.memcpy_(back, buf, sizeof(back), CUDA_MEMCPY_D2H));
	for (i = 0; i < 4; i++)
		if (back[i] != h[i]) {
			fprintf(stderr, "nccl_check: one-rank all-reduce changed element %d\n", i);
			return 1;
		}
	api.free_(buf);
	NCCL(api.comm_destroy(comm));
	printf("nccl_check: one-rank communicator: init, all-reduce and destroy ok\n");
	return 0;
}

static int write_id(const char *path, const nccl_unique_id *id)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "wb");
	if (!f || fwrite(id, sizeof(*id), 1, f) != 1 || fclose(f) || rename(tmp, path)) {
		fprintf(stderr, "nccl_check: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int read_id(const char *path, nccl_unique_id *id, int wait_s)
{
	double end = now_s() + wait_s;
	FILE *f;

	while (now_s() < end) {
		f = fopen(path, "rb");
		if (f) {
			size_t n = fread(id, sizeof(*id), 1, f);

			fclose(f);
			if (n == 1)
				return 0;
		}
		usleep(100000);
	}
	fprintf(stderr, "nccl_check: no unique id in %s after %d s (rank 0 did not start?)\n", path,
		wait_s);
	return -1;
}

static int allreduce(int rank, int nranks, const char *idfile, int nsizes, char **sizes)
{
	static const size_t def[] = { 8, 65536, 1 << 20, 16 << 20 };
	const char *it_env = getenv("NCCL_CHECK_ITERS");
	int iters = it_env ? atoi(it_env) : 20, ret = gpu_setup(), s, k, bad = 0;
	nccl_unique_id id;
	nccl_comm comm;
	cuda_stream st;
	size_t n;

	if (ret)
		return ret;
	if (iters < 1)
		iters = 20;
	if (rank == 0) {
		NCCL(api.get_unique_id(&id));
		if (write_id(idfile, &id))
			return 2;
	} else if (read_id(idfile, &id, 60)) {
		return 2;
	}
	NCCL(api.comm_init_rank(&comm, nranks, id, rank));
	CUDA(api.stream_create(&st));
	if (rank == 0)
		printf("%12s %8s %12s %12s %s\n", "bytes", "iters", "algbw GB/s", "busbw GB/s", "check");
	for (s = 0; s < (nsizes ? nsizes : (int)(sizeof(def) / sizeof(def[0]))); s++) {
		size_t b = nsizes ? strtoull(sizes[s], NULL, 0) : def[s];
		float *dev, *host;
		double t0, dt, algbw;
		int wrong = 0;

		n = b / sizeof(float);
		if (!n)
			n = 1;
		host = malloc(n * sizeof(float));
		if (!host)
			return 2;
		CUDA(api.malloc_((void **)&dev, n * sizeof(float)));
		/* every rank contributes rank + 1 at each element (+ the index mod 1024, small
		 * enough to stay exact in float), so the sum is known */
		for (size_t e = 0; e < n; e++)
			host[e] = (float)(rank + 1) + (float)(e % 1024);
		CUDA(api.memcpy_(dev, host, n * sizeof(float), CUDA_MEMCPY_H2D));
		/* one warm-up, checked */
		NCCL(api.all_reduce(dev, dev, n, NCCL_FLOAT32, NCCL_SUM, comm, st));
		CUDA(api.stream_sync(st));
		CUDA(api.memcpy_(host, dev, n * sizeof(float), CUDA_MEMCPY_D2H));
		for (size_t e = 0; e < n; e++) {
			float want = (float)(nranks * (nranks + 1) / 2) + (float)nranks * (float)(e % 1024);

			if (host[e] != want) {
				if (!wrong++)
					fprintf(stderr, "nccl_check: rank %d, %zu bytes: element %zu is %g, want %g\n",
						rank, b, e, host[e], want);
			}
		}
		bad += wrong != 0;
		/* timed: in place, the values grow, nobody checks them any more */
		t0 = now_s();
		for (k = 0; k < iters; k++)
			NCCL(api.all_reduce(dev, dev, n, NCCL_FLOAT32, NCCL_SUM, comm, st));
		CUDA(api.stream_sync(st));
		dt = (now_s() - t0) / iters;
		algbw = (double)(n * sizeof(float)) / dt / 1e9;
		/* nccl-tests' bus bandwidth for all-reduce: algbw * 2(n-1)/n */
		if (rank == 0)
			printf("%12zu %8d %12.3f %12.3f %s\n", n * sizeof(float), iters, algbw,
			       algbw * 2.0 * (nranks - 1) / nranks, wrong ? "WRONG" : "ok");
		api.free_(dev);
		free(host);
	}
	NCCL(api.comm_destroy(comm));
	if (bad) {
		fprintf(stderr, "nccl_check: rank %d: %d size%s gave a wrong sum\n", rank, bad,
			bad == 1 ? "" : "s");
		return 1;
	}
	printf("nccl_check: rank %d: every size summed right\n", rank);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2 && !strcmp(argv[1], "one")) {
		load();
		return one();
	}
	if (argc >= 5 && !strcmp(argv[1], "allreduce")) {
		int rank = atoi(argv[2]), nranks = atoi(argv[3]);

		if (nranks < 1 || rank < 0 || rank >= nranks) {
			fprintf(stderr, "nccl_check: bad rank %s of %s\n", argv[2], argv[3]);
			return 2;
		}
		load();
		return allreduce(rank, nranks, argv[4], argc - 5, argv + 5);
	}
	fprintf(stderr, "usage: nccl_check one\n"
			"       nccl_check allreduce RANK NRANKS IDFILE [BYTES...]\n");
	return 2;
}
