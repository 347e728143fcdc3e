// gpu_stage - pageable cudaMemcpy semantics on a real GPU, the checks of
// stage_test.c with real kernels.  Run plain and under pincache's staging
// (tests/stage/run-gpu.sh); both must pass.  Prints TAP, then
// "N passed, M failed".
//
//   gpu_stage [-q]      -q: sizes up to 16 MB only (for extra configurations)
//
// Build: nvcc -O2 -cudart shared -arch=sm_90 -o gpu_stage gpu_stage.cu
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// Exported by libcudart whatever this file was compiled with.
extern "C" cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t n, cudaMemcpyKind kind);
extern "C" cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t n, cudaMemcpyKind kind,
                                            cudaStream_t s);

#define KB ((size_t)1 << 10)
#define MB ((size_t)1 << 20)

static int passed, failed, quick;
static pthread_mutex_t tap_mu = PTHREAD_MUTEX_INITIALIZER;

static void ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(int cond, const char *fmt, ...)
{
    va_list ap;
    pthread_mutex_lock(&tap_mu);
    cond ? passed++ : failed++;
    printf("%sok %d - ", cond ? "" : "not ", passed + failed);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    pthread_mutex_unlock(&tap_mu);
}

// Unexpected setup failures end the run (status 2), the TAP so far kept.
#define CK(call)                                                                        \
    do {                                                                                \
        cudaError_t e_ = (call);                                                        \
        if (e_ != cudaSuccess) {                                                        \
            printf("Bail out! %s:%d: %s: %d (%s)\n", __FILE__, __LINE__, #call, (int)e_, \
                   cudaGetErrorString(e_));                                             \
            exit(2);                                                                    \
        }                                                                               \
    } while (0)

// ---- pattern: byte i of a buffer filled for tag

__host__ __device__ __forceinline__ uint32_t pat32(uint32_t tag, uint64_t j)
{
    uint32_t x = (uint32_t)j * 0x9E3779B1u ^ (uint32_t)(j >> 32) * 0x7FEB352Du ^ tag * 0x85EBCA77u;
    x ^= x >> 15;
    x *= 0x2C1B3C6Du;
    x ^= x >> 12;
    return x;
}

__host__ __device__ __forceinline__ unsigned char pat8(uint32_t tag, uint64_t i)
{
    return (unsigned char)(pat32(tag, i >> 2) >> (8 * (i & 3)));
}

static void hfill(unsigned char *p, size_t n, uint32_t tag)
{
    size_t j;
    for (j = 0; j + 4 <= n; j += 4) {
        uint32_t w = pat32(tag, j / 4);
        memcpy(p + j, &w, 4);
    }
    for (; j < n; j++)
        p[j] = pat8(tag, j);
}

static long long hbad(const unsigned char *p, size_t n, uint32_t tag)
{
    size_t j;
    for (j = 0; j + 4 <= n; j += 4) {
        uint32_t w = pat32(tag, j / 4);
        if (memcmp(p + j, &w, 4) != 0)
            break;
    }
    for (; j < n; j++)
        if (p[j] != pat8(tag, j))
            return (long long)j;
    return -1;
}

__global__ void k_fill(unsigned char *p, size_t n, uint32_t tag)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = pat8(tag, i);
}

// first[0]: lowest index that differs (~0 when none).  Each thread stops at
// its first bad byte and each block makes one global atomic: a buffer full of
// wrong bytes (the unsafe run) must not cost one atomic per byte.
__global__ void k_check(const unsigned char *p, size_t n, uint32_t tag, unsigned long long *first)
{
    __shared__ unsigned long long blk;
    unsigned long long mine = ~0ull;

    if (threadIdx.x == 0)
        blk = ~0ull;
    __syncthreads();
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        if (p[i] != pat8(tag, i)) {
            mine = i;
            break;
        }
    if (mine != ~0ull)
        atomicMin(&blk, mine);
    __syncthreads();
    if (threadIdx.x == 0 && blk != ~0ull)
        atomicMin(first, blk);
}

__global__ void k_spin(unsigned long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < ns);
}

#define GRID 1024
#define BLOCK 256

// ---- device-side check result: managed memory (device atomics stay on the
// GPU; the host reads it after synchronizing)

static unsigned long long *new_first(void)
{
    unsigned long long *f;
    CK(cudaMallocManaged((void **)&f, sizeof *f, cudaMemAttachGlobal));
    *f = ~0ull;
    return f;
}

// ---- copy variants

enum mode { M_SYNC, M_SYNC_PTDS, M_ASYNC0, M_ASYNC_PTSZ0, M_ASYNC_STREAM, M_DEFAULT_SYNC,
            M_DEFAULT_ASYNC, M_COUNT };
static const char *const mode_name[M_COUNT] = {
    "cudaMemcpy", "cudaMemcpy_ptds", "cudaMemcpyAsync(0)", "cudaMemcpyAsync_ptsz(0)",
    "cudaMemcpyAsync(stream)", "cudaMemcpy(Default)", "cudaMemcpyAsync(stream, Default)",
};

static cudaStream_t mode_stream(int m, cudaStream_t s)
{
    if (m == M_SYNC_PTDS || m == M_ASYNC_PTSZ0)
        return cudaStreamPerThread;
    if (m == M_ASYNC_STREAM || m == M_DEFAULT_ASYNC)
        return s;
    return cudaStreamLegacy;
}

static cudaError_t do_copy(int m, void *dst, const void *src, size_t n, int h2d, cudaStream_t s)
{
    cudaMemcpyKind k = h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost;
    switch (m) {
    case M_SYNC:          return cudaMemcpy(dst, src, n, k);
    case M_SYNC_PTDS:     return cudaMemcpy_ptds(dst, src, n, k);
    case M_ASYNC0:        return cudaMemcpyAsync(dst, src, n, k, 0);
    case M_ASYNC_PTSZ0:   return cudaMemcpyAsync_ptsz(dst, src, n, k, 0);
    case M_ASYNC_STREAM:  return cudaMemcpyAsync(dst, src, n, k, s);
    case M_DEFAULT_SYNC:  return cudaMemcpy(dst, src, n, cudaMemcpyDefault);
    default:              return cudaMemcpyAsync(dst, src, n, cudaMemcpyDefault, s);
    }
}

// H2D: overwrite the source at once, check on the device in stream order.
static void one_h2d(unsigned char *host, unsigned char *dev, int m, cudaStream_t s, size_t n,
                    size_t ho, size_t dof, uint32_t tag, unsigned long long *first)
{
    cudaStream_t os = mode_stream(m, s);
    cudaError_t e;

    hfill(host + ho, n, tag);
    *first = ~0ull;
    e = do_copy(m, dev + dof, host + ho, n, 1, s);
    hfill(host + ho, n, tag + 1);
    if (e == cudaSuccess) {
        k_check<<<GRID, BLOCK, 0, os>>>(dev + dof, n, tag, first);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(os);
    ok(e == cudaSuccess && *first == ~0ull, "H2D %s %zu bytes (host+%zu, dev+%zu)%s", mode_name[m], n,
       ho, dof, e ? " (CUDA error)" : "");
    if (e != cudaSuccess || *first != ~0ull)
        printf("#   error %d, first bad byte %lld\n", (int)e, (long long)*first);
}

// D2H behind a kernel that writes the data: it must be there on return.
static void one_d2h(unsigned char *host, unsigned char *dev, int m, cudaStream_t s, size_t n,
                    size_t ho, size_t dof, uint32_t tag, unsigned long long spin_ns)
{
    cudaStream_t os = mode_stream(m, s);
    long long bad;
    cudaError_t e;

    memset(host + ho, 0x5A, n);
    if (spin_ns)
        k_spin<<<1, 1, 0, os>>>(spin_ns);
    k_fill<<<GRID, BLOCK, 0, os>>>(dev + dof, n, tag);
    e = cudaGetLastError();
    if (e == cudaSuccess)
        e = do_copy(m, host + ho, dev + dof, n, 0, s);
    bad = hbad(host + ho, n, tag);
    ok(e == cudaSuccess && bad < 0, "D2H %s %zu bytes (dev+%zu, host+%zu)%s: data there on return",
       mode_name[m], n, dof, ho, spin_ns ? " behind a kernel" : "");
    if (e != cudaSuccess || bad >= 0)
        printf("#   error %d, first bad byte %lld\n", (int)e, bad);
    cudaStreamSynchronize(os);
}

static void t_integrity(void)
{
    static const size_t sizes[] = {
        1, 4095, 64 * KB + 3, 512 * KB - 1, 512 * KB + 1, MB + 4097, 5 * MB + 65536 + 11,
        16 * MB + 7, 64 * MB + 1, 256 * MB - 3,
    };
    const size_t maxn = 256 * MB + 256;
    unsigned char *host = (unsigned char *)malloc(maxn), *dev;
    unsigned long long *first = new_first();
    cudaStream_t s;
    unsigned k = 0;

    if (!host) {
        ok(0, "integrity: malloc");
        return;
    }
    memset(host, 0, maxn);
    CK(cudaMalloc((void **)&dev, maxn));
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        size_t n = sizes[i];
        int all = n >= 512 * KB - 1 && n <= 6 * MB;
        if (quick && n > 16 * MB + 7)
            continue;
        for (int m = 0; m < M_COUNT; m++, k++) {
            if (!all && m != (int)(i % M_COUNT) && m != (int)((i + 3) % M_COUNT))
                continue;
            one_h2d(host, dev, m, s, n, (k * 13) % 61, (k * 7) % 59, 100 + k, first);
            one_d2h(host, dev, m, s, n, (k * 11) % 63, (k * 5) % 57, 5000 + k, 0);
        }
    }
    // Every variant behind a 20 ms kernel: the copy must wait for it.
    for (int m = 0; m < M_COUNT; m++)
        one_d2h(host, dev, m, s, quick ? 3 * MB + 1 : 9 * MB + 3, 3, 5, 40 + m, 20000000ull);
    CK(cudaDeviceSynchronize());
    CK(cudaStreamDestroy(s));
    CK(cudaFree(dev));
    CK(cudaFree(first));
    free(host);
}

// The source is overwritten as each async H2D returns, with the stream held
// back 20 ms by a kernel: the device must get the bytes as they were.
static void t_overwrite(void)
{
    enum { ROUNDS = 6 };
    static const size_t sizes[] = { 3 * MB + 17, MB, 12 * MB + 1, 600 * KB };
    const size_t maxn = 12 * MB + 1;
    unsigned char *host = (unsigned char *)malloc(maxn), *dev[ROUNDS];
    unsigned long long *first[ROUNDS];
    cudaStream_t streams[3];
    const char *sname[3] = { "stream 0", "per-thread stream", "created stream" };

    streams[0] = 0;
    streams[1] = cudaStreamPerThread;
    CK(cudaStreamCreate(&streams[2]));
    for (int r = 0; r < ROUNDS; r++) {
        CK(cudaMalloc((void **)&dev[r], maxn));
        first[r] = new_first();
    }
    for (int si = 0; si < 3; si++) {
        cudaStream_t s = streams[si];
        int errs = 0, bad = 0;

        k_spin<<<1, 1, 0, s>>>(20000000ull);
        for (int r = 0; r < ROUNDS; r++) {
            size_t n = sizes[r % 4];
            hfill(host, n, 700 + r);
            if (si == 1)
                errs += cudaMemcpyAsync_ptsz(dev[r], host, n, cudaMemcpyHostToDevice, 0) != cudaSuccess;
            else
                errs += cudaMemcpyAsync(dev[r], host, n, cudaMemcpyHostToDevice, s) != cudaSuccess;
            memset(host, 0xEE, n);
        }
        for (int r = 0; r < ROUNDS; r++) {
            *first[r] = ~0ull;
            k_check<<<GRID, BLOCK, 0, s>>>(dev[r], sizes[r % 4], 700 + r, first[r]);
        }
        errs += cudaStreamSynchronize(s) != cudaSuccess;
        for (int r = 0; r < ROUNDS; r++)
            bad += *first[r] != ~0ull;
        ok(errs == 0 && bad == 0, "overwrite (%s): the device got each source as it was at the call",
           sname[si]);
    }
    for (int r = 0; r < ROUNDS; r++) {
        cudaFree(dev[r]);
        cudaFree(first[r]);
    }
    cudaStreamDestroy(streams[2]);
    free(host);
}

// Stream order with kernels: legacy stream through a blocking stream, and
// the per-thread default stream.
static void t_order(void)
{
    const size_t n = 4 * MB + 5;
    unsigned char *host = (unsigned char *)malloc(n), *dev;
    unsigned long long *first = new_first();
    cudaStream_t blocking;
    cudaError_t e;

    CK(cudaMalloc((void **)&dev, n));
    CK(cudaStreamCreate(&blocking));
    // Kernel writes X late, H2D writes Y after it, kernel checks Y.
    for (int v = 0; v < 2; v++) {
        cudaStream_t ks = v ? cudaStreamPerThread : cudaStreamLegacy;
        hfill(host, n, 32 + v);
        *first = ~0ull;
        k_spin<<<1, 1, 0, ks>>>(20000000ull);
        k_fill<<<GRID, BLOCK, 0, ks>>>(dev, n, 31);
        e = v ? cudaMemcpyAsync_ptsz(dev, host, n, cudaMemcpyHostToDevice, 0)
              : cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, 0);
        k_check<<<GRID, BLOCK, 0, ks>>>(dev, n, 32 + v, first);
        cudaStreamSynchronize(ks);
        ok(e == cudaSuccess && *first == ~0ull, "order: kernel, async H2D, kernel on %s",
           v ? "the per-thread stream" : "stream 0");
    }
    // cudaMemcpy after a kernel on a blocking stream (legacy waits for it).
    hfill(host, n, 34);
    *first = ~0ull;
    k_spin<<<1, 1, 0, blocking>>>(20000000ull);
    k_fill<<<GRID, BLOCK, 0, blocking>>>(dev, n, 31);
    e = cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice);
    k_check<<<GRID, BLOCK, 0, blocking>>>(dev, n, 34, first);
    cudaDeviceSynchronize();
    ok(e == cudaSuccess && *first == ~0ull, "order: kernel on a blocking stream, cudaMemcpy H2D");
    // cudaMemcpy_ptds after a kernel on the per-thread stream.
    hfill(host, n, 35);
    *first = ~0ull;
    k_spin<<<1, 1, 0, cudaStreamPerThread>>>(20000000ull);
    k_fill<<<GRID, BLOCK, 0, cudaStreamPerThread>>>(dev, n, 31);
    e = cudaMemcpy_ptds(dev, host, n, cudaMemcpyHostToDevice);
    k_check<<<GRID, BLOCK, 0, cudaStreamPerThread>>>(dev, n, 35, first);
    cudaStreamSynchronize(cudaStreamPerThread);
    ok(e == cudaSuccess && *first == ~0ull, "order: kernel on the per-thread stream, cudaMemcpy_ptds H2D");
    // D2H after a slow kernel on a blocking stream / the per-thread stream.
    memset(host, 0, n);
    k_spin<<<1, 1, 0, blocking>>>(20000000ull);
    k_fill<<<GRID, BLOCK, 0, blocking>>>(dev, n, 36);
    e = cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost);
    ok(e == cudaSuccess && hbad(host, n, 36) < 0, "order: kernel on a blocking stream, cudaMemcpy D2H");
    k_spin<<<1, 1, 0, cudaStreamPerThread>>>(20000000ull);
    k_fill<<<GRID, BLOCK, 0, cudaStreamPerThread>>>(dev, n, 37);
    e = cudaMemcpy_ptds(host, dev, n, cudaMemcpyDeviceToHost);
    ok(e == cudaSuccess && hbad(host, n, 37) < 0, "order: kernel on the per-thread stream, cudaMemcpy_ptds D2H");
    cudaDeviceSynchronize();
    cudaStreamDestroy(blocking);
    cudaFree(dev);
    cudaFree(first);
    free(host);
}

// 8 threads at once: own streams, a shared stream, per-thread streams, legacy.
struct worker {
    int id;
    cudaStream_t shared;
    int bad, errs, copies;
};

static void *worker_main(void *arg)
{
    struct worker *w = (struct worker *)arg;
    const size_t maxn = 4 * MB;
    unsigned char *src = (unsigned char *)malloc(maxn), *dst = (unsigned char *)malloc(maxn), *dev = NULL;
    unsigned long long *first = new_first();
    cudaStream_t own, s;

    if (!src || !dst || cudaMalloc((void **)&dev, maxn) != cudaSuccess ||
        cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking) != cudaSuccess) {
        w->errs++;
        return NULL;
    }
    s = w->id < 2 ? own : w->id < 4 ? w->shared : w->id < 6 ? cudaStreamPerThread : cudaStreamLegacy;
    for (int i = 0; i < 16; i++) {
        size_t n = 600 * KB + (size_t)((w->id * 7 + i * 13) % 40) * 64 * KB + (size_t)i;
        uint32_t tag = (uint32_t)(w->id * 1000 + i);
        cudaError_t e;

        hfill(src, n, tag);
        *first = ~0ull;
        if (w->id >= 6)
            e = cudaMemcpy(dev, src, n, cudaMemcpyHostToDevice);
        else if (s == cudaStreamPerThread)
            e = cudaMemcpyAsync_ptsz(dev, src, n, cudaMemcpyHostToDevice, 0);
        else
            e = cudaMemcpyAsync(dev, src, n, cudaMemcpyHostToDevice, s);
        memset(src, 1, n);
        k_check<<<GRID, BLOCK, 0, s>>>(dev, n, tag, first);
        memset(dst, 0, n);
        if (e == cudaSuccess) {
            if (w->id >= 6)
                e = cudaMemcpy(dst, dev, n, cudaMemcpyDeviceToHost);
            else if (s == cudaStreamPerThread)
                e = cudaMemcpyAsync_ptsz(dst, dev, n, cudaMemcpyDeviceToHost, 0);
            else
                e = cudaMemcpyAsync(dst, dev, n, cudaMemcpyDeviceToHost, s);
        }
        w->copies += 2;
        if (e != cudaSuccess) {
            w->errs++;
            continue;
        }
        cudaStreamSynchronize(s);
        if (*first != ~0ull || hbad(dst, n, tag) >= 0)
            w->bad++;
    }
    cudaStreamDestroy(own);
    cudaFree(dev);
    cudaFree(first);
    free(src);
    free(dst);
    return NULL;
}

static void t_threads(void)
{
    enum { NT = 8 };
    struct worker w[NT];
    pthread_t t[NT];
    cudaStream_t shared;
    int bad = 0, errs = 0, copies = 0;

    CK(cudaStreamCreate(&shared));
    for (int i = 0; i < NT; i++) {
        w[i].id = i;
        w[i].shared = shared;
        w[i].bad = w[i].errs = w[i].copies = 0;
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < NT; i++) {
        pthread_join(t[i], NULL);
        bad += w[i].bad;
        errs += w[i].errs;
        copies += w[i].copies;
    }
    ok(bad == 0 && errs == 0, "threads: %d copies from %d threads, all correct (%d wrong, %d errors)",
       copies, NT, bad, errs);
    cudaStreamDestroy(shared);
}

// Errors and last-error state: a staged-size copy must answer like a small
// (never staged) one.
static void t_errors(void)
{
    const size_t n = 2 * MB + 3;
    unsigned char *host = (unsigned char *)malloc(n), *dev, *freed;
    cudaError_t small, big, ls, lb;

    hfill(host, n, 77);
    CK(cudaMalloc((void **)&dev, n));
    cudaGetLastError();
    ok(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice) == cudaSuccess && cudaGetLastError() == cudaSuccess,
       "errors: a clean copy leaves no error behind");
    ok(cudaSetDevice(9999) != cudaSuccess, "errors: provoke an invalid-device error");
    ok(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice) == cudaSuccess, "errors: copy with an error pending");
    ok(cudaGetLastError() == cudaErrorInvalidDevice, "errors: the pending error survives the copy");
    ok(cudaGetLastError() == cudaSuccess, "errors: then it is cleared");

    small = cudaMemcpy((void *)0x1000, host, 16, cudaMemcpyHostToDevice);
    ls = cudaGetLastError();
    big = cudaMemcpy((void *)0x1000, host, n, cudaMemcpyHostToDevice);
    lb = cudaGetLastError();
    ok(big == small && lb == ls, "errors: bogus device pointer: %d (small copy %d), last %d (%d)", (int)big,
       (int)small, (int)lb, (int)ls);
    CK(cudaMalloc((void **)&freed, n));
    CK(cudaFree(freed));
    small = cudaMemcpy(host, freed, 16, cudaMemcpyDeviceToHost);
    ls = cudaGetLastError();
    big = cudaMemcpy(host, freed, n, cudaMemcpyDeviceToHost);
    lb = cudaGetLastError();
    ok(big == small && lb == ls, "errors: freed device pointer: %d (small copy %d), last %d (%d)", (int)big,
       (int)small, (int)lb, (int)ls);
    small = cudaMemcpy(dev, NULL, 16, cudaMemcpyHostToDevice);
    ls = cudaGetLastError();
    big = cudaMemcpy(dev, NULL, n, cudaMemcpyHostToDevice);
    lb = cudaGetLastError();
    ok(big == small && lb == ls, "errors: NULL source: %d (small copy %d)", (int)big, (int)small);
    cudaFree(dev);
    free(host);
}

int main(int argc, char **argv)
{
    int ndev = 0;

    quick = argc > 1 && !strcmp(argv[1], "-q");
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("1..0 # SKIP no CUDA device\n");
        return 0;
    }
    CK(cudaSetDevice(0));
    CK(cudaFree(0));
    t_integrity();
    t_overwrite();
    t_order();
    t_threads();
    t_errors();
    printf("1..%d\n", passed + failed);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
