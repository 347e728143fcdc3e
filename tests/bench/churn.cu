/* churn.cu - a per-batch pinned-memory program, and its alternatives.
 *
 *   --variant churn     each batch: cudaHostAlloc, memset, async H2D, kernel,
 *                       cudaFreeHost (the unmodified program pincache targets)
 *   --variant twobuf    two pinned buffers allocated once, reused alternately,
 *                       an event per buffer says when it may be refilled
 *                       (the hand-optimized best case)
 *   --variant pageable  each batch: malloc, memset, async H2D, kernel, free
 *
 * --size MB, --batches N per repetition (default: calibrated after the
 * warm-up to about --target-ms each), --reps R (median reported),
 * --warmup N (default: >= 100 ms and 4 batches),
 * --kernel-us U (the kernel also spins U us), --flags F (cudaHostAlloc flags
 * of the churn and twobuf buffers, default 0).
 * fill_ms and api_ms: per measured batch, the time in memset and in the
 * allocation calls (alloc/free, the twobuf event wait, malloc/free).
 * Prints "RESULT churn variant=... ms_per_batch=... frees=...". */
#include "../gpu/gpu_common.cuh"

#include <algorithm>
#include <getopt.h>
#include <vector>

enum { V_CHURN, V_TWOBUF, V_PAGEABLE };
static const char *vname[] = {"churn", "twobuf", "pageable"};

struct bench {
    int variant;
    size_t n;
    cudaStream_t s;
    unsigned char *d;
    unsigned long long *acc;
    unsigned char *buf[2];
    cudaEvent_t ev[2];
    uint64_t spin_ns;
    unsigned flags;
    long frees;
    uint64_t fill_ns, api_ns;   /* time in memset / in the pinned-memory calls */
};

/* Reads every 16th word of the copy. */
__global__ void k_consume(const uint32_t *d, size_t nw, unsigned long long *acc, uint64_t spin_ns)
{
    if (spin_ns && blockIdx.x == 0 && threadIdx.x == 0)
        dev_spin_ns(spin_ns);
    size_t stride = (size_t)gridDim.x * blockDim.x * 16;
    unsigned long long sum = 0;
    for (size_t i = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) * 16; i < nw; i += stride)
        sum += d[i];
    if (sum)
        atomicAdd(acc, sum);
}

static void batch(struct bench *b, long i)
{
    unsigned char *h = NULL;
    uint64_t t0 = host_ns(), t1;
    switch (b->variant) {
    case V_CHURN:
        CK(cudaHostAlloc((void **)&h, b->n, b->flags));
        break;
    case V_TWOBUF:
        h = b->buf[i & 1];
        CK(cudaEventSynchronize(b->ev[i & 1])); /* its previous copy is done */
        break;
    case V_PAGEABLE:
        h = (unsigned char *)malloc(b->n);
        if (!h) {
            printf("FATAL malloc failed\n");
            exit(2);
        }
        break;
    }
    t1 = host_ns();
    b->api_ns += t1 - t0;
    memset(h, (int)(i & 0xff) | 1, b->n);
    t0 = host_ns();
    b->fill_ns += t0 - t1;
    CK(cudaMemcpyAsync(b->d, h, b->n, cudaMemcpyHostToDevice, b->s));
    if (b->variant == V_TWOBUF)
        CK(cudaEventRecord(b->ev[i & 1], b->s));
    k_consume<<<264, 256, 0, b->s>>>((const uint32_t *)b->d, b->n / 4, b->acc, b->spin_ns);
    CK(cudaGetLastError());
    if (b->variant == V_CHURN) {
        t1 = host_ns();
        CK(cudaFreeHost(h)); /* the kernel and usually the copy are still in flight */
        b->api_ns += host_ns() - t1;
        b->frees++;
    } else if (b->variant == V_PAGEABLE) {
        free(h); /* the copy has staged it already */
    }
}

static void usage(void)
{
    fprintf(stderr, "usage: churn --variant churn|twobuf|pageable [--size MB] [--batches N] "
                    "[--reps R] [--warmup N] [--target-ms MS] [--kernel-us U] [--flags F]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"variant", required_argument, 0, 'v'}, {"size", required_argument, 0, 's'},
        {"batches", required_argument, 0, 'b'}, {"reps", required_argument, 0, 'r'},
        {"warmup", required_argument, 0, 'w'},  {"target-ms", required_argument, 0, 't'},
        {"kernel-us", required_argument, 0, 'k'}, {"flags", required_argument, 0, 'f'},
        {0, 0, 0, 0},
    };
    struct bench b;
    memset(&b, 0, sizeof b);
    double size_mb = 8, target_ms = 300;
    long batches = 0, warmup = -1;
    int reps = 3, c;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'v':
            b.variant = -1;
            for (int v = 0; v < 3; v++)
                if (!strcmp(optarg, vname[v]))
                    b.variant = v;
            if (b.variant < 0)
                usage();
            break;
        case 's': size_mb = atof(optarg); break;
        case 'b': batches = atol(optarg); break;
        case 'r': reps = atoi(optarg); break;
        case 'w': warmup = atol(optarg); break;
        case 't': target_ms = atof(optarg); break;
        case 'k': b.spin_ns = strtoull(optarg, NULL, 10) * 1000; break;
        case 'f': b.flags = (unsigned)strtoul(optarg, NULL, 0); break;
        default: usage();
        }
    }
    b.n = (size_t)(size_mb * 1048576.0);
    if (b.n < 64 || reps < 1 || reps > 100)
        usage();

    CK(cudaFree(0));
    CK(cudaStreamCreateWithFlags(&b.s, cudaStreamNonBlocking));
    CK(cudaMalloc(&b.d, b.n));
    CK(cudaMalloc(&b.acc, sizeof *b.acc));
    if (b.variant == V_TWOBUF) {
        for (int k = 0; k < 2; k++) {
            CK(cudaHostAlloc((void **)&b.buf[k], b.n, b.flags));
            CK(cudaEventCreateWithFlags(&b.ev[k], cudaEventDisableTiming));
        }
    }

    /* warm-up: fills pincache's cache, faults pages in */
    long i = 0;
    uint64_t t0 = host_ns();
    for (;;) {
        if (warmup >= 0 ? i >= warmup : (i >= 4 && ms_since(t0) >= 100) || i >= 1000000)
            break;
        batch(&b, i++);
    }
    CK(cudaStreamSynchronize(b.s));
    long warm = i;
    if (batches <= 0) {
        /* calibrate on a warm cache: batches in >= 100 ms */
        uint64_t tc = host_ns();
        long k = 0;
        for (; k < 3 || ms_since(tc) < 100; k++)
            batch(&b, i++);
        CK(cudaStreamSynchronize(b.s));
        double est = ms_since(tc) / (double)k;
        batches = (long)(target_ms / (est > 1e-4 ? est : 1e-4));
        batches = std::max(3L, std::min(batches, 1000000L));
    }

    std::vector<double> per;
    b.fill_ns = b.api_ns = 0;
    for (int r = 0; r < reps; r++) {
        uint64_t t = host_ns();
        for (long k = 0; k < batches; k++)
            batch(&b, i++);
        CK(cudaStreamSynchronize(b.s));
        per.push_back(ms_since(t) / (double)batches);
    }
    std::vector<double> sorted = per;
    std::sort(sorted.begin(), sorted.end());
    printf("RESULT churn variant=%s size_mb=%g batches=%ld reps=%d ms_per_batch=%.4f "
           "min=%.4f max=%.4f warmup=%ld frees=%ld fill_ms=%.4f api_ms=%.4f flags=%u\n",
           vname[b.variant], size_mb, batches, reps, sorted[sorted.size() / 2], sorted.front(),
           sorted.back(), warm, b.frees, b.fill_ns / 1e6 / ((double)batches * reps),
           b.api_ns / 1e6 / ((double)batches * reps), b.flags);

    if (b.variant == V_TWOBUF) {
        for (int k = 0; k < 2; k++) {
            CK(cudaEventDestroy(b.ev[k]));
            CK(cudaFreeHost(b.buf[k]));
        }
    }
    CK(cudaFree(b.acc));
    CK(cudaFree(b.d));
    CK(cudaStreamDestroy(b.s));
    return 0;
}
