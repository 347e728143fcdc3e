/* gpu_capture.cu - pinned frees and allocations made while a stream graph
 * capture is under way, begun through the runtime or the driver API, in each
 * capture mode, from the capturing thread and from another one.
 *
 * Each case: stream W runs a 20 ms kernel (event E recorded after it) and a
 * copy from a pinned block P; stream C begins a capture and captures a
 * kernel; then, from the capturing thread or another one:
 *   free        P is freed;
 *   alloc       a block of P's size is allocated (P was freed before, with
 *               the device idle: a caching shim holds it ready);
 *   alloc_busy  the same, P freed after its copy was queued (a caching shim
 *               holds it behind a fence it would have to query);
 *   evquery     cudaEventQuery(E);
 * then the capture ends and, if that worked, its graph is launched and its
 * kernel's effect checked.  Printed as
 *   OUTCOME op=.. api=.. mode=.. where=.. op_rc=N end_rc=N launch_rc=N ok=0|1
 * gpu-suite.sh compares these lines between the plain and the shimmed run:
 * the shim must leave every outcome as the runtime gives it.  A context-wide
 * fence (cuCtxRecordEvent) during any capture of the context invalidates
 * it, so a shim that fenced during one would change these outcomes
 * (PINCACHE_TEST_CAPTURE_BLIND=1 does so on purpose).
 *
 * Facts (INFO): what cuCtxRecordEvent does during a capture.
 * --shim: PASS when, after all the captures ended, a free made while the
 * device is busy returns at once (the shim caches again: it saw every
 * capture end). */
#include "gpu_common.cuh"

#include <cuda.h>
#include <thread>

#define SZ (1u << 20)

__global__ void k_add(int *x, int v) { *x += v; }

enum { API_RT, API_DRV };
static const char *api_name[] = { "rt", "drv" };
static const char *mode_name[] = { "global", "thread", "relaxed" };

static int begin(int api, cudaStream_t s, int mode)
{
    if (api == API_RT)
        return (int)cudaStreamBeginCapture(s, (cudaStreamCaptureMode)mode);
    return (int)cuStreamBeginCapture((CUstream)s, (CUstreamCaptureMode)mode);
}

static int end(int api, cudaStream_t s, cudaGraph_t *g)
{
    if (api == API_RT)
        return (int)cudaStreamEndCapture(s, g);
    return (int)cuStreamEndCapture((CUstream)s, (CUgraph *)g);
}

/* Run f on this thread or on a new one. */
template <class F> static void on(int other, F f)
{
    if (!other) {
        f();
        return;
    }
    std::thread t(f);
    t.join();
}

struct ctx {
    cudaStream_t w, c;
    int *dev_x;
    void *dbuf;
};

enum { OP_FREE, OP_ALLOC, OP_ALLOC_BUSY, OP_EVQUERY, OP_N };
static const char *op_name[] = { "free", "alloc", "alloc_busy", "evquery" };

/* One case; returns 0 when it could be run at all. */
static int one(struct ctx *k, int op, int api, int mode, int other)
{
    void *p = NULL, *q = NULL;
    int op_rc = -1, end_rc = -1, launch_rc = -1, ok = 0;
    cudaGraph_t g = NULL;
    cudaEvent_t ev;

    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CK(cudaMemset(k->dev_x, 0, sizeof(int)));
    CK(cudaHostAlloc(&p, SZ, 0));
    memset(p, 7, SZ);
    if (op == OP_ALLOC) {
        /* freed while the device is idle: a cache holds it ready */
        CK(cudaFreeHost(p));
        p = NULL;
    }
    CK(cudaDeviceSynchronize());
    k_spin<<<1, 1, 0, k->w>>>(20000000ull, NULL);
    CK(cudaGetLastError());
    CK(cudaEventRecord(ev, k->w));
    if (p)
        CK(cudaMemcpyAsync(k->dbuf, p, SZ, cudaMemcpyHostToDevice, k->w));
    if (op == OP_ALLOC_BUSY) {
        /* freed while its copy may still run: a cache holds it behind a fence */
        CK(cudaFreeHost(p));
        p = NULL;
    }
    int b = begin(api, k->c, mode);
    if (b != 0) {
        printf("INFO begin api=%s mode=%s: error %d\n", api_name[api], mode_name[mode], b);
        CK(cudaDeviceSynchronize());
        if (p)
            CK(cudaFreeHost(p));
        CK(cudaEventDestroy(ev));
        return -1;
    }
    k_add<<<1, 1, 0, k->c>>>(k->dev_x, 1);
    switch (op) {
    case OP_FREE:
        on(other, [&] { op_rc = (int)cudaFreeHost(p); });
        break;
    case OP_ALLOC:
    case OP_ALLOC_BUSY:
        on(other, [&] { op_rc = (int)cudaHostAlloc(&q, SZ, 0); });
        break;
    case OP_EVQUERY:
        on(other, [&] { op_rc = (int)cudaEventQuery(ev); });
        if (op_rc == (int)cudaErrorNotReady)
            op_rc = 0;           /* the kernel may or may not be done: the same */
        break;
    }
    end_rc = end(api, k->c, &g);
    if (end_rc == 0 && g) {
        cudaGraphExec_t ge = NULL;
        launch_rc = (int)cudaGraphInstantiate(&ge, g, 0);
        if (launch_rc == 0)
            launch_rc = (int)cudaGraphLaunch(ge, k->c);
        if (launch_rc == 0)
            launch_rc = (int)cudaStreamSynchronize(k->c);
        int x = -1;
        if (launch_rc == 0 && cudaMemcpy(&x, k->dev_x, sizeof x, cudaMemcpyDeviceToHost) == cudaSuccess)
            ok = x == 1;
        if (ge)
            cudaGraphExecDestroy(ge);
    }
    if (g)
        cudaGraphDestroy(g);
    cudaDeviceSynchronize();
    cudaGetLastError();
    /* leave nothing behind: a refused free is made again, an allocation freed */
    if (op == OP_FREE && op_rc != 0)
        CK(cudaFreeHost(p));
    if (p && op != OP_FREE)
        CK(cudaFreeHost(p));
    if (q && op_rc == 0)
        CK(cudaFreeHost(q));
    CK(cudaDeviceSynchronize());
    CK(cudaEventDestroy(ev));
    printf("OUTCOME op=%s api=%s mode=%s where=%s op_rc=%d end_rc=%d launch_rc=%d ok=%d\n",
           op_name[op], api_name[api], mode_name[mode], other ? "other" : "same", op_rc, end_rc,
           launch_rc, ok);
    fflush(stdout);
    return 0;
}

/* What cuCtxRecordEvent does to a capture of its context (INFO). */
static void ctx_record_fact(struct ctx *k, int mode, int other)
{
    CUcontext cx = NULL;
    cudaEvent_t ev;
    cudaGraph_t g = NULL;
    int rec = -1, e;

    if (cuCtxGetCurrent(&cx) != CUDA_SUCCESS || !cx)
        return;
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    if (cudaStreamBeginCapture(k->c, (cudaStreamCaptureMode)mode) != cudaSuccess) {
        cudaGetLastError();
        CK(cudaEventDestroy(ev));
        return;
    }
    k_add<<<1, 1, 0, k->c>>>(k->dev_x, 1);
    on(other, [&] {
        cuCtxSetCurrent(cx);
        rec = (int)cuCtxRecordEvent(cx, (CUevent)ev);
    });
    e = (int)cudaStreamEndCapture(k->c, &g);
    if (g)
        cudaGraphDestroy(g);
    cudaGetLastError();
    CK(cudaDeviceSynchronize());
    CK(cudaEventDestroy(ev));
    printf("INFO ctxrecord mode=%s where=%s: cuCtxRecordEvent during the capture returned %d, the "
           "capture's end %d\n", mode_name[mode], other ? "other" : "same", rec, e);
}

int main(int argc, char **argv)
{
    int shim = argc > 1 && !strcmp(argv[1], "--shim");
    struct ctx k;
    int cases = 0;

    CK(cudaFree(0));
    CK(cudaStreamCreateWithFlags(&k.w, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&k.c, cudaStreamNonBlocking));
    CK(cudaMalloc(&k.dev_x, sizeof(int)));
    CK(cudaMalloc(&k.dbuf, SZ));

    /* relaxed first: the cases a fence during the capture would break come
     * before any that could make a shim stop caching */
    for (int op = 0; op < OP_N; op++)
        for (int api = 0; api < 2; api++)
            for (int mode = 2; mode >= 0; mode--)
                for (int other = 0; other < 2; other++)
                    cases += one(&k, op, api, mode, other) == 0;
    for (int mode = 0; mode < 3; mode++)
        for (int other = 0; other < 2; other++)
            ctx_record_fact(&k, mode, other);

    /* After every capture ended: a free while the device is busy. */
    void *p;
    CK(cudaHostAlloc(&p, SZ, 0));
    k_spin<<<1, 1, 0, k.w>>>(50000000ull, NULL);
    CK(cudaMemcpyAsync(k.dbuf, p, SZ, cudaMemcpyHostToDevice, k.w));
    uint64_t t0 = host_ns();
    CK(cudaFreeHost(p));
    double free_ms = ms_since(t0);
    CK(cudaDeviceSynchronize());
    if (shim)
        printf("%s after: a free with the device busy 50 ms took %.3f ms after the %d captures "
               "(cached: under 5 ms)\n", free_ms < 5.0 ? "PASS" : "FAIL", free_ms, cases);
    else
        printf("INFO after: a free with the device busy 50 ms took %.3f ms\n", free_ms);
    printf("RESULT capture cases=%d\n", cases);
    return 0;
}
