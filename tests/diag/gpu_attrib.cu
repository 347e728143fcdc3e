/* gpu_attrib.cu - sync attribution on a real GPU: frees, stream syncs,
 * device syncs and cudaFree, each made once while a 20 ms kernel runs and
 * once on an idle device.  Prints "expect PATH VALUE" lines like
 * tests/diag/scenario for the report pincache writes at exit, with the
 * truth taken from the clock: a call that took over 10 ms waited.
 *   gpu_attrib N */
#include "../gpu/gpu_common.cuh"

#define KERNEL_NS 20000000ull
#define WAITED_MS 10.0

static unsigned long long waited[4], calls[4];
static const char *const keys[4] = { "cudaFreeHost", "cudaStreamSynchronize",
                                     "cudaDeviceSynchronize", "cudaFree" };

static void timed(int k, cudaError_t (*f)(void *), void *arg)
{
    uint64_t t0 = host_ns();
    CK(f(arg));
    calls[k]++;
    waited[k] += ms_since(t0) > WAITED_MS;
}

static cudaError_t free_host(void *p) { return cudaFreeHost(p); }
static cudaError_t stream_sync(void *s) { return cudaStreamSynchronize((cudaStream_t)s); }
static cudaError_t device_sync(void *) { return cudaDeviceSynchronize(); }
static cudaError_t device_free(void *p) { return cudaFree(p); }

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 5;
    unsigned long long avoided = 0;
    cudaStream_t s;
    char path[128];

    CK(cudaStreamCreate(&s));
    timed(3, device_free, NULL);         /* initializes the context */
    for (int i = 0; i < n; i++) {
        void *p, *d;
        /* busy */
        CK(cudaHostAlloc(&p, 1 << 20, 0));
        k_spin<<<1, 1, 0, s>>>(KERNEL_NS, NULL);
        uint64_t t0 = host_ns();
        CK(cudaFreeHost(p));
        calls[0]++;
        if (ms_since(t0) > WAITED_MS)
            waited[0]++;
        else if (cudaStreamQuery(s) == cudaErrorNotReady)
            avoided++;                   /* cache mode: returned while the kernel ran */
        timed(2, device_sync, NULL);
        k_spin<<<1, 1, 0, s>>>(KERNEL_NS, NULL);
        timed(1, stream_sync, s);
        CK(cudaMalloc(&d, 1 << 20));
        k_spin<<<1, 1, 0, s>>>(KERNEL_NS, NULL);
        timed(3, device_free, d);
        /* idle */
        CK(cudaHostAlloc(&p, 1 << 20, 0));
        timed(0, free_host, p);
        timed(1, stream_sync, s);
        timed(2, device_sync, NULL);
        CK(cudaMalloc(&d, 1 << 20));
        timed(3, device_free, d);
    }
    CK(cudaStreamDestroy(s));
    for (int k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "apis.%s.calls", keys[k]);
        printf("expect %s %llu\n", path, calls[k]);
        snprintf(path, sizeof path, "apis.%s.synced", keys[k]);
        printf("expect %s %llu\n", path, waited[k]);
    }
    printf("expect apis.cudaFreeHost.sync_avoided %llu\n", avoided);
    return 0;
}
