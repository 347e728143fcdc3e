/* coldalloc.cu - cold pinned allocations, and the copy rates of the blocks
 * (issue 18).  One mode per process; coldalloc.sh runs each plainly and under
 * pincache and compares the processes.
 *
 *   coldalloc probe             exit 3 when there is no CUDA device
 *   coldalloc alloc SIZE REPS   REPS cudaHostAlloc(SIZE, 0), each timed, every
 *                               block kept until all are made (no cache can
 *                               serve one from an idle block); then each
 *                               cudaFreeHost timed
 *   coldalloc rates [REPS [SIZE...]]
 *                               per size (default 64K..1G): a block from
 *                               cudaHostAlloc (pincache's, when preloaded),
 *                               H2D and D2H interleaved, REPS samples each
 *                               (default 15), timed two ways (below)
 *
 * SIZE takes K, M or G (powers of 1024).  Rates are timed on the device
 * ("dev": events around cudaMemcpyAsync copies all queued behind a host
 * function before it lets them run, so pincache's per-call work on the host
 * is not in them: the question is how fast the DMA reads and writes the
 * block) and on the host ("host": synchronous cudaMemcpy, what a program
 * sees).  A sample of a small size is COPIES copies, up to 16 MiB and 64
 * copies, to stay long against the events' 0.5 us resolution.
 * Prints "COLDALLOC alloc|free size=... reps=... median_ms=... min_ms=...
 * max_ms=... ms=A,B,..." and "COLDALLOC rate size=... dir=h2d|d2h
 * timing=dev|host copies=... median_gbps=... min_gbps=... max_gbps=...". */
#include "../gpu/gpu_common.cuh"

#include <errno.h>
#include <pthread.h>

#include <algorithm>
#include <vector>

#define SAMPLE_BYTES (16u << 20)
#define MAX_COPIES 64
#define GATE_TIMEOUT_S 10

static size_t parse_size(const char *s)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    switch (*end) {
    case 'K': v <<= 10; end++; break;
    case 'M': v <<= 20; end++; break;
    case 'G': v <<= 30; end++; break;
    }
    return *end || end == s ? 0 : (size_t)v;
}

/* Sorted in place; the median of an even count is the mean of the middle two. */
static double median(std::vector<double> &v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void print_ms(const char *op, size_t size, std::vector<double> ms)
{
    printf("COLDALLOC %s size=%zu reps=%zu", op, size, ms.size());
    std::vector<double> s = ms;
    double med = median(s);
    printf(" median_ms=%.3f min_ms=%.3f max_ms=%.3f ms=", med, s.front(), s.back());
    for (size_t i = 0; i < ms.size(); i++)
        printf("%s%.3f", i ? "," : "", ms[i]);
    printf("\n");
    fflush(stdout);
}

static int mode_alloc(size_t size, int reps)
{
    std::vector<void *> p(reps);
    std::vector<double> ms(reps);
    unsigned char *d;
    CK(cudaFree(0));
    CK(cudaMalloc(&d, 4096));
    for (int i = 0; i < reps; i++) {
        uint64_t t0 = host_ns();
        CK(cudaHostAlloc(&p[i], size, 0));
        ms[i] = ms_since(t0);
    }
    print_ms("alloc", size, ms);
    /* every block usable as pinned memory (untimed) */
    size_t tail = size < 4096 ? size : 4096;
    for (int i = 0; i < reps; i++) {
        unsigned char *h = (unsigned char *)p[i];
        h[0] = (unsigned char)i;
        h[size - 1] = (unsigned char)i;
        CK(cudaMemcpy(d, h + size - tail, tail, cudaMemcpyHostToDevice));
    }
    for (int i = 0; i < reps; i++) {
        uint64_t t0 = host_ns();
        CK(cudaFreeHost(p[i]));
        ms[i] = ms_since(t0);
    }
    print_ms("free", size, ms);
    CK(cudaFree(d));
    return 0;
}

/* Holds a stream until the host has queued a sample's copies.  Shared by the
 * main thread and the runtime's host-function thread, under m.  A sample
 * that outgrew the stream's queue would block the host in cudaMemcpyAsync
 * with the gate shut: after GATE_TIMEOUT_S the gate opens and counts late. */
struct gate {
    pthread_mutex_t m;
    pthread_cond_t c;
    int open;
    int late;
};

static void CUDART_CB gate_wait(void *arg)
{
    struct gate *g = (struct gate *)arg;
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += GATE_TIMEOUT_S;
    pthread_mutex_lock(&g->m);
    while (!g->open)
        if (pthread_cond_timedwait(&g->c, &g->m, &dl) == ETIMEDOUT) {
            g->late++;
            break;
        }
    pthread_mutex_unlock(&g->m);
}

struct rate_run {
    cudaStream_t s;
    cudaEvent_t e0, e1;
    struct gate g;
    unsigned char *d, *h;
    size_t n;
    int copies;
};

static void copy(struct rate_run *r, int h2d, cudaStream_t s)
{
    if (h2d)
        CK(cudaMemcpyAsync(r->d, r->h, r->n, cudaMemcpyHostToDevice, s));
    else
        CK(cudaMemcpyAsync(r->h, r->d, r->n, cudaMemcpyDeviceToHost, s));
}

/* One sample in GB/s (bytes per ns). */
static double sample_dev(struct rate_run *r, int h2d)
{
    float ms;
    pthread_mutex_lock(&r->g.m);
    r->g.open = 0;
    pthread_mutex_unlock(&r->g.m);
    CK(cudaLaunchHostFunc(r->s, gate_wait, &r->g));
    CK(cudaEventRecord(r->e0, r->s));
    for (int i = 0; i < r->copies; i++)
        copy(r, h2d, r->s);
    CK(cudaEventRecord(r->e1, r->s));
    pthread_mutex_lock(&r->g.m);
    r->g.open = 1;
    pthread_cond_signal(&r->g.c);
    pthread_mutex_unlock(&r->g.m);
    CK(cudaEventSynchronize(r->e1));
    CK(cudaEventElapsedTime(&ms, r->e0, r->e1));
    return (double)r->n * r->copies / (ms * 1e6);
}

static double sample_host(struct rate_run *r, int h2d)
{
    uint64_t t0 = host_ns();
    for (int i = 0; i < r->copies; i++)
        if (h2d)
            CK(cudaMemcpy(r->d, r->h, r->n, cudaMemcpyHostToDevice));
        else
            CK(cudaMemcpy(r->h, r->d, r->n, cudaMemcpyDeviceToHost));
    return (double)r->n * r->copies / (double)(host_ns() - t0);
}

static void print_rate(struct rate_run *r, int h2d, const char *timing, std::vector<double> &v)
{
    double med = median(v);
    printf("COLDALLOC rate size=%zu dir=%s timing=%s copies=%d median_gbps=%.3f min_gbps=%.3f "
           "max_gbps=%.3f late=%d\n",
           r->n, h2d ? "h2d" : "d2h", timing, r->copies, med, v.front(), v.back(), r->g.late);
    fflush(stdout);
}

static int mode_rates(int reps, const std::vector<size_t> &sizes)
{
    struct rate_run r;
    memset(&r, 0, sizeof r);
    pthread_mutex_init(&r.g.m, NULL);
    pthread_cond_init(&r.g.c, NULL);
    size_t max = *std::max_element(sizes.begin(), sizes.end());
    CK(cudaFree(0));
    CK(cudaStreamCreateWithFlags(&r.s, cudaStreamNonBlocking));
    CK(cudaEventCreate(&r.e0));
    CK(cudaEventCreate(&r.e1));
    CK(cudaMalloc(&r.d, max));
    for (size_t k = 0; k < sizes.size(); k++) {
        r.n = sizes[k];
        r.copies = (int)std::min<size_t>(MAX_COPIES, std::max<size_t>(1, SAMPLE_BYTES / r.n));
        r.g.late = 0;
        CK(cudaHostAlloc((void **)&r.h, r.n, 0));
        memset(r.h, 0x5a, r.n);
        copy(&r, 1, r.s); /* warm-up, each direction */
        copy(&r, 0, r.s);
        CK(cudaStreamSynchronize(r.s));
        std::vector<double> v[4]; /* dev h2d, dev d2h, host h2d, host d2h */
        for (int i = 0; i < reps; i++) {
            v[0].push_back(sample_dev(&r, 1));
            v[1].push_back(sample_dev(&r, 0));
            v[2].push_back(sample_host(&r, 1));
            v[3].push_back(sample_host(&r, 0));
        }
        print_rate(&r, 1, "dev", v[0]);
        print_rate(&r, 0, "dev", v[1]);
        print_rate(&r, 1, "host", v[2]);
        print_rate(&r, 0, "host", v[3]);
        CK(cudaFreeHost(r.h));
    }
    CK(cudaFree(r.d));
    CK(cudaEventDestroy(r.e0));
    CK(cudaEventDestroy(r.e1));
    CK(cudaStreamDestroy(r.s));
    return 0;
}

static int usage(void)
{
    fprintf(stderr, "usage: coldalloc probe | alloc SIZE REPS | rates [REPS [SIZE...]]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "probe")) {
        int n = 0;
        cudaError_t e = cudaGetDeviceCount(&n);
        printf("COLDALLOC probe devices=%d error=%d\n", e == cudaSuccess ? n : 0, (int)e);
        return e == cudaSuccess && n > 0 ? 0 : 3;
    }
    if (argc == 4 && !strcmp(argv[1], "alloc")) {
        size_t size = parse_size(argv[2]);
        int reps = atoi(argv[3]);
        if (!size || reps < 1)
            return usage();
        return mode_alloc(size, reps);
    }
    if (argc >= 2 && !strcmp(argv[1], "rates")) {
        int reps = argc >= 3 ? atoi(argv[2]) : 15;
        std::vector<size_t> sizes;
        for (int i = 3; i < argc; i++)
            sizes.push_back(parse_size(argv[i]));
        if (sizes.empty())
            for (size_t n = 64u << 10; n <= (1u << 30); n *= 4)
                sizes.push_back(n);
        if (reps < 1 || std::find(sizes.begin(), sizes.end(), (size_t)0) != sizes.end())
            return usage();
        return mode_rates(reps, sizes);
    }
    return usage();
}
