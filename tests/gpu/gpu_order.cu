/* gpu_order.cu - when a pageable H2D copy reads its source, and how long it
 * holds the host (issue 15 D1 and D2; the table in pincache(7) PAGEABLE
 * COPIES, measured in /work/facts/h200-order.md).  Run plainly it asserts
 * the runtime's rows; under pincache (--shim) the same bytes must arrive,
 * and an async copy returns at once where the runtime held the host.
 *
 * Each case: a host function on stream Q sleeps 100 ms, then fills the
 * pageable source (which was 'A') with 'Z'; then the copy.  The device
 * buffer is read back once the device is idle.
 *
 * Prints "PASS id text", "FAIL id text" or "INFO id text" (INFO is never a
 * failure), then RESULT.  Exit 0 when nothing failed, 1 otherwise, 2 on an
 * unexpected CUDA error. */
#include "gpu_common.cuh"

#include <stdarg.h>
#include <thread>
#include <unistd.h>

/* Exported by libcudart.so (the per-thread variant a program built with
 * --default-stream per-thread calls); declared only in such a build. */
extern "C" cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);

#define KB ((size_t)1 << 10)
#define MB ((size_t)1 << 20)
#define HOSTFN_MS 100
#define HELD_MS 50            /* a call that took longer waited for the host function */

static bool shim;

struct fill {
    unsigned char *p;
    size_t n;
};

static void CUDART_CB sleep_fill(void *arg)
{
    struct fill *f = (struct fill *)arg;
    usleep(HOSTFN_MS * 1000);
    memset(f->p, 'Z', f->n);
}

/* Bytes of the first n of p equal to v. */
static size_t count(const unsigned char *p, size_t n, int v)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += p[i] == (unsigned char)v;
    return c;
}

enum q { Q_LEGACY, Q_PER_THREAD, Q_BLOCKING, Q_NONBLOCKING, Q_COUNT };
static const char *q_name[Q_COUNT] = { "legacy", "perthread", "blocking", "nonblocking" };
enum call { C_MEMCPY, C_MEMCPY_PTDS, C_ASYNC };
static const char *c_name[] = { "cudaMemcpy", "cudaMemcpy_ptds", "cudaMemcpyAsync" };

static cudaStream_t qs[Q_COUNT];
static unsigned char *src, *dev, *back;

/* One case: the host function on q, then the copy (an async one on q).
 * *ms: time in the call; *a, *z: bytes of the result that are 'A' / 'Z'
 * (in the first `first` bytes: *a_first). */
static void one(enum q q, enum call c, size_t n, double *ms, size_t *a, size_t *z, size_t first,
                size_t *a_first)
{
    struct fill f = { src, n };
    uint64_t t0;

    memset(src, 'A', n);
    CK(cudaMemset(dev, 0, n));
    CK(cudaDeviceSynchronize());
    CK(cudaLaunchHostFunc(qs[q], sleep_fill, &f));
    t0 = host_ns();
    switch (c) {
    case C_MEMCPY: CK(cudaMemcpy(dev, src, n, cudaMemcpyHostToDevice)); break;
    case C_MEMCPY_PTDS: CK(cudaMemcpy_ptds(dev, src, n, cudaMemcpyHostToDevice)); break;
    case C_ASYNC: CK(cudaMemcpyAsync(dev, src, n, cudaMemcpyHostToDevice, qs[q])); break;
    }
    *ms = ms_since(t0);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(back, dev, n, cudaMemcpyDeviceToHost));
    *a = count(back, n, 'A');
    *z = count(back, n, 'Z');
    *a_first = count(back, first, 'A');
}

static void order(void)
{
    static const size_t sizes[] = { 64 * KB, 1 * MB, 16 * MB };
    char id[96];

    for (int c = C_MEMCPY; c <= C_ASYNC; c++) {
        for (int q = 0; q < Q_COUNT; q++) {
            for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
                size_t n = sizes[k], first = n < 2 * MB ? n : 2 * MB, a, z, af;
                double ms;
                /* Rows of h200-order.md.  waits: the call reads the source
                 * after the host function; behind: its DMA is queued behind
                 * it, but it reads at the call (the first 2 MiB at least). */
                bool waits = c == C_MEMCPY ? q != Q_NONBLOCKING : c == C_MEMCPY_PTDS && q == Q_PER_THREAD;
                bool behind = c == C_ASYNC || (c == C_MEMCPY_PTDS && q == Q_LEGACY);
                bool measured = n != 1 * MB;   /* 1 MiB: the model's guess (fits the 2 MiB buffer) */

                one((enum q)q, (enum call)c, n, &ms, &a, &z, first, &af);
                snprintf(id, sizeof id, "%s.%s.%zu", c_name[c], q_name[q], n);
                if (waits) {
                    GPU_CHECK(z == n && ms >= HELD_MS, id,
                          "reads after the host function: %zu of %zu bytes 'Z', call %.1f ms (want all, >= %d ms)", z,
                          n, ms, HELD_MS);
                } else if (!behind) {
                    /* Not ordered after it: its bytes are a race, undefined. */
                    GPU_CHECK(ms < HELD_MS, id, "does not wait for the host function's stream: call %.1f ms", ms);
                    gpu_line("INFO", id, "%zu 'A', %zu 'Z' (not ordered: undefined)", a, z);
                } else if (n <= 2 * MB) {
                    gpu_line(measured ? (a == n && ms < HELD_MS ? "PASS" : "FAIL") : "INFO", id,
                         "reads at the call: %zu of %zu bytes 'A', call %.1f ms (want all, < %d ms)", a, n, ms,
                         HELD_MS);
                } else {
                    GPU_CHECK(af == first, id,
                          "reads its first 2 MiB at the call: %zu of %zu 'A' (the rest: %zu 'Z', undefined)", af,
                          first, z);
                    if (shim)
                        GPU_CHECK(ms < HELD_MS, id, "under pincache returns at once: %.1f ms", ms);
                    else
                        GPU_CHECK(ms >= HELD_MS, id, "holds the host until the host function ran: %.1f ms", ms);
                }
            }
        }
    }
}

/* Two cudaMalloc'd neighbours: a pageable copy across the seam is rejected. */
static void span(void)
{
    enum { TRIES = 8 };
    size_t n = 2 * MB;
    unsigned char *d[TRIES] = { NULL }, *lo = NULL;
    cudaError_t e1, e2, last;

    for (int i = 0; i < TRIES && !lo; i++) {
        CK(cudaMalloc((void **)&d[i], n));
        for (int j = 0; j < i && !lo; j++) {
            if (d[j] + n == d[i])
                lo = d[j];
            else if (d[i] + n == d[j])
                lo = d[i];
        }
    }
    if (!lo) {
        gpu_line("INFO", "span", "no two adjacent cudaMalloc allocations: not checked");
    } else {
        memset(src, 'S', n);
        CK(cudaMemset(lo, 0, n));
        CK(cudaMemset(lo + n, 0, n)); /* one memset across the seam is refused too */
        e1 = cudaMemcpy(lo + n / 2, src, n, cudaMemcpyHostToDevice);
        last = cudaGetLastError();
        CK(cudaMemcpy(back, lo, n, cudaMemcpyDeviceToHost));
        GPU_CHECK(e1 == cudaErrorInvalidValue && last == cudaErrorInvalidValue && count(back, n, 0) == n, "span.h2d",
              "pageable H2D across two allocations: rc=%d, last error %d, %zu of %zu bytes untouched (want 1, 1, all)",
              (int)e1, (int)last, count(back, n, 0), n);
        e2 = cudaMemcpy(src, lo + n / 2, n, cudaMemcpyDeviceToHost);
        last = cudaGetLastError();
        GPU_CHECK(e2 == cudaErrorInvalidValue && last == cudaErrorInvalidValue, "span.d2h",
              "pageable D2H across two allocations: rc=%d, last error %d (want 1, 1)", (int)e2, (int)last);
    }
    for (int i = 0; i < TRIES; i++)
        if (d[i])
            CK(cudaFree(d[i]));
}

/* D2: thread A queues a host function on non-blocking s1 that waits (up to
 * 3 s) for thread B's copy to return, then a 16 MiB pageable async copy on
 * s1; thread B copies 16 MiB pageable on non-blocking s2.  Plainly B's copy
 * does not return until the host function gives up (the runtime's hang);
 * under pincache it returns at once. */
static volatile int b_done;

static void CUDART_CB wait_for_b(void *arg)
{
    (void)arg;
    for (int i = 0; i < 3000 && !b_done; i++)
        usleep(1000);
}

static void hang(void)
{
    size_t n = 16 * MB;
    unsigned char *s1src = (unsigned char *)malloc(n), *s2src = (unsigned char *)malloc(n), *d1, *d2;
    cudaStream_t s1, s2;
    double b_ms = 0;

    CK(cudaMalloc((void **)&d1, n));
    CK(cudaMalloc((void **)&d2, n));
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    memset(s1src, '1', n);
    memset(s2src, '2', n);
    b_done = 0;
    std::thread a([&] {
        CK(cudaLaunchHostFunc(s1, wait_for_b, NULL));
        CK(cudaMemcpyAsync(d1, s1src, n, cudaMemcpyHostToDevice, s1));
    });
    usleep(50 * 1000);
    std::thread b([&] {
        uint64_t t0 = host_ns();
        CK(cudaMemcpyAsync(d2, s2src, n, cudaMemcpyHostToDevice, s2));
        b_ms = ms_since(t0);
        b_done = 1;
    });
    a.join();
    b.join();
    CK(cudaDeviceSynchronize());
    if (shim)
        GPU_CHECK(b_ms < 1000, "hang", "under pincache B's copy returns: %.1f ms (want < 1000)", b_ms);
    else
        GPU_CHECK(b_ms >= 2000, "hang", "plainly B's copy waits for A's host function to give up: %.1f ms (want >= 2000)",
              b_ms);
    CK(cudaMemcpy(s1src, d1, n, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(s2src, d2, n, cudaMemcpyDeviceToHost));
    GPU_CHECK(count(s1src, n, '1') == n && count(s2src, n, '2') == n, "hang.bytes", "both copies delivered their bytes");
    CK(cudaStreamDestroy(s1));
    CK(cudaStreamDestroy(s2));
    CK(cudaFree(d1));
    CK(cudaFree(d2));
    free(s1src);
    free(s2src);
}

/* What pincache's wait before a sync pageable H2D costs when there is
 * nothing to wait for: an event recorded on the idle legacy stream and
 * synchronized (cudaMemcpy), the idle per-thread stream synchronized and the
 * legacy stream queried (cudaMemcpy_ptds). */
static void wait_cost(void)
{
    enum { N = 20000 };
    cudaEvent_t ev;
    uint64_t t0;
    double ev_us, pt_us;

    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CK(cudaDeviceSynchronize());
    t0 = host_ns();
    for (int i = 0; i < N; i++) {
        CK(cudaEventRecord(ev, cudaStreamLegacy));
        CK(cudaEventSynchronize(ev));
    }
    ev_us = ms_since(t0) * 1e3 / N;
    t0 = host_ns();
    for (int i = 0; i < N; i++) {
        CK(cudaStreamSynchronize(cudaStreamPerThread));
        CK(cudaStreamQuery(cudaStreamLegacy));
    }
    pt_us = ms_since(t0) * 1e3 / N;
    gpu_line("INFO", "waitcost", "idle legacy event record+sync %.3f us; idle per-thread sync + legacy query %.3f us",
             ev_us, pt_us);
    CK(cudaEventDestroy(ev));
}

int main(int argc, char **argv)
{
    int ndev = 0;

    shim = argc > 1 && !strcmp(argv[1], "--shim");
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("RESULT order skipped (no device)\n");
        return 0;
    }
    src = (unsigned char *)malloc(16 * MB);
    CK(cudaMallocHost((void **)&back, 16 * MB));
    CK(cudaMalloc((void **)&dev, 16 * MB));
    qs[Q_LEGACY] = cudaStreamLegacy;
    qs[Q_PER_THREAD] = cudaStreamPerThread;
    CK(cudaStreamCreate(&qs[Q_BLOCKING]));
    CK(cudaStreamCreateWithFlags(&qs[Q_NONBLOCKING], cudaStreamNonBlocking));
    wait_cost();
    order();
    span();
    hang();
    printf("RESULT order fails=%d\n", gpu_fails);
    return gpu_fails ? 1 : 0;
}
