/* xover.cu - issue 19's crossover: a pageable copy's time at each size, per
 * direction and per kind of host buffer, for xover.sh to put plain and
 * pincache side by side (run once plainly and once under pincache).
 *
 *   xover probe                   exit 3 when there is no CUDA device
 *   xover copies REPS SIZE...     the copies below, REPS samples each
 *
 * A copy is what PyTorch's blocking copy does: cudaMemcpyAsync on a
 * non-blocking stream, then cudaStreamSynchronize.  Host buffers:
 *   warm   one malloc'd buffer, every page written before timing, reused
 *   fresh  mmap'd for each sample and unmapped after it (what malloc gives a
 *          program for a large request each batch): H2D writes it first
 *          (untimed), so the copy reads pages just faulted in; D2H copies
 *          into pages never touched, so the copy faults them in.  The time
 *          counted is the copy and the munmap: a copy that touched the
 *          pages from other threads can make the unmap dearer (TLB
 *          shoot-downs), and a program pays that too.
 * One line per point on stdout:
 *   RESULT src=warm|fresh dir=H2D|D2H bytes=N us=MEDIAN p10=P10 p90=P90 reps=R
 * and a checksum of every byte copied back ("CHECK sum=..."), so that the
 * plain and pincache runs can be compared: it must be identical. */
#include "../gpu/gpu_common.cuh"

#include <algorithm>
#include <sys/mman.h>
#include <vector>

static cudaStream_t g_s;
static unsigned char *g_dev;
static unsigned long long g_sum;

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i += 4096)
        p[i] = (unsigned char)(seed + i / 4096);
    p[n - 1] = (unsigned char)seed;
}

static void fold(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n; i += 4096)
        g_sum = g_sum * 1099511628211ull + p[i];
    g_sum = g_sum * 1099511628211ull + p[n - 1];
}

static void copy(void *host, size_t n, int h2d)
{
    CK(cudaMemcpyAsync(h2d ? (void *)g_dev : host, h2d ? host : (void *)g_dev, n,
                       h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, g_s));
    CK(cudaStreamSynchronize(g_s));
}

/* One sample's time in ns. */
static uint64_t sample(unsigned char *warm, size_t n, int h2d, int fresh, unsigned seed)
{
    uint64_t t0, t1;

    if (!fresh) {
        if (h2d)
            fill(warm, n, seed);
        t0 = host_ns();
        copy(warm, n, h2d);
        t1 = host_ns();
        if (!h2d)
            fold(warm, n);
        return t1 - t0;
    }
    unsigned char *p = (unsigned char *)mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        exit(2);
    }
    if (h2d)
        fill(p, n, seed);
    t0 = host_ns();
    copy(p, n, h2d);
    t1 = host_ns();
    if (!h2d)
        fold(p, n);          /* untimed */
    uint64_t t2 = host_ns();
    munmap(p, n);
    return (t1 - t0) + (host_ns() - t2);
}

int main(int argc, char **argv)
{
    int ndev = 0;

    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
        return 3;
    if (argc > 1 && !strcmp(argv[1], "probe"))
        return 0;
    if (argc < 4 || strcmp(argv[1], "copies")) {
        fprintf(stderr, "usage: xover probe | xover copies REPS SIZE...\n");
        return 2;
    }
    int reps = atoi(argv[2]);
    if (reps < 3)
        reps = 3;
    std::vector<size_t> sizes;
    size_t maxn = 0;
    for (int i = 3; i < argc; i++) {
        char *e;
        double v = strtod(argv[i], &e);
        size_t n = (size_t)(v * (*e == 'K' ? 1024.0 : *e == 'M' ? 1048576.0 : *e == 'G' ? 1073741824.0 : 1.0));
        sizes.push_back(n);
        maxn = std::max(maxn, n);
    }
    CK(cudaSetDevice(0));
    CK(cudaMalloc((void **)&g_dev, maxn));
    CK(cudaMemset(g_dev, 7, maxn));
    /* The memset runs on the legacy stream, which the copies' non-blocking
     * stream does not wait for: done before the first copy, or a late
     * memset overwrites what it put there (the simulated device under
     * load, once: a plain run's checksum differed). */
    CK(cudaDeviceSynchronize());
    CK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
    unsigned char *warm = (unsigned char *)malloc(maxn);
    if (!warm)
        return 2;
    memset(warm, 1, maxn);
    unsigned seed = 1;
    for (size_t n : sizes) {
        for (int fresh = 0; fresh <= 1; fresh++) {
            for (int h2d = 1; h2d >= 0; h2d--) {
                /* fewer samples of the big sizes: the section must fit */
                int r = n >= (256u << 20) ? std::max(3, reps / 4) : n >= (64u << 20) ? std::max(3, reps / 2) : reps;
                std::vector<uint64_t> t;
                for (int w = 0; w < 2; w++)          /* warm-up: threads, ring */
                    sample(warm, n, h2d, fresh, seed++);
                for (int i = 0; i < r; i++)
                    t.push_back(sample(warm, n, h2d, fresh, seed++));
                std::sort(t.begin(), t.end());
                printf("RESULT src=%s dir=%s bytes=%zu us=%.2f p10=%.2f p90=%.2f reps=%d\n", fresh ? "fresh" : "warm",
                       h2d ? "H2D" : "D2H", n, t[t.size() / 2] / 1e3, t[t.size() / 10] / 1e3,
                       t[t.size() * 9 / 10] / 1e3, r);
                fflush(stdout);
            }
        }
    }
    printf("CHECK sum=%016llx\n", g_sum);
    CK(cudaStreamDestroy(g_s));
    CK(cudaFree(g_dev));
    free(warm);
    return 0;
}
