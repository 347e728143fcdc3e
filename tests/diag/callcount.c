/* callcount.c - the CUDA calls one round of a copy and a sync makes reach the
 * simulated runtime (SIM_CALLS=1, tests/doubles/sim_calls.c).  After a warm-up
 * round (start-up, lookups, the first use of a stream), one more round is
 * counted and each entry point printed: "calls NAME N", then "total N".
 * callcount.sh runs it plainly and under the shim: the difference is the
 * calls pincache makes itself.
 *
 *   callcount small      4 KiB cudaMemcpy H2D from malloc'd memory, then
 *                        cudaStreamSynchronize(0)
 *   callcount small-dev  the same with cudaDeviceSynchronize
 *   callcount large      1 MiB (staged), then cudaStreamSynchronize(0) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../doubles/sim.h"

#define MAXC 256

static int snap(struct sim_call *c)
{
    int n = simCalls(c, MAXC);
    return n < MAXC ? n : MAXC;
}

static unsigned long long before_of(const struct sim_call *b, int nb, const char *name)
{
    for (int i = 0; i < nb; i++)
        if (strcmp(b[i].name, name) == 0)
            return b[i].calls;
    return 0;
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "small";
    size_t n = strcmp(what, "large") == 0 ? (size_t)1 << 20 : 4096;
    int devsync = strcmp(what, "small-dev") == 0;
    static struct sim_call b[MAXC], a[MAXC];
    unsigned long long total = 0;
    char *host = malloc(n);
    void *dev = NULL;
    int nb, na, rc = 99;

    if (!host || cudaMalloc(&dev, n) != cudaSuccess) {
        fprintf(stderr, "callcount: setup failed\n");
        goto out;
    }
    memset(host, 7, n);
    for (int round = 0; round < 2; round++) {
        if (round == 1)
            nb = snap(b);
        if (cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice) != cudaSuccess ||
            (devsync ? cudaDeviceSynchronize() : cudaStreamSynchronize(0)) != cudaSuccess) {
            fprintf(stderr, "callcount: copy or sync failed\n");
            rc = 1;
            goto out;
        }
    }
    na = snap(a);
    if (na == 0) {
        fprintf(stderr, "callcount: no counts (SIM_CALLS=1 unset?)\n");
        goto out;
    }
    for (int i = 0; i < na; i++) {
        unsigned long long d = a[i].calls - before_of(b, nb, a[i].name);
        if (d) {
            printf("calls %s %llu\n", a[i].name, d);
            total += d;
        }
    }
    printf("total %llu\n", total);
    rc = 0;
out:
    free(host);
    return rc;
}
