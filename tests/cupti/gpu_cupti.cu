/* gpu_cupti.cu - the program tests/cupti/run-gpu.sh runs under pincache:
 * per batch cudaHostAlloc, fill, async H2D, a kernel spinning --kernel-us,
 * then cudaFreeHost while the kernel runs (the churn pincache targets).
 *
 *   gpu_cupti --batches N --kernel-us U --size-kb K [--reps R]
 *
 * Before each free an event recorded after the kernel is queried: the free is
 * "in flight" when it is not complete yet.  Prints
 *   RESULT batches=N inflight=M ms_per_batch=X (median over R repetitions)
 * Exit 2 on any CUDA error. */
#include "../gpu/gpu_common.cuh"

#include <algorithm>
#include <getopt.h>
#include <vector>

int main(int argc, char **argv)
{
    static const struct option lo[] = {
        {"batches", required_argument, 0, 'b'}, {"kernel-us", required_argument, 0, 'k'},
        {"size-kb", required_argument, 0, 's'}, {"reps", required_argument, 0, 'r'},
        {0, 0, 0, 0},
    };
    long batches = 200, kernel_us = 20000, size_kb = 64;
    int reps = 1, c;

    while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
        switch (c) {
        case 'b': batches = atol(optarg); break;
        case 'k': kernel_us = atol(optarg); break;
        case 's': size_kb = atol(optarg); break;
        case 'r': reps = atoi(optarg); break;
        default:
            fprintf(stderr, "usage: gpu_cupti [--batches N] [--kernel-us U] [--size-kb K] [--reps R]\n");
            return 2;
        }
    }
    if (batches < 1 || kernel_us < 0 || size_kb < 1 || reps < 1)
        return 2;
    size_t n = (size_t)size_kb << 10;
    cudaStream_t s;
    cudaEvent_t ev;
    unsigned char *d;
    long inflight = 0;

    CK(cudaFree(0));
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    CK(cudaMalloc((void **)&d, n));

    std::vector<double> per;
    for (int r = 0; r < reps; r++) {
        uint64_t t0 = host_ns();
        for (long i = 0; i < batches; i++) {
            unsigned char *h = NULL;
            CK(cudaHostAlloc((void **)&h, n, 0));
            memset(h, (int)(i & 0xff), n);
            CK(cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s));
            k_spin<<<1, 1, 0, s>>>((uint64_t)kernel_us * 1000, NULL);
            CK(cudaGetLastError());
            CK(cudaEventRecord(ev, s));
            cudaError_t q = cudaEventQuery(ev);
            if (q == cudaErrorNotReady)
                inflight++;
            else
                CK(q);
            CK(cudaFreeHost(h));
        }
        CK(cudaStreamSynchronize(s));
        per.push_back(ms_since(t0) / (double)batches);
    }
    std::sort(per.begin(), per.end());
    printf("RESULT batches=%ld inflight=%ld ms_per_batch=%.4f\n", batches * reps, inflight,
           per[per.size() / 2]);
    CK(cudaFree(d));
    CK(cudaEventDestroy(ev));
    CK(cudaStreamDestroy(s));
    return 0;
}
