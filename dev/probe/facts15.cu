/* facts15.cu - measurements of the real runtime behind issue 15's fixes.
 * Not a test: it prints what the runtime does, one line per case, so the
 * simulated device and pincache(7) can follow it.  Each section runs in a
 * child process of its own (a fault or a reset must not leak into the next).
 *   facts15 order | hang | sticky | span | ctx | all
 * Build: nvcc -O2 -arch=sm_90 -cudart shared -o facts15 facts15.cu -lcuda -lpthread */
#include <cuda.h>
#include <cuda_runtime.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <algorithm>
#include <vector>

extern "C" cudaError_t cudaMemcpy_ptds(void *, const void *, size_t, enum cudaMemcpyKind);

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

__device__ __forceinline__ uint64_t dev_ns(void)
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

__global__ void k_spin(uint64_t ns)
{
    uint64_t t0 = dev_ns();
    while (dev_ns() - t0 < ns) {
    }
}

__global__ void k_count(const unsigned char *p, size_t n, unsigned long long *cnt)
{
    /* cnt[0]: bytes 'A', cnt[1]: 'Z', cnt[2]: 'Q', cnt[3]: other */
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    for (; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned char c = p[i];
        int k = c == 'A' ? 0 : c == 'Z' ? 1 : c == 'Q' ? 2 : 3;
        atomicAdd(&cnt[k], 1ull);
    }
}

__global__ void k_fault_addr(int *p) { *p = 1; }
__global__ void k_trap(void) { __trap(); }

#define MS(t0) ((double)(now_ns() - (t0)) / 1e6)

/* ---------------- order: when does a pageable H2D read its source? ---- */

struct fill_arg {
    unsigned char *p;
    size_t n;
    unsigned sleep_ms;
};

static void CUDART_CB hostfn_fill(void *a)
{
    struct fill_arg *f = (struct fill_arg *)a;
    usleep(f->sleep_ms * 1000u);
    memset(f->p, 'Z', f->n);
}

static const char *kindname[] = {"legacy", "perthread", "blocking", "nonblocking"};
static const char *formname[] = {"cudaMemcpy", "cudaMemcpy_ptds", "cudaMemcpyAsync", "cudaMemcpyAsync(D2H)"};

static void order_case(int form, int qk, int hostfn, size_t n, cudaStream_t sb, cudaStream_t snb,
                       unsigned char *dev, unsigned long long *cnt)
{
    cudaStream_t q = qk == 0 ? cudaStreamLegacy : qk == 1 ? cudaStreamPerThread : qk == 2 ? sb : snb;
    unsigned char *src = (unsigned char *)malloc(n);
    struct fill_arg fa = {src, n, 100};
    unsigned long long c[4];
    cudaError_t e;
    uint64_t t0;
    double call_ms;

    memset(src, 'A', n);
    cudaMemset(dev, 0, n);
    cudaDeviceSynchronize();
    if (hostfn)
        cudaLaunchHostFunc(q, hostfn_fill, &fa);
    else
        k_spin<<<1, 1, 0, q>>>(100000000ull);
    t0 = now_ns();
    if (form == 0)
        e = cudaMemcpy(dev, src, n, cudaMemcpyHostToDevice);
    else if (form == 1)
        e = cudaMemcpy_ptds(dev, src, n, cudaMemcpyHostToDevice);
    else if (form == 2)
        e = cudaMemcpyAsync(dev, src, n, cudaMemcpyHostToDevice, q);
    else
        e = cudaMemcpyAsync(src, dev, n, cudaMemcpyDeviceToHost, q);
    call_ms = MS(t0);
    if (!hostfn && form != 3)
        memset(src, 'Q', n);          /* a read after the return would see Q */
    cudaDeviceSynchronize();
    if (form == 3) {
        /* D2H: did the call return before the data was there? (dev was 0) */
        size_t zeros = 0;
        for (size_t i = 0; i < n; i++)
            zeros += src[i] == 0;
        printf("order %-22s before=%-6s queue=%-11s n=%-8zu rc=%d call_ms=%7.2f dst_bytes_from_device=%zu/%zu\n",
               formname[form], hostfn ? "hostfn" : "kernel", kindname[qk], n, (int)e, call_ms, zeros, n);
    } else {
        cudaMemset(cnt, 0, sizeof c);
        k_count<<<256, 256>>>(dev, n, cnt);
        cudaMemcpy(c, cnt, sizeof c, cudaMemcpyDeviceToHost);
        printf("order %-22s before=%-6s queue=%-11s n=%-8zu rc=%d call_ms=%7.2f old_A=%llu hostfn_Z=%llu after_return_Q=%llu other=%llu\n",
               formname[form], hostfn ? "hostfn" : "kernel", kindname[qk], n, (int)e, call_ms, c[0], c[1],
               c[2], c[3]);
    }
    fflush(stdout);
    free(src);
}

static int run_order(void)
{
    size_t sizes[] = {64u << 10, 16u << 20};
    cudaStream_t sb, snb;
    unsigned char *dev;
    unsigned long long *cnt;

    cudaStreamCreateWithFlags(&sb, cudaStreamDefault);
    cudaStreamCreateWithFlags(&snb, cudaStreamNonBlocking);
    cudaMalloc(&dev, 16u << 20);
    cudaMalloc(&cnt, 64);
    for (int form = 0; form < 4; form++)
        for (int qk = 0; qk < 4; qk++)
            for (int hf = 0; hf < 2; hf++)
                for (int s = 0; s < 2; s++) {
                    if (form == 3 && hf)
                        continue;
                    order_case(form, qk, hf, sizes[s], sb, snb, dev, cnt);
                }
    return 0;
}

/* ---------------- hang: pageable copies on two threads ---------------- */

static volatile int g_flag;
static unsigned char *g_dev1, *g_dev2;
static cudaStream_t g_s1, g_s2;

static void CUDART_CB hostfn_wait(void *a)
{
    uint64_t t0 = now_ns();
    (void)a;
    while (!g_flag && now_ns() - t0 < 3000000000ull)
        usleep(100);
    printf("hang   hostfn waited %.1f ms (%s)\n", MS(t0), g_flag ? "released by B" : "TIMED OUT: B's copy never returned in 3 s");
    fflush(stdout);
}

static void *thread_a(void *a)
{
    size_t n = *(size_t *)a;
    unsigned char *src = (unsigned char *)malloc(n);
    uint64_t t0;
    cudaError_t e;
    memset(src, 'A', n);
    t0 = now_ns();
    e = cudaMemcpyAsync(g_dev1, src, n, cudaMemcpyHostToDevice, g_s1);
    printf("hang   A: pageable cudaMemcpyAsync %zu behind the waiting hostfn: rc=%d in %.1f ms\n", n, (int)e, MS(t0));
    fflush(stdout);
    free(src);
    return NULL;
}

/* acopy: A's pageable copy queued behind the waiting host function (0:
 * none); bsize: B's copy, on another non-blocking stream, 50 ms later. */
static int run_hang_variant(size_t acopy, size_t bsize, int a_blocking)
{
    unsigned char *src = (unsigned char *)malloc(bsize);
    pthread_t ta;
    uint64_t t0;
    cudaError_t e;

    printf("hang variant: A's stream %s, hostfn waits for B; A then copies %zu pageable bytes on it; B copies %zu on another non-blocking stream\n",
           a_blocking ? "blocking" : "non-blocking", acopy, bsize);
    cudaStreamCreateWithFlags(&g_s1, a_blocking ? cudaStreamDefault : cudaStreamNonBlocking);
    cudaStreamCreateWithFlags(&g_s2, cudaStreamNonBlocking);
    cudaMalloc(&g_dev1, 16u << 20);
    cudaMalloc(&g_dev2, 16u << 20);
    cudaDeviceSynchronize();
    memset(src, 'B', bsize);
    cudaLaunchHostFunc(g_s1, hostfn_wait, NULL);
    if (acopy)
        pthread_create(&ta, NULL, thread_a, &acopy);
    usleep(50000);
    t0 = now_ns();
    e = cudaMemcpyAsync(g_dev2, src, bsize, cudaMemcpyHostToDevice, g_s2);
    double b_ms = MS(t0);
    printf("hang   B: pageable cudaMemcpyAsync %zu bytes on its own non-blocking stream: rc=%d in %.1f ms\n", bsize, (int)e, b_ms);
    printf("hang   result: B's copy %s\n", b_ms > 2500 ? "WAITED FOR THE HOSTFN TIMEOUT (plain hang)" : "returned");
    fflush(stdout);
    g_flag = 1;
    if (acopy)
        pthread_join(ta, NULL);
    cudaDeviceSynchronize();
    free(src);
    return 0;
}

static int run_hang(int v)
{
    switch (v) {
    case 0: return run_hang_variant(0, 16u << 20, 0);
    case 1: return run_hang_variant(0, 64u << 10, 0);
    case 2: return run_hang_variant(16u << 20, 16u << 20, 0);
    case 3: return run_hang_variant(64u << 10, 64u << 10, 0);
    case 4: return run_hang_variant(16u << 20, 64u << 10, 0);
    case 5: return run_hang_variant(64u << 10, 16u << 20, 0);
    }
    return 0;
}

/* ---------------- sticky: what answers after a kernel fault ----------- */

typedef int (*probe_fn)(void *);
struct probe {
    const char *name;
    probe_fn fn;
};
static void *g_pin;
static CUevent g_ev;
static CUcontext g_ctx;

static int p_peek(void *) { return cudaPeekAtLastError(); }
static int p_getdevice(void *) { int d; return cudaGetDevice(&d); }
static int p_ctxcur(void *) { CUcontext c; return cuCtxGetCurrent(&c); }
static int p_ctxdev(void *) { CUdevice d; return cuCtxGetDevice(&d); }
static int p_ctxflags(void *) { unsigned f; return cuCtxGetFlags(&f); }
static int p_ctxapi(void *) { unsigned v; return cuCtxGetApiVersion(g_ctx, &v); }
static int p_ctxid(void *) { unsigned long long id; return cuCtxGetId(g_ctx, &id); }
static int p_ctxlimit(void *) { size_t v; return cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE); }
static int p_ctxprio(void *) { int a, b; return cuCtxGetStreamPriorityRange(&a, &b); }
static int p_ptrattr(void *) { CUcontext c; return cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)g_pin); }
static int p_rtptrattr(void *) { cudaPointerAttributes a; return cudaPointerGetAttributes(&a, g_pin); }
static int p_hostflags(void *) { unsigned f; return cudaHostGetFlags(&f, g_pin); }
static int p_streamquery(void *) { return cudaStreamQuery(cudaStreamLegacy); }
static int p_custreamquery(void *) { return cuStreamQuery(CU_STREAM_LEGACY); }
static int p_evquery(void *) { return cuEventQuery(g_ev); }
static int p_ctxrecord(void *) { return cuCtxRecordEvent(g_ctx, g_ev); }
static int p_memgetinfo(void *) { size_t f, t; return cuMemGetInfo(&f, &t); }

static struct probe probes[] = {
    {"cudaPeekAtLastError", p_peek},     {"cuCtxGetCurrent", p_ctxcur},
    {"cuCtxGetDevice", p_ctxdev},        {"cuCtxGetFlags", p_ctxflags},
    {"cuCtxGetApiVersion", p_ctxapi},    {"cuCtxGetId", p_ctxid},
    {"cuCtxGetLimit", p_ctxlimit},       {"cuCtxGetStreamPriorityRange", p_ctxprio},
    {"cudaGetDevice", p_getdevice},      {"cuPointerGetAttribute(CONTEXT)", p_ptrattr},
    {"cudaPointerGetAttributes", p_rtptrattr}, {"cudaHostGetFlags", p_hostflags},
    {"cuEventQuery(done event)", p_evquery}, {"cuStreamQuery(legacy)", p_custreamquery},
    {"cudaStreamQuery(legacy)", p_streamquery}, {"cuCtxRecordEvent", p_ctxrecord},
    {"cuMemGetInfo", p_memgetinfo},
};

static double time_probe(probe_fn f)
{
    std::vector<double> v;
    for (int r = 0; r < 21; r++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < 200; i++)
            f(NULL);
        v.push_back((double)(now_ns() - t0) / 200.0);
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static int run_sticky(int trap)
{
    void *p2 = (void *)0x1;
    cudaError_t e;
    unsigned np = sizeof probes / sizeof probes[0];

    cudaFree(0);
    cuCtxGetCurrent(&g_ctx);
    cudaHostAlloc(&g_pin, 1 << 20, 0);
    cuEventCreate(&g_ev, CU_EVENT_DISABLE_TIMING);
    cuEventRecord(g_ev, 0);
    cuCtxSynchronize();
    printf("sticky healthy-context cost (ns per call, median):\n");
    for (unsigned i = 0; i < np; i++)
        printf("sticky   %-32s %8.1f ns\n", probes[i].name, time_probe(probes[i].fn));
    cuEventRecord(g_ev, 0);
    cuCtxSynchronize();
    if (trap)
        k_trap<<<1, 1>>>();
    else
        k_fault_addr<<<1, 1>>>((int *)0x10);
    printf("sticky fault kind: %s; launch rc=%d (peek)\n", trap ? "__trap()" : "illegal address", (int)cudaPeekAtLastError());
    usleep(500000);            /* let it fault; no CUDA call meanwhile */
    printf("sticky after the fault, in this order (first call first):\n");
    for (unsigned i = 0; i < np; i++)
        printf("sticky   %-32s rc=%d\n", probes[i].name, probes[i].fn(NULL));
    for (int k = 0; k < 3; k++)
        printf("sticky   cudaGetLastError #%d rc=%d\n", k + 1, (int)cudaGetLastError());
    printf("sticky   cudaPeekAtLastError rc=%d\n", (int)cudaPeekAtLastError());
    e = cudaHostAlloc(&p2, 4096, 0);
    printf("sticky   cudaHostAlloc rc=%d ptr=%s\n", (int)e, p2 == NULL ? "NULL" : p2 == (void *)0x1 ? "untouched" : "set");
    printf("sticky   then cudaGetLastError rc=%d, again rc=%d\n", (int)cudaGetLastError(), (int)cudaGetLastError());
    p2 = (void *)0x1;
    e = cudaMallocHost(&p2, 4096);
    printf("sticky   cudaMallocHost rc=%d ptr=%s\n", (int)e, p2 == NULL ? "NULL" : p2 == (void *)0x1 ? "untouched" : "set");
    {
        CUresult r;
        void *p3 = (void *)0x1;
        r = cuMemHostAlloc(&p3, 4096, 0);
        printf("sticky   cuMemHostAlloc rc=%d ptr=%s\n", (int)r, p3 == NULL ? "NULL" : p3 == (void *)0x1 ? "untouched" : "set");
    }
    printf("sticky   cudaHostAlloc(size 0) rc=%d\n", (int)cudaHostAlloc(&p2, 0, 0));
    printf("sticky   cudaHostAlloc(NULL out) rc=%d\n", (int)cudaHostAlloc(NULL, 4096, 0));
    printf("sticky   cudaHostAlloc(flags 0xff) rc=%d\n", (int)cudaHostAlloc(&p2, 4096, 0xff));
    printf("sticky   cudaFreeHost(NULL) rc=%d\n", (int)cudaFreeHost(NULL));
    {
        char x[16];
        printf("sticky   cudaFreeHost(malloc'd) rc=%d\n", (int)cudaFreeHost(x));
    }
    printf("sticky   cudaFreeHost(block) rc=%d\n", (int)cudaFreeHost(g_pin));
    printf("sticky   cuMemFreeHost(block again) rc=%d\n", (int)cuMemFreeHost(g_pin));
    printf("sticky   cudaGetLastError rc=%d\n", (int)cudaGetLastError());
    fflush(stdout);
    return 0;
}

/* ---------------- span: a pageable copy across two allocations -------- */

static int run_span(void)
{
    size_t gran = 0, half;
    CUmemAllocationProp prop;
    CUmemGenericAllocationHandle h[2];
    CUdeviceptr base = 0, rb = 0;
    size_t rs = 0;
    CUmemAccessDesc acc;
    unsigned char *host;
    cudaError_t e;
    CUresult r;
    void *a = NULL, *b = NULL;

    cudaFree(0);
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    half = gran < (2u << 20) ? (2u << 20) : gran;
    cuMemAddressReserve(&base, 2 * half, 0, 0, 0);
    cuMemCreate(&h[0], half, &prop, 0);
    cuMemCreate(&h[1], half, &prop, 0);
    cuMemMap(base, half, 0, h[0], 0);
    cuMemMap(base + half, half, 0, h[1], 0);
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    cuMemSetAccess(base, 2 * half, &acc, 1);
    host = (unsigned char *)malloc(2 * half);
    memset(host, 'A', 2 * half);
    r = cuMemGetAddressRange(&rb, &rs, base + half / 2);
    printf("span   VMM: two %zu-byte allocations mapped back to back; cuMemGetAddressRange(first+half) rc=%d base_off=%lld size=%zu\n",
           half, (int)r, (long long)(rb - base), rs);
    e = cudaMemcpy((void *)(base + half / 2), host, half, cudaMemcpyHostToDevice);
    printf("span   VMM: pageable cudaMemcpy H2D across the seam: rc=%d last=%d\n", (int)e, (int)cudaGetLastError());
    e = cudaMemcpyAsync((void *)(base + half / 2), host, half, cudaMemcpyHostToDevice, 0);
    cudaDeviceSynchronize();
    printf("span   VMM: pageable cudaMemcpyAsync H2D across the seam: rc=%d last=%d\n", (int)e, (int)cudaGetLastError());
    e = cudaMemcpy(host, (void *)(base + half / 2), half, cudaMemcpyDeviceToHost);
    printf("span   VMM: pageable cudaMemcpy D2H across the seam: rc=%d last=%d\n", (int)e, (int)cudaGetLastError());
    e = cudaMemcpy((void *)(base + half / 2), host, half, cudaMemcpyDefault);
    printf("span   VMM: pageable cudaMemcpy Default across the seam: rc=%d last=%d\n", (int)e, (int)cudaGetLastError());
    /* plain cudaMalloc neighbours */
    for (int t = 0; t < 8; t++) {
        cudaMalloc(&a, 2u << 20);
        cudaMalloc(&b, 2u << 20);
        if ((char *)b == (char *)a + (2u << 20) || (char *)a == (char *)b + (2u << 20))
            break;
    }
    if ((char *)b == (char *)a + (2u << 20) || (char *)a == (char *)b + (2u << 20)) {
        char *lo = (char *)std::min(a, b);
        e = cudaMemcpy(lo + (1u << 20), host, 2u << 20, cudaMemcpyHostToDevice);
        printf("span   cudaMalloc neighbours: pageable cudaMemcpy H2D across: rc=%d last=%d\n", (int)e, (int)cudaGetLastError());
        e = cudaMemcpy(host, lo + (1u << 20), 2u << 20, cudaMemcpyDeviceToHost);
        printf("span   cudaMalloc neighbours: pageable cudaMemcpy D2H across: rc=%d last=%d\n", (int)e, (int)cudaGetLastError());
        e = cudaMemcpy(lo + (1u << 20), host, 3u << 20, cudaMemcpyHostToDevice);
        printf("span   cudaMalloc neighbours: past the end of the second: rc=%d last=%d\n", (int)e, (int)cudaGetLastError());
    } else {
        printf("span   cudaMalloc neighbours: none adjacent in 8 tries\n");
    }
    fflush(stdout);
    return 0;
}

/* ---------------- ctx: pinned blocks and context teardown ------------- */

static void describe(const char *what, void *p)
{
    cudaPointerAttributes a;
    CUcontext c = NULL;
    unsigned f = 0;
    cudaError_t e;
    CUresult r;
    memset(&a, 0, sizeof a);
    e = cudaPointerGetAttributes(&a, p);
    r = cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)p);
    printf("ctx    %-44s cudaPointerGetAttributes rc=%d type=%d; cuPointerGetAttribute(CONTEXT) rc=%d ctx=%p; cudaHostGetFlags rc=%d; last=%d\n",
           what, (int)e, (int)a.type, (int)r, (void *)c, (int)cudaHostGetFlags(&f, p), (int)cudaGetLastError());
}

static int run_ctx(int which)
{
    void *p = NULL, *q = NULL;
    CUdevice dev = 0;
    CUcontext prim = NULL, mine = NULL;
    unsigned flags = 0;
    int active = 0;

    cudaFree(0);
    cuCtxGetCurrent(&prim);
    cudaHostAlloc(&p, 1 << 20, 0);
    printf("ctx    primary context %p\n", (void *)prim);
    switch (which) {
    case 0:
        describe("before cuDevicePrimaryCtxReset", p);
        printf("ctx    cuDevicePrimaryCtxReset(0) rc=%d\n", (int)cuDevicePrimaryCtxReset(dev));
        describe("after it (runtime block)", p);
        printf("ctx    cudaFreeHost(block) rc=%d last=%d\n", (int)cudaFreeHost(p), (int)cudaGetLastError());
        printf("ctx    new cudaHostAlloc rc=%d\n", (int)cudaHostAlloc(&q, 1 << 20, 0));
        printf("ctx    new block is the old address: %s\n", q == p ? "yes" : "no");
        break;
    case 1:
        printf("ctx    cuDevicePrimaryCtxRelease(0) rc=%d\n", (int)cuDevicePrimaryCtxRelease(dev));
        cuDevicePrimaryCtxGetState(dev, &flags, &active);
        printf("ctx    primary state after one release: active=%d\n", active);
        describe("after one release", p);
        printf("ctx    cudaFreeHost(block) rc=%d last=%d\n", (int)cudaFreeHost(p), (int)cudaGetLastError());
        break;
    case 2:
        printf("ctx    cuCtxCreate rc=%d\n", (int)cuCtxCreate(&mine, NULL, 0, dev));
        printf("ctx    created context %p current\n", (void *)mine);
        printf("ctx    cudaHostAlloc while it is current rc=%d\n", (int)cudaHostAlloc(&q, 1 << 20, 0));
        describe("runtime block made under the created ctx", q);
        printf("ctx    cuCtxDestroy rc=%d\n", (int)cuCtxDestroy(mine));
        cuCtxSetCurrent(prim);
        describe("after cuCtxDestroy: that block", q);
        describe("after cuCtxDestroy: the primary ctx block", p);
        printf("ctx    cudaFreeHost(block made under the destroyed ctx) rc=%d last=%d\n", (int)cudaFreeHost(q), (int)cudaGetLastError());
        break;
    case 3:
        printf("ctx    cuCtxCreate rc=%d\n", (int)cuCtxCreate(&mine, NULL, 0, dev));
        printf("ctx    cuMemHostAlloc in it rc=%d\n", (int)cuMemHostAlloc(&q, 1 << 20, 0));
        describe("driver block in the created ctx", q);
        printf("ctx    cuCtxDestroy rc=%d\n", (int)cuCtxDestroy(mine));
        cuCtxSetCurrent(prim);
        describe("after cuCtxDestroy: that block", q);
        printf("ctx    cuMemFreeHost(it) rc=%d; cudaFreeHost(it) rc=%d last=%d\n", (int)cuMemFreeHost(q), (int)cudaFreeHost(q), (int)cudaGetLastError());
        break;
    case 4:
        /* cudaDeviceReset for comparison */
        printf("ctx    cudaDeviceReset rc=%d\n", (int)cudaDeviceReset());
        describe("after cudaDeviceReset", p);
        printf("ctx    cudaFreeHost(block) rc=%d last=%d\n", (int)cudaFreeHost(p), (int)cudaGetLastError());
        break;
    }
    fflush(stdout);
    return 0;
}

/* ---------------- main: each section in a child ----------------------- */

static int in_child(int (*fn)(int), int arg, unsigned timeout_s)
{
    pid_t pid;
    int st = 0;
    fflush(stdout);
    pid = fork();
    if (pid == 0) {
        alarm(timeout_s);
        _exit(fn(arg));
    }
    waitpid(pid, &st, 0);
    if (WIFSIGNALED(st))
        printf("child ended by signal %d%s\n", WTERMSIG(st), WTERMSIG(st) == SIGALRM ? " (timeout: HUNG)" : "");
    return 0;
}

static int w_order(int) { return run_order(); }
static int w_span(int) { return run_span(); }

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "all";
    int all = !strcmp(what, "all");

    setvbuf(stdout, NULL, _IOLBF, 0);
    if (all || !strcmp(what, "order"))
        in_child(w_order, 0, 60);
    if (all || !strcmp(what, "hang"))
        for (int v = 0; v < 6; v++)
            in_child(run_hang, v, 12);
    if (all || !strcmp(what, "sticky")) {
        in_child(run_sticky, 1, 30);
        in_child(run_sticky, 0, 30);
    }
    if (all || !strcmp(what, "span"))
        in_child(w_span, 0, 20);
    if (all || !strcmp(what, "ctx"))
        for (int v = 0; v < 5; v++)
            in_child(run_ctx, v, 20);
    return 0;
}
