/* varsize.cu - variable-size pinned workload: a bounded live set of requests
 * with log-uniform sizes, allocated and freed in random order, each block
 * copied from (in part) on one of two streams before it is freed.  Reports
 * the peak of the live requested bytes, to compare with what pincache held
 * (its JSON report).  Prints "RESULT varsize ... peak_live_requested_bytes=...". */
#include "../gpu/gpu_common.cuh"

#include <getopt.h>
#include <math.h>
#include <vector>

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_u64(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static double next_unit(void) { return (double)(next_u64() >> 11) / 9007199254740992.0; }

#define COPY_BYTES 65536

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"ops", required_argument, 0, 'n'},    {"max-live", required_argument, 0, 'l'},
        {"seed", required_argument, 0, 's'},   {"min-kb", required_argument, 0, 'a'},
        {"max-mb", required_argument, 0, 'b'}, {0, 0, 0, 0},
    };
    long ops = 20000;
    int max_live = 48, c;
    double min_b = 64.0 * 1024, max_b = 32.0 * 1048576;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'n': ops = atol(optarg); break;
        case 'l': max_live = atoi(optarg); break;
        case 's': rng ^= strtoull(optarg, NULL, 10) * 0xBF58476D1CE4E5B9ull; break;
        case 'a': min_b = atof(optarg) * 1024; break;
        case 'b': max_b = atof(optarg) * 1048576; break;
        default:
            fprintf(stderr, "usage: varsize [--ops N] [--max-live L] [--seed S] [--min-kb K] "
                            "[--max-mb M]\n");
            return 2;
        }
    }
    if (ops < 1 || max_live < 1 || min_b < COPY_BYTES || max_b < min_b || !rng)
        return 2;

    CK(cudaFree(0));
    cudaStream_t st[2];
    unsigned char *d[2];
    for (int k = 0; k < 2; k++) {
        CK(cudaStreamCreateWithFlags(&st[k], cudaStreamNonBlocking));
        CK(cudaMalloc(&d[k], COPY_BYTES));
    }

    std::vector<unsigned char *> ptr;
    std::vector<size_t> len;
    size_t live = 0, peak = 0, peak_count = 0;
    long allocs = 0, frees = 0;
    double lmin = log(min_b), lmax = log(max_b);
    uint64_t t0 = host_ns();
    for (long op = 0; op < ops; op++) {
        int n_live = (int)ptr.size();
        if (n_live == 0 || (n_live < max_live && next_unit() < 0.6)) {
            size_t n = (size_t)exp(lmin + next_unit() * (lmax - lmin));
            unsigned char *p = NULL;
            CK(cudaHostAlloc((void **)&p, n, 0));
            p[0] = (unsigned char)op;
            p[n - 1] = (unsigned char)op;
            int k = (int)(op & 1);
            CK(cudaMemcpyAsync(d[k], p, COPY_BYTES, cudaMemcpyHostToDevice, st[k]));
            ptr.push_back(p);
            len.push_back(n);
            live += n;
            allocs++;
            if (live > peak)
                peak = live;
            if (ptr.size() > peak_count)
                peak_count = ptr.size();
        } else {
            size_t j = (size_t)(next_u64() % (uint64_t)n_live);
            CK(cudaFreeHost(ptr[j]));
            live -= len[j];
            ptr[j] = ptr.back();
            len[j] = len.back();
            ptr.pop_back();
            len.pop_back();
            frees++;
        }
    }
    for (size_t j = 0; j < ptr.size(); j++) {
        CK(cudaFreeHost(ptr[j]));
        frees++;
    }
    CK(cudaDeviceSynchronize());
    printf("RESULT varsize ops=%ld allocs=%ld frees=%ld max_live=%d peak_live_blocks=%zu "
           "peak_live_requested_bytes=%zu seconds=%.2f\n",
           ops, allocs, frees, max_live, peak_count, peak, ms_since(t0) / 1000.0);
    for (int k = 0; k < 2; k++) {
        CK(cudaFree(d[k]));
        CK(cudaStreamDestroy(st[k]));
    }
    return 0;
}
