/* majors - two cudart majors in one process: the simulated libcudart.so.13
 * (tests/sim) and the simulated libcudart.so.12 (over the simulated
 * libcuda.so.1), each with its own device.  Through one plugin per major
 * (use_major.c) the process references cudaHostAlloc@libcudart.so.12 and
 * cudaHostAlloc@libcudart.so.13 (and cudaFreeHost of each); each major's calls must reach that major's
 * library, which the two devices' counters tell apart.  Run in observe mode
 * (every call reaches a real library; the two simulated devices cannot
 * share blocks as two real cudarts over one driver do).
 *
 *   majors N12 N13   (TAP) */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <cuda_runtime_api.h>
#include "../doubles/sim.h"
#include "../tap.h"

cudaError_t alloc12(void **p, size_t n, unsigned int flags);
cudaError_t free12(void *p);
cudaError_t alloc13(void **p, size_t n, unsigned int flags);
cudaError_t free13(void *p);

static void counts(const char *lib, struct sim_counters *sc)
{
	void *h = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
	void (*f)(struct sim_counters *) = NULL;

	*(void **)&f = h ? dlsym(h, "simCounters") : NULL;
	if (f)
		f(sc);
}

int main(int argc, char **argv)
{
	int n12 = argc > 2 ? atoi(argv[1]) : 12, n13 = argc > 2 ? atoi(argv[2]) : 20, errors = 0;
	struct sim_counters c12 = { 0 }, c13 = { 0 };
	void *p;

	for (int i = 0; i < n13; i++) {
		errors += alloc13(&p, 8192, 0) != cudaSuccess;
		errors += free13(p) != cudaSuccess;
	}
	for (int i = 0; i < n12; i++) {
		errors += alloc12(&p, 8192, 0) != cudaSuccess;
		errors += free12(p) != cudaSuccess;
	}
	is_int(errors, 0, "every allocation and free succeeded (a block freed through the wrong major fails)");
	counts("libcuda.so.1", &c12);
	counts("libcudart.so.13", &c13);
	is_int((long long)c12.host_allocs, n12, "libcudart.so.12's device saw its major's allocations");
	is_int((long long)c13.host_allocs, n13, "libcudart.so.13's device saw its major's allocations");
	return done_testing();
}
