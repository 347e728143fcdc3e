/* forkcost.cu - what fork() costs a process that holds pinned host memory:
 * the median time of fork + the child's _exit + waitpid, with N MiB held
 * through cudaHostAlloc or cudaHostRegister, before and after
 * madvise(MADV_DONTFORK) on it.  A PyTorch DataLoader forks its workers at
 * every epoch, so a process's pinned memory may be paid for there.
 * Prints "RESULT forkcost how=... mib=N dontfork=0|1 median_us=X".
 * Build: nvcc -O2 -cudart shared -arch=sm_90 forkcost.cu */
#include "../gpu/gpu_common.cuh"

#include <algorithm>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

static double fork_us(void)
{
    std::vector<double> v;
    for (int i = 0; i < 21; i++) {
        uint64_t t0 = host_ns();
        pid_t p = fork();
        if (p == 0)
            _exit(0);
        if (p < 0)
            return -1;
        waitpid(p, NULL, 0);
        v.push_back((double)(host_ns() - t0) / 1e3);
    }
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

int main(void)
{
    static const size_t mibs[] = {0, 32, 256, 1024};
    CK(cudaFree(0));
    printf("RESULT forkcost how=none mib=0 dontfork=0 median_us=%.1f\n", fork_us());
    for (size_t mib : mibs) {
        if (!mib)
            continue;
        size_t n = mib << 20;
        for (int how = 0; how < 2; how++) {
            void *p = NULL;
            if (how == 0) {
                CK(cudaHostAlloc(&p, n, 0));
            } else {
                if (posix_memalign(&p, 4096, n))
                    return 2;
                memset(p, 1, n);
                CK(cudaHostRegister(p, n, 0));
            }
            memset(p, 2, n);
            const char *name = how ? "register" : "hostalloc";
            printf("RESULT forkcost how=%s mib=%zu dontfork=0 median_us=%.1f\n", name, mib, fork_us());
            int rc = madvise(p, n, MADV_DONTFORK);
            printf("RESULT forkcost how=%s mib=%zu dontfork=1 median_us=%.1f madvise_rc=%d\n", name, mib,
                   fork_us(), rc);
            madvise(p, n, MADV_DOFORK);
            if (how == 0) {
                CK(cudaFreeHost(p));
            } else {
                CK(cudaHostUnregister(p));
                free(p);
            }
        }
    }
    return 0;
}
