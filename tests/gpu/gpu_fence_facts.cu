/* gpu_fence_facts.cu - the runtime behaviour the fence design relies on.
 *
 * Prints one line per check: "PASS id text", "FAIL id text" or "INFO id text"
 * (INFO is never a failure).  --shim: the program runs under pincache, which
 * changes what check e expects.  Exit 0 when nothing failed, 1 otherwise,
 * 2 on an unexpected CUDA error. */
#include "gpu_common.cuh"

#include <atomic>
#include <cudaTypedefs.h>
#include <stdarg.h>
#include <thread>
#include <unistd.h>

#define LONG_NS 50000000ull  /* 50 ms */
#define FREE_NS 30000000ull  /* 30 ms, as in DESIGN.md */

static volatile int *flag_h;
static int *flag_d;
#define CHECK GPU_CHECK

enum kind { PER_THREAD, BLOCKING, NONBLOCKING, BLOCKING_DESTROYED, NONBLOCKING_DESTROYED, DRIVER_NONBLOCKING };

/* The driver calls of pincache's default fence, from the runtime (this
 * program does not link libcuda). */
static PFN_cuCtxRecordEvent_v12050 p_ctx_record;
static PFN_cuCtxGetCurrent_v4000 p_ctx_current;
static PFN_cuStreamCreate_v2000 p_stream_create;

static void *entry(const char *sym, unsigned ver)
{
    void *f = NULL;
    cudaDriverEntryPointQueryResult st;
    if (cudaGetDriverEntryPointByVersion(sym, &f, ver, cudaEnableDefault, &st) != cudaSuccess ||
        st != cudaDriverEntryPointSuccess)
        return NULL;
    return f;
}

/* Record ev: on the legacy stream, or (ctx) for the whole current context. */
static cudaError_t record(cudaEvent_t ev, bool ctx)
{
    CUcontext c;
    if (!ctx)
        return cudaEventRecord(ev, cudaStreamLegacy);
    if (p_ctx_current(&c) != CUDA_SUCCESS || p_ctx_record(c, (CUevent)ev) != CUDA_SUCCESS)
        return cudaErrorUnknown;
    return cudaSuccess;
}

struct cover {
    int covered;  /* the kernel had finished when the event completed */
    int query_rc; /* cudaEventQuery right after the record */
    double wait_ms;
};

/* Thread T launches a long kernel on a stream of kind k; thread U then
 * records an event on cudaStreamLegacy (ctx: cuCtxRecordEvent on its current
 * context) and waits for it. */
static struct cover event_covers(enum kind k, bool ctx)
{
    struct cover c = {0, 0, 0};
    std::atomic<int> launched{0}, done{0};
    *flag_h = 0;
    std::thread t([&] {
        cudaStream_t s = cudaStreamPerThread;
        if (k == BLOCKING || k == BLOCKING_DESTROYED)
            CK(cudaStreamCreate(&s));
        else if (k == DRIVER_NONBLOCKING) {
            CUstream cs;
            CK(cudaFree(0)); /* a driver call needs this thread's context current */
            if (p_stream_create(&cs, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
                exit(2);
            s = (cudaStream_t)cs;
        } else if (k != PER_THREAD)
            CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        k_spin<<<1, 1, 0, s>>>(LONG_NS, flag_d);
        CK(cudaGetLastError());
        int destroyed = k == BLOCKING_DESTROYED || k == NONBLOCKING_DESTROYED;
        if (destroyed)
            CK(cudaStreamDestroy(s));
        launched = 1;
        while (!done) /* keep this thread, and its per-thread stream, alive */
            std::this_thread::yield();
        if (!destroyed && s != cudaStreamPerThread) {
            CK(cudaStreamSynchronize(s));
            CK(cudaStreamDestroy(s));
        }
    });
    std::thread u([&] {
        while (!launched)
            std::this_thread::yield();
        cudaEvent_t ev;
        CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
        uint64_t t0 = host_ns();
        CK(record(ev, ctx));
        c.query_rc = cudaEventQuery(ev);
        (void)cudaGetLastError();
        CK(cudaEventSynchronize(ev));
        c.wait_ms = ms_since(t0);
        c.covered = *flag_h;
        CK(cudaEventDestroy(ev));
        done = 1;
    });
    u.join();
    t.join();
    CK(cudaDeviceSynchronize());
    return c;
}

int main(int argc, char **argv)
{
    int shim = argc > 1 && !strcmp(argv[1], "--shim");
    CK(cudaFree(0));
    CK(cudaHostAlloc((void **)&flag_h, 4096, cudaHostAllocMapped));
    CK(cudaHostGetDevicePointer((void **)&flag_d, (void *)flag_h, 0));

    struct cover c;
    c = event_covers(PER_THREAD, false);
    CHECK(c.covered && c.query_rc == cudaErrorNotReady, "a",
          "legacy event from thread U waits for thread T's cudaStreamPerThread kernel "
          "(covered=%d query=%d wait_ms=%.1f)", c.covered, c.query_rc, c.wait_ms);
    c = event_covers(BLOCKING, false);
    CHECK(c.covered && c.query_rc == cudaErrorNotReady, "b",
          "legacy event waits for another thread's kernel on a blocking created stream "
          "(covered=%d query=%d wait_ms=%.1f)", c.covered, c.query_rc, c.wait_ms);
    c = event_covers(NONBLOCKING, false);
    gpu_line("INFO", "c", "legacy event covers a kernel on a non-blocking stream: %s "
         "(covered=%d wait_ms=%.1f; expected no: such streams need their own fence)",
         c.covered ? "yes" : "no", c.covered, c.wait_ms);
    c = event_covers(BLOCKING_DESTROYED, false);
    gpu_line("INFO", "c2", "legacy event covers a kernel on a blocking stream destroyed before "
         "the record: %s (wait_ms=%.1f)", c.covered ? "yes" : "no", c.wait_ms);
    c = event_covers(NONBLOCKING_DESTROYED, false);
    gpu_line("INFO", "c3", "legacy event covers a kernel on a non-blocking stream destroyed "
         "before the record: %s (wait_ms=%.1f)", c.covered ? "yes" : "no", c.wait_ms);

    /* h: the default fence, cuCtxRecordEvent, covers every kind of stream,
     * whoever made it and whether or not it still exists. */
    p_ctx_record = (PFN_cuCtxRecordEvent_v12050)entry("cuCtxRecordEvent", 12050);
    p_ctx_current = (PFN_cuCtxGetCurrent_v4000)entry("cuCtxGetCurrent", 4000);
    p_stream_create = (PFN_cuStreamCreate_v2000)entry("cuStreamCreate", 2000);
    CHECK(p_ctx_record && p_ctx_current && p_stream_create, "h0",
          "the runtime hands out cuCtxRecordEvent, cuCtxGetCurrent and cuStreamCreate");
    if (p_ctx_record && p_ctx_current && p_stream_create) {
        static const struct { enum kind k; const char *id, *what; } kinds[] = {
            { PER_THREAD, "h1", "another thread's cudaStreamPerThread" },
            { BLOCKING, "h2", "a blocking created stream" },
            { NONBLOCKING, "h3", "a non-blocking created stream" },
            { NONBLOCKING_DESTROYED, "h4", "a non-blocking stream destroyed before the record" },
            { BLOCKING_DESTROYED, "h5", "a blocking stream destroyed before the record" },
            { DRIVER_NONBLOCKING, "h6", "a non-blocking stream made with cuStreamCreate" },
        };
        for (auto &x : kinds) {
            c = event_covers(x.k, true);
            CHECK(c.covered && c.query_rc == cudaErrorNotReady, x.id,
                  "cuCtxRecordEvent waits for a kernel on %s (covered=%d query=%d wait_ms=%.1f)",
                  x.what, c.covered, c.query_rc, c.wait_ms);
        }
        /* h7: on an idle device it reports complete at once (else every
         * free would leave a fence behind for the next allocation to poll). */
        cudaEvent_t ev;
        int now = 0;
        CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
        CK(cudaDeviceSynchronize());
        for (int i = 0; i < 2000; i++) {
            CK(record(ev, true));
            now += cudaEventQuery(ev) == cudaSuccess;
            CK(cudaEventSynchronize(ev));
        }
        (void)cudaGetLastError();
        gpu_line("INFO", "h7", "cuCtxRecordEvent on the idle device complete at once %d times of 2000", now);
        CK(cudaEventDestroy(ev));
    }

    /* d: polling an unfinished event or stream leaves no error behind */
    {
        cudaEvent_t ev;
        CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
        k_spin<<<1, 1, 0, cudaStreamLegacy>>>(LONG_NS, NULL);
        CK(cudaGetLastError());
        CK(cudaEventRecord(ev, cudaStreamLegacy));
        cudaError_t q = cudaEventQuery(ev);
        cudaError_t peek = cudaPeekAtLastError();
        cudaError_t last = cudaGetLastError();
        cudaError_t sq = cudaStreamQuery(cudaStreamLegacy);
        cudaError_t last2 = cudaGetLastError();
        CHECK(q == cudaErrorNotReady && peek == cudaSuccess && last == cudaSuccess &&
              sq == cudaErrorNotReady && last2 == cudaSuccess, "d",
              "cudaEventQuery/cudaStreamQuery returning NotReady leave cudaGetLastError "
              "clean (event=%d peek=%d last=%d stream=%d last=%d)", q, peek, last, sq, last2);
        CK(cudaEventSynchronize(ev));
        CK(cudaEventDestroy(ev));
    }

    /* e, f, g: which host-memory calls wait for a 30 ms kernel on a
     * non-blocking stream that does not touch their memory */
    {
        cudaStream_t s;
        CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        void *p, *w;
        CK(cudaHostAlloc(&w, 1 << 20, 0)); /* warm-up cycle */
        CK(cudaFreeHost(w));
        CK(cudaHostAlloc(&p, 1 << 20, 0));
        k_spin<<<1, 1, 0, s>>>(FREE_NS, NULL);
        CK(cudaGetLastError());
        uint64_t t0 = host_ns();
        CK(cudaFreeHost(p));
        double free_ms = ms_since(t0);
        if (shim)
            CHECK(free_ms < 1.0, "e", "under pincache cudaFreeHost returns at once while "
                  "a 30 ms kernel runs (free_ms=%.3f, want < 1)", free_ms);
        else
            CHECK(free_ms >= 20.0, "e", "plain cudaFreeHost waits for a 30 ms kernel on a "
                  "non-blocking stream (free_ms=%.3f, want >= 20)", free_ms);

        k_spin<<<1, 1, 0, s>>>(FREE_NS, NULL);
        CK(cudaGetLastError());
        t0 = host_ns();
        CK(cudaHostAlloc(&p, 1 << 20, 0));
        double alloc_ms = ms_since(t0);
        CHECK(alloc_ms < 20.0, "f", "cudaHostAlloc does not wait for a 30 ms kernel "
              "(alloc_ms=%.3f, want < 20)", alloc_ms);
        CK(cudaDeviceSynchronize());
        CK(cudaFreeHost(p));

        void *m = NULL;
        if (posix_memalign(&m, 4096, 1 << 20))
            return 2;
        memset(m, 1, 1 << 20);
        k_spin<<<1, 1, 0, s>>>(FREE_NS, NULL);
        CK(cudaGetLastError());
        t0 = host_ns();
        CK(cudaHostRegister(m, 1 << 20, 0));
        double reg_ms = ms_since(t0);
        CHECK(reg_ms < 20.0, "g", "cudaHostRegister does not wait for a 30 ms kernel "
              "(register_ms=%.3f, want < 20)", reg_ms);
        CK(cudaDeviceSynchronize());
        k_spin<<<1, 1, 0, s>>>(FREE_NS, NULL);
        CK(cudaGetLastError());
        t0 = host_ns();
        CK(cudaHostUnregister(m));
        gpu_line("INFO", "g2", "cudaHostUnregister during a 30 ms kernel took %.3f ms", ms_since(t0));
        CK(cudaDeviceSynchronize());
        free(m);
        CK(cudaStreamDestroy(s));
    }

    CK(cudaFreeHost((void *)flag_h));
    printf("RESULT fence_facts failed=%d\n", gpu_fails);
    return gpu_fails ? 1 : 0;
}
