/* native - staging and devices that read pageable memory themselves
 * (SIM_PAGEABLE_ACCESS=none|hmm|ats, SIM_DEVICES devices).
 *
 *   native [-e staged|runtime] [-q N]   (TAP)
 *
 * The sim's pageable-access attributes are as SIM_PAGEABLE_ACCESS says.  On
 * every device: a 1 MiB pageable cudaMemcpy H2D and D2H, then the same with
 * cudaMemcpyAsync on a created stream; the bytes must come back.  Then
 * cudaDeviceReset on device 0 and one more pair there.
 *   -e staged   none of those copies reached the sim as a pageable copy
 *   -e runtime  every one did (the runtime made it)
 *   -q N        with SIM_CALLS=1: cudaDeviceGetAttribute reached the sim N
 *               times besides the program's own (pincache's questions)
 * Last: no error is left pending, and one that is pending survives a
 * pageable copy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../doubles/sim.h"
#include "../tap.h"

#define N ((size_t)1 << 20)

static const char *expect = "any";

static unsigned long long pageable_now(void)
{
    struct sim_counters c;

    simCounters(&c);
    return c.pageable_copies;
}

static unsigned long long attr_calls(void)
{
    struct sim_call c[256];
    int n = simCalls(c, 256);

    for (int i = 0; i < n && i < 256; i++)
        if (strcmp(c[i].name, "cudaDeviceGetAttribute") == 0)
            return c[i].calls;
    return 0;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 29 + seed * 13 + (i >> 11));
}

/* One sync and one async round trip on the current device; the pageable
 * copies the sim saw checked against -e. */
static void round_trip(int dev, const char *what)
{
    unsigned char *a = malloc(N), *b = malloc(N);
    unsigned long long before;
    cudaStream_t s = NULL;
    void *d = NULL;
    int e;

    if (!a || !b || cudaMalloc(&d, N) != cudaSuccess || cudaStreamCreate(&s) != cudaSuccess) {
        ok(0, "%s device %d: buffers and a stream", what, dev);
        return;
    }
    before = pageable_now();
    fill(a, N, (unsigned)dev + 1);
    memset(b, 0, N);
    e = cudaMemcpy(d, a, N, cudaMemcpyHostToDevice) | cudaMemcpy(b, d, N, cudaMemcpyDeviceToHost);
    is_int(e, cudaSuccess, "%s device %d: cudaMemcpy H2D, D2H", what, dev);
    ok(memcmp(a, b, N) == 0, "%s device %d: the bytes came back", what, dev);
    fill(a, N, (unsigned)dev + 7);
    memset(b, 0, N);
    e = cudaMemcpyAsync(d, a, N, cudaMemcpyHostToDevice, s) | cudaMemcpyAsync(b, d, N, cudaMemcpyDeviceToHost, s) |
        cudaStreamSynchronize(s);
    is_int(e, cudaSuccess, "%s device %d: cudaMemcpyAsync H2D, D2H", what, dev);
    ok(memcmp(a, b, N) == 0, "%s device %d: the async bytes came back", what, dev);
    if (strcmp(expect, "staged") == 0)
        is_int(pageable_now() - before, 0, "%s device %d: staged (no pageable copy reached the sim)", what, dev);
    else if (strcmp(expect, "runtime") == 0)
        is_int(pageable_now() - before, 4, "%s device %d: the runtime's (4 pageable copies)", what, dev);
    cudaStreamDestroy(s);
    cudaFree(d);
    free(a);
    free(b);
}

int main(int argc, char **argv)
{
    const char *mode = getenv("SIM_PAGEABLE_ACCESS");
    int c, ndev = 0, want_access, want_tables, own = 0;
    long quest = -1;
    char *tmp;

    while ((c = getopt(argc, argv, "e:q:")) != -1) {
        if (c == 'e') {
            expect = optarg;
        } else if (c == 'q') {
            quest = strtol(optarg, NULL, 10);
        } else {
            fprintf(stderr, "usage: native [-e staged|runtime] [-q N]\n");
            return 2;
        }
    }
    mode = mode && *mode ? mode : "none";
    want_access = strcmp(mode, "hmm") == 0 || strcmp(mode, "ats") == 0;   /* anything else: none */
    want_tables = strcmp(mode, "ats") == 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 1)
        return ok(0, "devices"), done_testing();
    for (int dev = 0; dev < ndev; dev++) {
        int access = -1, tables = -1;
        is_int(cudaDeviceGetAttribute(&access, cudaDevAttrPageableMemoryAccess, dev) |
               cudaDeviceGetAttribute(&tables, cudaDevAttrPageableMemoryAccessUsesHostPageTables, dev),
               cudaSuccess, "device %d: the pageable-access attributes", dev);
        own += 2;
        ok(access == want_access && tables == want_tables, "device %d (%s): PageableMemoryAccess %d, "
           "UsesHostPageTables %d", dev, mode, access, tables);
    }
    for (int dev = 0; dev < ndev; dev++) {
        cudaSetDevice(dev);
        round_trip(dev, "first");
    }
    cudaSetDevice(0);
    is_int(cudaDeviceReset(), cudaSuccess, "cudaDeviceReset on device 0");
    round_trip(0, "after the reset");
    if (quest >= 0 && getenv("SIM_CALLS"))
        is_int((long long)attr_calls() - own, quest, "cudaDeviceGetAttribute asked %ld times by pincache", quest);
    is_int(cudaGetLastError(), cudaSuccess, "no error left pending");
    /* A pending error survives a pageable copy (kind 7: 21, measured). */
    tmp = malloc(N);
    if (tmp) {
        void *d = NULL;
        cudaMalloc(&d, N);
        memset(tmp, 1, N);
        cudaMemcpy(d, tmp, 16, (enum cudaMemcpyKind)7);
        is_int(cudaMemcpy(d, tmp, N, cudaMemcpyHostToDevice), cudaSuccess, "a pageable copy with an error pending");
        is_int(cudaGetLastError(), cudaErrorInvalidMemcpyDirection, "... the pending error is still the program's");
        cudaFree(d);
        free(tmp);
    }
    return done_testing();
}
