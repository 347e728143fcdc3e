/* fresh - pageable H2D copies from a source just mapped and filled, and
 * from one the thread copied before (PINCACHE_STAGE_FRESH_MIN,
 * src/stage/stage.c).
 *
 *   fresh [-e plain|fresh|all] [-n BYTES]   (TAP)
 *
 * One warm-up copy, then ROUNDS copies of BYTES (default 1 MiB) from a
 * malloc'd buffer refilled each time ("warm"), then ROUNDS copies each from
 * a buffer mmap'd, filled, copied and unmapped ("fresh"), each followed by
 * a check of the device's bytes through a pinned buffer.  Which copies
 * reached the simulated runtime as pageable copies (the runtime made them)
 * is what -e expects:
 *   -e plain  every one (no shim)
 *   -e fresh  the fresh ones, not the warm ones (the default rule)
 *   -e all    none: every one staged (PINCACHE_STAGE_FRESH_MIN=0) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "../doubles/sim.h"
#include "../tap.h"

#define ROUNDS 3

static unsigned long long pageable_now(void)
{
    struct sim_counters c;

    simCounters(&c);
    return c.pageable_copies;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (unsigned char)(i * 131u + seed * 7u + (i >> 12));
}

/* Copy n bytes of src to dev; 1 when the runtime made it as a pageable
 * copy, 0 when not, -1 on an error or wrong bytes (checked through pin). */
static int copy_checked(void *dev, const unsigned char *src, unsigned char *pin, size_t n)
{
    unsigned long long before = pageable_now();
    int passed;

    if (cudaMemcpy(dev, src, n, cudaMemcpyHostToDevice) != cudaSuccess)
        return -1;
    passed = pageable_now() != before;
    memset(pin, 0, n);
    if (cudaMemcpy(pin, dev, n, cudaMemcpyDeviceToHost) != cudaSuccess || memcmp(pin, src, n) != 0)
        return -1;
    return passed;
}

int main(int argc, char **argv)
{
    const char *expect = "plain";
    size_t n = (size_t)1 << 20;
    unsigned char *warm, *pin = NULL;
    void *dev = NULL;
    int opt, bad = 0, warm_passed = 0, fresh_passed = 0, want_warm, want_fresh;

    while ((opt = getopt(argc, argv, "e:n:")) != -1) {
        if (opt == 'e')
            expect = optarg;
        else if (opt == 'n')
            n = strtoul(optarg, NULL, 0);
        else
            return 2;
    }
    want_warm = strcmp(expect, "plain") == 0 ? ROUNDS : 0;
    want_fresh = strcmp(expect, "all") == 0 ? 0 : ROUNDS;
    warm = malloc(n);
    if (!warm || cudaMalloc(&dev, n) != cudaSuccess || cudaMallocHost((void **)&pin, n) != cudaSuccess) {
        printf("Bail out! set-up failed\n");
        return 1;
    }
    fill(warm, n, 0);
    memset(pin, 1, n);
    if (copy_checked(dev, warm, pin, n) < 0)  /* the warm-up: either way */
        bad++;
    for (unsigned r = 1; r <= ROUNDS; r++) {
        int k;

        fill(warm, n, r);
        k = copy_checked(dev, warm, pin, n);
        bad += k < 0;
        warm_passed += k > 0;
    }
    for (unsigned r = 1; r <= ROUNDS; r++) {
        unsigned char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        int k;

        if (p == MAP_FAILED) {
            bad++;
            continue;
        }
        fill(p, n, 100 + r);
        k = copy_checked(dev, p, pin, n);
        bad += k < 0;
        fresh_passed += k > 0;
        munmap(p, n);
    }
    ok(bad == 0, "every copy succeeded and the device had its bytes");
    ok(warm_passed == want_warm, "copies from the warm buffer made by the runtime: %d, expected %d",
           warm_passed, want_warm);
    ok(fresh_passed == want_fresh, "copies from freshly mapped buffers made by the runtime: %d, expected %d",
           fresh_passed, want_fresh);
    cudaFreeHost(pin);
    cudaFree(dev);
    free(warm);
    return done_testing();
}
