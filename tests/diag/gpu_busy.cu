/* gpu_busy.cu - facts sync attribution relies on, measured on a real GPU.
 *
 *   a  idle device: how often does an event recorded on the legacy stream
 *      report NotReady right away?  (record+query as a "busy" test)
 *   b  idle device: does cudaStreamQuery(cudaStreamLegacy) ever say NotReady?
 *   c  a kernel on another thread's per-thread stream / a blocking stream /
 *      a non-blocking stream: does cudaStreamQuery(cudaStreamLegacy) from
 *      this thread see it?
 *   d  costs: cudaStreamQuery, cudaEventRecord+cudaEventQuery, cudaPeekAtLastError
 *
 * Prints "INFO key value" lines; never fails (exit 2 on a CUDA error). */
#include "../gpu/gpu_common.cuh"

#include <atomic>
#include <thread>
#include <unistd.h>

#define N 2000

static void info(const char *k, double v)
{
    printf("INFO %s %.3f\n", k, v);
    fflush(stdout);
}

enum kind { PER_THREAD, BLOCKING, NONBLOCKING };

/* Thread T launches a 50 ms kernel on a stream of kind k; the calling
 * thread then queries the legacy stream. */
static int legacy_query_sees(enum kind k)
{
    std::atomic<int> launched{0}, done{0};
    int rc = 0;
    std::thread t([&] {
        cudaStream_t s = cudaStreamPerThread;
        if (k == BLOCKING)
            CK(cudaStreamCreate(&s));
        else if (k == NONBLOCKING)
            CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
        k_spin<<<1, 1, 0, s>>>(50000000ull, NULL);
        CK(cudaGetLastError());
        launched = 1;
        while (!done)
            std::this_thread::yield();
        CK(cudaStreamSynchronize(s));
        if (s != cudaStreamPerThread)
            CK(cudaStreamDestroy(s));
    });
    while (!launched)
        std::this_thread::yield();
    usleep(2000);
    rc = cudaStreamQuery(cudaStreamLegacy) == cudaErrorNotReady;
    (void)cudaGetLastError();
    done = 1;
    t.join();
    return rc;
}

int main(void)
{
    cudaEvent_t ev;
    uint64_t t0;
    int notready = 0;

    CK(cudaFree(0));
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CK(cudaDeviceSynchronize());

    /* a */
    t0 = host_ns();
    for (int i = 0; i < N; i++) {
        CK(cudaEventRecord(ev, cudaStreamLegacy));
        notready += cudaEventQuery(ev) == cudaErrorNotReady;
    }
    info("idle_record_query_notready_pct", 100.0 * notready / N);
    info("record_query_ns", (double)(host_ns() - t0) / N);
    CK(cudaDeviceSynchronize());

    /* b */
    notready = 0;
    t0 = host_ns();
    for (int i = 0; i < N; i++)
        notready += cudaStreamQuery(cudaStreamLegacy) == cudaErrorNotReady;
    info("idle_stream_query_notready_pct", 100.0 * notready / N);
    info("stream_query_ns", (double)(host_ns() - t0) / N);

    t0 = host_ns();
    for (int i = 0; i < N; i++)
        (void)cudaPeekAtLastError();
    info("peek_last_error_ns", (double)(host_ns() - t0) / N);

    /* b': right after a copy finished (the sync returned) */
    {
        void *d, *h;
        CK(cudaMalloc(&d, 1 << 20));
        CK(cudaHostAlloc(&h, 1 << 20, 0));
        notready = 0;
        int ev_notready = 0;
        for (int i = 0; i < 200; i++) {
            CK(cudaMemcpy(d, h, 1 << 20, cudaMemcpyHostToDevice));
            notready += cudaStreamQuery(cudaStreamLegacy) == cudaErrorNotReady;
            CK(cudaEventRecord(ev, cudaStreamLegacy));
            ev_notready += cudaEventQuery(ev) == cudaErrorNotReady;
            CK(cudaDeviceSynchronize());
        }
        info("after_sync_copy_stream_query_notready_pct", 100.0 * notready / 200);
        info("after_sync_copy_record_query_notready_pct", 100.0 * ev_notready / 200);
        CK(cudaFree(d));
        CK(cudaFreeHost(h));
    }

    /* c */
    info("legacy_query_sees_per_thread_stream", legacy_query_sees(PER_THREAD));
    info("legacy_query_sees_blocking_stream", legacy_query_sees(BLOCKING));
    info("legacy_query_sees_nonblocking_stream", legacy_query_sees(NONBLOCKING));
    /* a kernel on the legacy stream itself */
    k_spin<<<1, 1>>>(20000000ull, NULL);
    info("legacy_query_sees_legacy_kernel", cudaStreamQuery(cudaStreamLegacy) == cudaErrorNotReady);
    CK(cudaDeviceSynchronize());

    /* d: a busy-now check as pincache did it, record+query per device */
    return 0;
}
