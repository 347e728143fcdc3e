/* hitpath.cu - cost of a cudaHostAlloc + cudaFreeHost pair on the cache's
 * hit path: the same size over and over, with idle non-blocking streams
 * alive (each one is a stream the fences must cover).  Pairs are timed in
 * batches; the median batch gives ns per pair.
 * Prints "RESULT hitpath ... median_ns=...". */
#include "../gpu/gpu_common.cuh"

#include <algorithm>
#include <getopt.h>
#include <vector>

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"pairs", required_argument, 0, 'n'}, {"batch", required_argument, 0, 'b'},
        {"size", required_argument, 0, 's'},  {"streams", required_argument, 0, 'S'},
        {"warmup", required_argument, 0, 'w'}, {0, 0, 0, 0},
    };
    long pairs = 100000, warmup = 1000;
    int batch = 100, nstreams = 4, c;
    size_t size = 65536;
    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'n': pairs = atol(optarg); break;
        case 'b': batch = atoi(optarg); break;
        case 's': size = strtoull(optarg, NULL, 10); break;
        case 'S': nstreams = atoi(optarg); break;
        case 'w': warmup = atol(optarg); break;
        default:
            fprintf(stderr, "usage: hitpath [--pairs N] [--batch K] [--size BYTES] "
                            "[--streams S] [--warmup W]\n");
            return 2;
        }
    }
    if (batch < 1 || pairs < batch || nstreams < 0 || nstreams > 64 || size == 0)
        return 2;

    CK(cudaFree(0));
    std::vector<cudaStream_t> st(nstreams);
    for (auto &s : st)
        CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaDeviceSynchronize());

    void *p;
    for (long i = 0; i < warmup; i++) {
        CK(cudaHostAlloc(&p, size, 0));
        CK(cudaFreeHost(p));
    }
    long nb = pairs / batch;
    std::vector<double> per(nb);
    uint64_t t_all = host_ns();
    for (long j = 0; j < nb; j++) {
        uint64_t t0 = host_ns();
        for (int k = 0; k < batch; k++) {
            CK(cudaHostAlloc(&p, size, 0));
            CK(cudaFreeHost(p));
        }
        per[j] = (double)(host_ns() - t0) / batch;
    }
    double total_ms = ms_since(t_all);
    std::sort(per.begin(), per.end());
    printf("RESULT hitpath pairs=%ld batch=%d size=%zu streams=%d median_ns=%.0f p10_ns=%.0f "
           "p90_ns=%.0f min_ns=%.0f mean_ns=%.0f\n",
           nb * batch, batch, size, nstreams, per[nb / 2], per[nb / 10], per[nb * 9 / 10],
           per[0], total_ms * 1e6 / (double)(nb * batch));
    for (auto &s : st)
        CK(cudaStreamDestroy(s));
    return 0;
}
