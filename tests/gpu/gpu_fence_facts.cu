/* gpu_fence_facts.cu - the runtime behaviour the fence design relies on.
 *
 * Prints one line per check: "PASS id text", "FAIL id text" or "INFO id text"
 * (INFO is never a failure).  --shim: the program runs under pincache, which
 * changes what check e expects.  Exit 0 when nothing failed, 1 otherwise,
 * 2 on an unexpected CUDA error. */
#include "gpu_common.cuh"

#include <atomic>
#include <stdarg.h>
#include <thread>
#include <unistd.h>

#define LONG_NS 50000000ull  /* 50 ms */
#define FREE_NS 30000000ull  /* 30 ms, as in DESIGN.md */

static volatile int *flag_h;
static int *flag_d;
static int fails;

static void line(const char *kind, const char *id, const char *fmt, ...)
{
    va_list ap;
    printf("%s %s ", kind, id);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
    if (!strcmp(kind, "FAIL"))
        fails++;
}
#define CHECK(ok, id, ...) line((ok) ? "PASS" : "FAIL", id, __VA_ARGS__)

enum kind { PER_THREAD, BLOCKING, NONBLOCKING, BLOCKING_DESTROYED, NONBLOCKING_DESTROYED };

struct cover {
    int covered;  /* the kernel had finished when the event completed */
    int query_rc; /* cudaEventQuery right after the record */
    double wait_ms;
};

/* Thread T launches a long kernel on a stream of kind k; thread U then
 * records an event on cudaStreamLegacy and waits for it. */
static struct cover legacy_event_covers(enum kind k)
{
    struct cover c = {0, 0, 0};
    std::atomic<int> launched{0}, done{0};
    *flag_h = 0;
    std::thread t([&] {
        cudaStream_t s = cudaStreamPerThread;
        if (k == BLOCKING || k == BLOCKING_DESTROYED)
            CK(cudaStreamCreate(&s));
        else if (k != PER_THREAD)
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
        CK(cudaEventRecord(ev, cudaStreamLegacy));
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
    c = legacy_event_covers(PER_THREAD);
    CHECK(c.covered && c.query_rc == cudaErrorNotReady, "a",
          "legacy event from thread U waits for thread T's cudaStreamPerThread kernel "
          "(covered=%d query=%d wait_ms=%.1f)", c.covered, c.query_rc, c.wait_ms);
    c = legacy_event_covers(BLOCKING);
    CHECK(c.covered && c.query_rc == cudaErrorNotReady, "b",
          "legacy event waits for another thread's kernel on a blocking created stream "
          "(covered=%d query=%d wait_ms=%.1f)", c.covered, c.query_rc, c.wait_ms);
    c = legacy_event_covers(NONBLOCKING);
    line("INFO", "c", "legacy event covers a kernel on a non-blocking stream: %s "
         "(covered=%d wait_ms=%.1f; expected no: such streams need their own fence)",
         c.covered ? "yes" : "no", c.covered, c.wait_ms);
    c = legacy_event_covers(BLOCKING_DESTROYED);
    line("INFO", "c2", "legacy event covers a kernel on a blocking stream destroyed before "
         "the record: %s (wait_ms=%.1f)", c.covered ? "yes" : "no", c.wait_ms);
    c = legacy_event_covers(NONBLOCKING_DESTROYED);
    line("INFO", "c3", "legacy event covers a kernel on a non-blocking stream destroyed "
         "before the record: %s (wait_ms=%.1f)", c.covered ? "yes" : "no", c.wait_ms);

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
        line("INFO", "g2", "cudaHostUnregister during a 30 ms kernel took %.3f ms", ms_since(t0));
        CK(cudaDeviceSynchronize());
        free(m);
        CK(cudaStreamDestroy(s));
    }

    CK(cudaFreeHost((void *)flag_h));
    printf("RESULT fence_facts failed=%d\n", fails);
    return fails ? 1 : 0;
}
