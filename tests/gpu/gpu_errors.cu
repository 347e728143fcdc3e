/* gpu_errors.cu - error parity on bad input.
 *
 * One stdout line per case: the return code, then cudaGetLastError() twice
 * (so a sticky or lingering error shows), then facts about the result that
 * do not depend on addresses.  The suite runs it plain and under the shim
 * and diffs stdout: an empty diff is a pass.  "fact" lines compare the plain
 * runtime with DESIGN.md; "flagtable" lines give cudaHostGetFlags' answers.
 * Addresses and other run-dependent details go to stderr only. */
#include "gpu_common.cuh"

#include <cuda.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIG ((size_t)1 << 50)
#define SENT ((void *)0x5e5e5e5e000ull) /* "not written" marker */

static int facts_bad;

/* Must be called right after the call under test: no CUDA call in between. */
static void rep(const char *name, int rc)
{
    cudaError_t l1 = cudaGetLastError();
    cudaError_t l2 = cudaGetLastError();
    printf("%-36s rc=%d last=%d last2=%d", name, rc, (int)l1, (int)l2);
}

static const char *pstate(void *p)
{
    return p == SENT ? "unchanged" : p == NULL ? "null" : "set";
}

/* A second free of p after another allocation q: if the runtime handed the
 * same address out again the free is legal; otherwise p is stale and must be
 * rejected like any freed pointer (1, then last error 1, then 0).  Only the
 * verdict goes to stdout, since plain and shimmed runs may differ on reuse. */
static void second_free(const char *name, void *p, void *q)
{
    cudaError_t rc = cudaFreeHost(p);
    cudaError_t l1 = cudaGetLastError();
    cudaError_t l2 = cudaGetLastError();
    int reused = p == q;
    int ok = reused ? rc == cudaSuccess && l1 == cudaSuccess && l2 == cudaSuccess
                    : rc == cudaErrorInvalidValue && l1 == cudaErrorInvalidValue &&
                          l2 == cudaSuccess;
    printf("%-36s consistent=%d\n", name, ok);
    fprintf(stderr, "%s: rc=%d last=%d last2=%d reused=%d\n", name, (int)rc, (int)l1, (int)l2,
            reused);
    if (!reused)
        CK(cudaFreeHost(q));
}

static void fact(const char *name, int got, int want)
{
    printf("fact %-31s %s got=%d design=%d\n", name, got == want ? "holds" : "DIFFERS", got, want);
    facts_bad += got != want;
}

static void *alloc(size_t n, unsigned fl)
{
    void *p = NULL;
    CK(cudaHostAlloc(&p, n, fl));
    return p;
}

static void attrs(const char *name, const void *q)
{
    struct cudaPointerAttributes a;
    memset(&a, 0, sizeof a);
    cudaError_t rc = cudaPointerGetAttributes(&a, q);
    rep(name, rc);
    printf(" type=%d device=%d host_eq=%d dev_eq=%d host_null=%d dev_null=%d\n", (int)a.type,
           a.device, a.hostPointer == q, a.devicePointer == q, a.hostPointer == NULL,
           a.devicePointer == NULL);
}

static void getflags(const char *name, void *q)
{
    unsigned f = 0xdead;
    cudaError_t rc = cudaHostGetFlags(&f, q);
    rep(name, rc);
    printf(" flags=%u\n", f);
}

static void devptr(const char *name, void *q, unsigned fl)
{
    void *dp = SENT;
    cudaError_t rc = cudaHostGetDevicePointer(&dp, q, fl);
    rep(name, rc);
    printf(" same=%d dptr=%s\n", dp == q, pstate(dp));
}

static void section_alloc(void)
{
    void *p;
    cudaError_t rc;
    struct { const char *name; size_t n; unsigned fl; } bad[] = {
        {"alloc.flags_0xFF", 4096, 0xFF},
        {"alloc.flags_0x8", 4096, 0x8},
        {"alloc.flags_0x10", 4096, 0x10},
        {"alloc.flags_0x80000000", 4096, 0x80000000u},
        {"alloc.flags_0xFF_size0", 0, 0xFF},
        {"alloc.size0", 0, 0},
        {"alloc.size0_mapped", 0, cudaHostAllocMapped},
        {"alloc.size0_wc", 0, cudaHostAllocWriteCombined},
        {"alloc.huge", BIG, 0},
        {"alloc.huge_mapped", BIG, cudaHostAllocMapped},
        {"alloc.huge_flags_0xFF", BIG, 0xFF},
        {"alloc.size_max", (size_t)-1, 0},
        {"alloc.size_max_minus_page", (size_t)-1 - 4095, 0},
        {"alloc.size_2pow63_plus_1", ((size_t)1 << 63) + 1, 0},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        p = SENT;
        rc = cudaHostAlloc(&p, bad[i].n, bad[i].fl);
        rep(bad[i].name, rc);
        printf(" p=%s\n", pstate(p));
        if (i == 0)
            fact("alloc.flags_0xFF", rc, 1);
        if (!strcmp(bad[i].name, "alloc.size0")) {
            fact("alloc.size0", rc, 0);
            fact("alloc.size0_null", p == NULL, 1);
        }
        if (!strcmp(bad[i].name, "alloc.huge"))
            fact("alloc.huge", rc, 2);
        if (rc == cudaSuccess && p != NULL && p != SENT)
            CK(cudaFreeHost(p));
    }

    rc = cudaHostAlloc(NULL, 4096, 0);
    rep("alloc.null_out", rc);
    printf("\n");
    fact("alloc.null_out", rc, 1);
    rc = cudaHostAlloc(NULL, 0, 0);
    rep("alloc.null_out_size0", rc);
    printf("\n");
    rc = cudaHostAlloc(NULL, 4096, 0xFF);
    rep("alloc.null_out_flags_0xFF", rc);
    printf("\n");
    rc = cudaHostAlloc(NULL, BIG, 0);
    rep("alloc.null_out_huge", rc);
    printf("\n");

    p = SENT;
    rc = cudaMallocHost(&p, 0);
    rep("mallochost.size0", rc);
    printf(" p=%s\n", pstate(p));
    fact("mallochost.size0", rc, 0);
    fact("mallochost.size0_null", p == NULL, 1);
    if (rc == cudaSuccess && p != NULL && p != SENT)
        CK(cudaFreeHost(p));
    rc = cudaMallocHost(NULL, 4096);
    rep("mallochost.null_out", rc);
    printf("\n");
    rc = cudaMallocHost(NULL, 0);
    rep("mallochost.null_out_size0", rc);
    printf("\n");
    p = SENT;
    rc = cudaMallocHost(&p, BIG);
    rep("mallochost.huge", rc);
    printf(" p=%s\n", pstate(p));

    /* nothing sticky after the failures: a normal allocation still works */
    p = SENT;
    rc = cudaHostAlloc(&p, 4096, 0);
    rep("alloc.after_errors", rc);
    printf(" p=%s\n", pstate(p));
    if (rc == cudaSuccess)
        CK(cudaFreeHost(p));
}

static void section_free(void)
{
    cudaError_t rc;
    int stackvar = 0;

    rc = cudaFreeHost(NULL);
    rep("free.null", rc);
    printf("\n");
    fact("free.null", rc, 0);

    void *m = malloc(4096);
    rc = cudaFreeHost(m);
    rep("free.malloc", rc);
    printf("\n");
    fact("free.malloc", rc, 1);
    free(m);

    rc = cudaFreeHost(&stackvar);
    rep("free.stack", rc);
    printf("\n");

    char *p = (char *)alloc(65536, 0);
    rc = cudaFreeHost(p + 64);
    rep("free.interior_64", rc);
    printf("\n");
    fact("free.interior", rc, 1);
    rc = cudaFreeHost(p + 4096);
    rep("free.interior_page", rc);
    printf("\n");
    rc = cudaFreeHost(p + 65535);
    rep("free.interior_last_byte", rc);
    printf("\n");
    rc = cudaFreeHost(p);
    rep("free.valid", rc);
    printf("\n");
    rc = cudaFreeHost(p);
    rep("free.double", rc);
    printf("\n");
    fact("free.double", rc, 1);
    rc = cudaFreeHost(p + 64);
    rep("free.interior_of_freed", rc);
    printf("\n");

    /* free p, allocate another size (then the same size), free p again */
    p = (char *)alloc(1 << 20, 0);
    CK(cudaFreeHost(p));
    second_free("free.double_after_cycle", p, alloc(65536, 0));
    p = (char *)alloc(1 << 20, 0);
    CK(cudaFreeHost(p));
    second_free("free.double_after_cycle_same_size", p, alloc(1 << 20, 0));

    void *dm = NULL;
    CK(cudaMalloc(&dm, 65536));
    rc = cudaFreeHost(dm);
    rep("free.device_ptr", rc);
    printf("\n");
    rc = cudaFree(dm);
    rep("free.device_ptr_cudaFree", rc);
    printf("\n");

    void *mm = NULL;
    CK(cudaMallocManaged(&mm, 65536, cudaMemAttachGlobal));
    rc = cudaFreeHost(mm);
    rep("free.managed", rc);
    printf("\n");
    rc = cudaFree(mm);
    rep("free.managed_cudaFree", rc);
    printf("\n");

    void *r = NULL;
    if (posix_memalign(&r, 4096, 65536))
        exit(2);
    CK(cudaHostRegister(r, 65536, 0));
    rc = cudaFreeHost(r);
    rep("free.registered", rc);
    printf("\n");
    rc = cudaHostUnregister(r);
    rep("free.registered_unregister", rc);
    printf("\n");
    free(r);
}

static void section_register(void)
{
    cudaError_t rc;
    char *p = (char *)alloc(1 << 20, 0);
    rc = cudaHostRegister(p + 4096, 8192, 0);
    rep("register.inside_block", rc);
    printf("\n");
    fact("register.inside_block", rc, 1);
    if (rc == cudaSuccess)
        CK(cudaHostUnregister(p + 4096));
    rc = cudaHostRegister(p, 1 << 20, 0);
    rep("register.whole_block", rc);
    printf("\n");
    if (rc == cudaSuccess)
        CK(cudaHostUnregister(p));
    rc = cudaHostUnregister(p);
    rep("unregister.pinned_block", rc);
    printf("\n");
    rc = cudaHostUnregister(p + 4096);
    rep("unregister.pinned_interior", rc);
    printf("\n");
    CK(cudaFreeHost(p));
}

static void section_queries(void)
{
    cudaError_t rc;
    int stackvar = 0;
    void *m = malloc(65536);

    unsigned dummy = 0;
    getflags("getflags.malloc", m);
    fact("getflags.malloc", cudaHostGetFlags(&dummy, m), 1);
    (void)cudaGetLastError();
    getflags("getflags.stack", &stackvar);
    getflags("getflags.null", NULL);
    {
        char *p = (char *)alloc(65536, 0);
        rc = cudaHostGetFlags(NULL, p);
        rep("getflags.null_out", rc);
        printf("\n");
        CK(cudaFreeHost(p));
    }

    /* every flag combination, base and interior; alloc/free in sequence so a
     * cached block may come back under different flags */
    unsigned table[8];
    const size_t n = 100000;
    for (unsigned f = 0; f < 8; f++) {
        char name[64];
        char *p = (char *)alloc(n, f);
        unsigned got = 0xdead, got_mid = 0xdead, got_end = 0xdead;
        cudaError_t r0 = cudaHostGetFlags(&got, p);
        cudaError_t r1 = cudaHostGetFlags(&got_mid, p + 4097);
        cudaError_t r2 = cudaHostGetFlags(&got_end, p + n - 1);
        rep((snprintf(name, sizeof name, "getflags.f%u", f), name), r0);
        printf(" base=%u mid_rc=%d mid=%u end_rc=%d end=%u\n", got, (int)r1, got_mid, (int)r2, got_end);
        table[f] = got;
        devptr((snprintf(name, sizeof name, "devptr.f%u_base", f), name), p, 0);
        devptr((snprintf(name, sizeof name, "devptr.f%u_interior", f), name), p + 4097, 0);
        attrs((snprintf(name, sizeof name, "attr.f%u_base", f), name), p);
        attrs((snprintf(name, sizeof name, "attr.f%u_interior", f), name), p + 4097);
        CK(cudaFreeHost(p));
        getflags((snprintf(name, sizeof name, "getflags.f%u_freed", f), name), p);
        devptr((snprintf(name, sizeof name, "devptr.f%u_freed", f), name), p, 0);
        attrs((snprintf(name, sizeof name, "attr.f%u_freed", f), name), p);
    }
    for (unsigned f = 0; f < 8; f++) {
        printf("flagtable f=%u reported=%u\n", f, table[f]);
        char name[32];
        snprintf(name, sizeof name, "flagtable.f%u", f);
        fact(name, (int)table[f], (int)(f | cudaHostAllocMapped));
    }

    /* cudaMallocHost blocks */
    {
        char *p = NULL;
        CK(cudaMallocHost((void **)&p, 65536));
        getflags("getflags.mallochost", p);
        attrs("attr.mallochost", p);
        CK(cudaFreeHost(p));
    }

    {
        char *p = (char *)alloc(65536, cudaHostAllocMapped);
        void *dp = SENT;
        rc = cudaHostGetDevicePointer(&dp, p + 100, 0);
        fact("devptr.interior_rc", rc, 0);
        fact("devptr.interior_same", dp == p + 100, 1);
        (void)cudaGetLastError();
        devptr("devptr.flags_1", p, 1);
        rc = cudaHostGetDevicePointer(NULL, p, 0);
        rep("devptr.null_out", rc);
        printf("\n");
        devptr("devptr.malloc", m, 0);
        devptr("devptr.stack", &stackvar, 0);
        attrs("attr.malloc", m);
        attrs("attr.stack", &stackvar);
        attrs("attr.null", NULL);
        rc = cudaPointerGetAttributes(NULL, p);
        rep("attr.null_out", rc);
        printf("\n");
        CK(cudaFreeHost(p));
    }
    {
        void *dm = NULL;
        CK(cudaMalloc(&dm, 65536));
        attrs("attr.device", dm);
        getflags("getflags.device", dm);
        CK(cudaFree(dm));
    }
    free(m);
}

/* The driver API entry points the shim also serves. */
static void section_driver(void)
{
    CUresult r;
    void *p;
    unsigned fl;

    p = SENT;
    r = cuMemHostAlloc(&p, 0, 0);
    rep("drv.hostalloc_size0", r);
    printf(" p=%s\n", pstate(p));
    r = cuMemHostAlloc(NULL, 4096, 0);
    rep("drv.hostalloc_null_out", r);
    printf("\n");
    p = SENT;
    r = cuMemHostAlloc(&p, 4096, 0xFF);
    rep("drv.hostalloc_flags_0xFF", r);
    printf(" p=%s\n", pstate(p));
    if (r == CUDA_SUCCESS && p != SENT && p != NULL)
        cuMemFreeHost(p);
    p = SENT;
    r = cuMemHostAlloc(&p, BIG, 0);
    rep("drv.hostalloc_huge", r);
    printf(" p=%s\n", pstate(p));
    p = SENT;
    r = cuMemAllocHost(&p, 0);
    rep("drv.allochost_size0", r);
    printf(" p=%s\n", pstate(p));
    r = cuMemAllocHost(NULL, 4096);
    rep("drv.allochost_null_out", r);
    printf("\n");
    r = cuMemFreeHost(NULL);
    rep("drv.freehost_null", r);
    printf("\n");
    void *m = malloc(4096);
    r = cuMemFreeHost(m);
    rep("drv.freehost_malloc", r);
    printf("\n");
    free(m);

    p = SENT;
    r = cuMemHostAlloc(&p, 65536, CU_MEMHOSTALLOC_DEVICEMAP);
    rep("drv.hostalloc_valid", r);
    printf(" p=%s\n", pstate(p));
    if (r != CUDA_SUCCESS)
        return;
    fl = 0xdead;
    r = cuMemHostGetFlags(&fl, p);
    rep("drv.gethostflags", r);
    printf(" flags=%u\n", fl);
    fl = 0xdead;
    r = cuMemHostGetFlags(&fl, (char *)p + 100);
    rep("drv.gethostflags_interior", r);
    printf(" flags=%u\n", fl);
    r = cuMemFreeHost((char *)p + 64);
    rep("drv.freehost_interior", r);
    printf("\n");
    r = cuMemFreeHost(p);
    rep("drv.freehost_valid", r);
    printf("\n");
    r = cuMemFreeHost(p);
    rep("drv.freehost_double", r);
    printf("\n");
    fl = 0xdead;
    r = cuMemHostGetFlags(&fl, p);
    rep("drv.gethostflags_freed", r);
    printf(" flags=%u\n", fl);

    /* mixed: runtime alloc, driver free, and the other way round */
    p = alloc(65536, 0);
    r = cuMemFreeHost(p);
    rep("mixed.rt_alloc_drv_free", r);
    printf("\n");
    cudaError_t rc = cudaFreeHost(p);
    rep("mixed.rt_alloc_drv_free_then_rt_free", rc);
    printf("\n");
    p = SENT;
    r = cuMemAllocHost(&p, 65536);
    rep("mixed.drv_alloc", r);
    printf(" p=%s\n", pstate(p));
    if (r == CUDA_SUCCESS) {
        unsigned f2 = 0xdead;
        rc = cudaHostGetFlags(&f2, p);
        rep("mixed.drv_alloc_rt_getflags", rc);
        printf(" flags=%u\n", f2);
        rc = cudaFreeHost(p);
        rep("mixed.drv_alloc_rt_free", rc);
        printf("\n");
        r = cuMemFreeHost(p);
        rep("mixed.drv_alloc_rt_free_then_drv_free", r);
        printf("\n");
    }
}

/* Pageable copies with a host side that is not there (unmapped) or not
 * writable.  What the runtime does with them (an error code, or a crash) is
 * what the program must get under the shim too, whose staging threads touch
 * that memory themselves.  Each case runs in a fresh process (this program
 * re-executed before any CUDA call), so a crash is reported, not suffered. */
static const char *const bad_copy_cases[] = {"h2d_unmapped", "d2h_unmapped", "d2h_readonly"};

static int bad_copy_child(const char *c)
{
    const size_t n = 4u << 20;      /* above PINCACHE_STAGE_MIN: staged if anything is */
    void *d = NULL;
    char *h = (char *)mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cudaError_t rc;

    CK(cudaMalloc(&d, n));
    CK(cudaMemset(d, 1, n));
    CK(cudaDeviceSynchronize());
    if (h == MAP_FAILED)
        return 2;
    memset(h, 2, n);
    if (!strcmp(c, "d2h_readonly"))
        mprotect(h, n, PROT_READ);
    else
        munmap(h, n);
    if (!strcmp(c, "h2d_unmapped"))
        rc = cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);
    else
        rc = cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost);
    rep(c, rc);
    printf("\n");
    return 0;
}

static void section_bad_copies(const char *self)
{
    for (size_t i = 0; i < sizeof bad_copy_cases / sizeof *bad_copy_cases; i++) {
        int st = 0;
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            execl(self, self, "--bad-copy", bad_copy_cases[i], (char *)NULL);
            _exit(127);
        }
        if (pid < 0 || waitpid(pid, &st, 0) != pid) {
            printf("copy.%s could not run\n", bad_copy_cases[i]);
            continue;
        }
        printf("copy.%s exited=%d status=%d signal=%d\n", bad_copy_cases[i], WIFEXITED(st),
               WIFEXITED(st) ? WEXITSTATUS(st) : 0, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    }
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 3 && !strcmp(argv[1], "--bad-copy"))
        return bad_copy_child(argv[2]);
    /* Before this process makes any CUDA call: the children start fresh. */
    section_bad_copies("/proc/self/exe");
    CK(cudaFree(0));
    section_alloc();
    section_free();
    section_register();
    section_queries();
    section_driver();
    cudaError_t l = cudaGetLastError();
    printf("final last_error=%d\n", (int)l);
    CK(cudaDeviceSynchronize());
    printf("RESULT errors facts_differing=%d\n", facts_bad);
    return 0;
}
