/* Unit tests of the pool and registry: size classes, reuse only after the
 * fence, keys, double frees, the cap, LRU trimming, out-of-memory retry and
 * concurrent use.  No CUDA: the pool's operations are faked here. */
#include "config.h"
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/pool.h"
#include "core/park.h"
#include "core/cache.h"
#include "util/stats.h"
#include "tap.h"

/* The pool is never torn down (the library does not free its cache at exit),
 * so LeakSanitizer would report every test's pool: not a leak. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_leaks=0"; }

/* --- fake runtime --- */
static struct {
    pthread_mutex_t lock;
    size_t live, limit;          /* real bytes held; limit 0 = none */
    unsigned allocs, releases;
    uint64_t done;               /* fences <= done are complete */
    int idle;
    int quiet;                   /* 0: a release now would wait for the device */
    size_t allow;                /* idle bytes a memory limit lets the cache keep */
    void *released[64];          /* order of releases */
    size_t ring;                 /* of live: pinned bytes held besides the pool (shed gives them back) */
    unsigned sheds;
    int gate;                    /* 1: a release waits until it is 0 again */
    pthread_cond_t opened;
} fake = { .lock = PTHREAD_MUTEX_INITIALIZER, .opened = PTHREAD_COND_INITIALIZER };

static int fake_alloc(void *ctx, size_t size, unsigned key, void **out)
{
    pthread_mutex_lock(&fake.lock);
    if (fake.limit && fake.live + size > fake.limit) {
        pthread_mutex_unlock(&fake.lock);
        return 2;
    }
    fake.live += size;
    fake.allocs++;
    pthread_mutex_unlock(&fake.lock);
    *out = aligned_alloc(4096, size);
    return 0;
}

static void fake_release(void *ctx, void *p, size_t size)
{
    pthread_mutex_lock(&fake.lock);
    while (fake.gate)
        pthread_cond_wait(&fake.opened, &fake.lock);
    if (fake.releases < 64)
        fake.released[fake.releases] = p;
    fake.releases++;
    fake.live -= size;
    pthread_mutex_unlock(&fake.lock);
    free(p);
}

static size_t fake_shed(void *ctx)
{
    size_t n;

    pthread_mutex_lock(&fake.lock);
    n = fake.ring;
    fake.live -= n;
    fake.ring = 0;
    fake.sheds++;
    pthread_mutex_unlock(&fake.lock);
    return n;
}

static int fake_known(void *ctx, uint64_t seq) { return seq <= __atomic_load_n(&fake.done, __ATOMIC_ACQUIRE); }
static int fake_poll(void *ctx, uint64_t seq) { return fake_known(ctx, seq); }
static int fake_idle(void *ctx) { return fake.idle; }
static int fake_quiet(void *ctx) { return fake.quiet; }
static size_t fake_allow(void *ctx, size_t cached) { return fake.allow; }
static uint64_t fake_waited;
static int fake_wait(void *ctx, uint64_t seq, uint64_t ns)
{
    fake_waited += ns;
    return fake_known(ctx, seq);
}

static const struct pc_pool_ops fake_ops = {
    .alloc = fake_alloc, .release = fake_release, .fence_known = fake_known,
    .fence_poll = fake_poll, .device_idle = fake_idle, .fence_wait = fake_wait,
    .device_quiet = fake_quiet, .mem_allow = fake_allow, .shed = fake_shed, .oom_error = 2,
};

static void fake_reset(struct pc_pool *p, size_t cap)
{
    fake.live = fake.limit = fake.ring = 0;
    fake.allocs = fake.releases = fake.sheds = 0;
    fake.gate = 0;
    fake.done = 0;
    fake.idle = 1;
    fake.quiet = 1;
    fake.allow = SIZE_MAX;
    pc_pool_init(p, &fake_ops, NULL, cap, 100000);   /* headroom out of the way */
}

static void *xalloc(struct pc_pool *p, size_t n, unsigned key, int *hit)
{
    void *ptr = NULL;
    int h = 0;
    if (pc_pool_alloc(p, n, key, &ptr, &h) != 0)
        return NULL;
    if (hit)
        *hit = h;
    return ptr;
}

static void test_size_classes(void)
{
    unsigned prev_idx = 0;
    size_t prev = 0;
    int bad = 0;
    for (size_t n = 1; n < ((size_t)1 << 40); n += n / 7 + 1) {
        unsigned idx;
        size_t c = pc_size_class(n, &idx);
        if (c < n || c % PC_CLASS_PAGE != 0 || idx >= PC_NCLASS)
            bad++;
        if (n > PC_CLASS_SMALL && (c - n) * 8 > n)       /* > 12.5% waste */
            bad++;
        if (c > prev && prev && idx <= prev_idx)           /* indices follow sizes */
            bad++;
        if (c == prev && idx != prev_idx)
            bad++;
        unsigned idx2;
        if (pc_size_class(c, &idx2) != c || idx2 != idx)  /* a class is its own class */
            bad++;
        prev = c;
        prev_idx = idx;
    }
    is_int(bad, 0, "every class fits, wastes <= 12.5%%, and has one index");
    unsigned idx;
    is_int((long)pc_size_class(1, &idx), 4096, "1 byte -> one page");
    is_int((long)pc_size_class(65 * 1024, &idx), 72 * 1024, "65K -> 72K");
    is_int((long)pc_size_class(((size_t)1 << 20) + 1, &idx), (1 << 20) + (1 << 17), "1M+1 -> 1.125M");
    is_int((long)pc_size_class(0, &idx), 0, "size 0 is not a class");
    is_int((long)pc_size_class((size_t)1 << 50, &idx), 0, "1<<50 is not cached");
}

static void test_reuse_waits_for_fence(void)
{
    struct pc_pool p;
    int hit;
    fake_reset(&p, (size_t)1 << 30);
    void *a = xalloc(&p, 100000, 0, &hit);
    ok(a && !hit, "first allocation is a miss");
    is_int(pc_pool_free(&p, a, 5), PC_BLOCK_LIVE, "free of a live block caches it");
    fake_waited = 0;
    void *b = xalloc(&p, 100000, 0, &hit);
    ok(b && b != a && !hit, "block fenced by pending work is not reused");
    ok(fake_waited == 0, "with one fenced idle block a second one is allocated at once (double buffer)");
    pc_pool_free(&p, b, 6);
    void *w = xalloc(&p, 100000, 0, &hit);
    ok(fake_waited == 0 && w != a && w != b && !hit,
       "with two fenced idle blocks and room in the headroom, a third block at once (no wait)");
    pc_pool_free(&p, w, 0);
    void *x = xalloc(&p, 100000, 0, &hit);
    ok(x == w && hit, "an unfenced idle block is handed out first");
    fake.done = 5;
    void *c = xalloc(&p, 99000, 0, &hit);
    ok(c == a && hit, "same class reused once its fence completed");
    fake.done = 6;
    void *d = xalloc(&p, 100000, 1, &hit);
    ok(d != b && !hit, "a different flags key is never mixed");
    void *e = xalloc(&p, 100000, 0, &hit);
    ok(e == b && hit, "the second block comes back once its fence completed");
    is_int((long)fake.allocs, 4, "four real allocations in all");
}

/* Blocks too large for the headroom to hold a third one: the oldest fenced
 * block is waited for instead, no longer than a real allocation costs. */
static void test_wait_without_room(void)
{
    struct pc_pool p;
    const size_t n = (size_t)20 << 20;      /* a class of its own; 3 > peak + 32 MiB */
    int hit;

    fake_reset(&p, (size_t)1 << 40);
    pc_pool_init(&p, &fake_ops, NULL, (size_t)1 << 40, 15);
    pc_stats_reset();
    void *a = xalloc(&p, n, 0, &hit);
    pc_pool_free(&p, a, 5);
    void *b = xalloc(&p, n, 0, &hit);
    ok(b != a && !hit, "large blocks: a second one while the first is fenced");
    pc_pool_free(&p, b, 6);
    fake_waited = 0;
    void *w = xalloc(&p, n, 0, &hit);
    ok(fake_waited > 0 && fake_waited <= 100000000,
       "large blocks, no room for a third: the oldest is waited for, no longer than a real allocation costs (%llu ns)",
       (unsigned long long)fake_waited);
    ok(w && w != b && !hit && fake.allocs == 3, "...and when it stays fenced, a new block after all");
    is_int((long)fake.live, (long)(3 * n) - (long)n, "the headroom made room for it by releasing one idle block");
    ok(PC_STAT_GET(trim_blocks) == 1 && PC_STAT_GET(trim_cap_blocks) == 0, "... a trim, not counted as the cap's");
    pc_pool_free(&p, w, 0);
}

static void test_states_and_double_free(void)
{
    struct pc_pool p;
    fake_reset(&p, (size_t)1 << 30);
    char *a = xalloc(&p, 3 * 4096, 0, NULL);
    is_int(pc_pool_state(&p, a, 0), PC_BLOCK_LIVE, "base is live");
    is_int(pc_pool_state(&p, a + 5000, 1), PC_BLOCK_LIVE, "interior found by interior lookup");
    is_int(pc_pool_state(&p, a + 5000, 0), PC_BLOCK_NONE, "interior is not a base");
    is_int(pc_pool_state(&p, a + 3 * 4096, 1), PC_BLOCK_NONE, "one past the end is outside");
    is_int(pc_pool_free(&p, a + 8, 0), PC_BLOCK_NONE, "free of an interior pointer is not ours");
    is_int(pc_pool_free(&p, a, 0), PC_BLOCK_LIVE, "free");
    is_int(pc_pool_free(&p, a, 0), PC_BLOCK_IDLE, "double free detected");
    is_int(pc_pool_state(&p, a + 100, 1), PC_BLOCK_IDLE, "interior of an idle block");
    int x;
    is_int(pc_pool_state(&p, &x, 1), PC_BLOCK_NONE, "foreign pointer");
    char *b = xalloc(&p, 4096, 0, NULL);
    is_int(pc_pool_forget(&p, b), 0, "forget a live block");
    is_int(pc_pool_state(&p, b, 0), PC_BLOCK_NONE, "forgotten block is not ours");
    free(b);
}

static void test_cap_trims_lru(void)
{
    struct pc_pool p;
    void *v[8];
    fake_reset(&p, 1 << 20);                   /* 1 MiB of idle blocks */
    pc_stats_reset();
    for (int i = 0; i < 8; i++)
        v[i] = xalloc(&p, 512 * 1024, 0, NULL);
    for (int i = 0; i < 8; i++) {
        pc_pool_free(&p, v[i], 0);
        pc_pool_enforce_cap(&p);
    }
    is_int((long)fake.releases, 6, "idle bytes trimmed back to the cap");
    is_int((long)PC_STAT_GET(trim_cap_blocks), 6, "... counted as released by the cap");
    is_int((long)PC_STAT_GET(trim_cap_bytes), 6 * 512 * 1024, "... with their bytes");
    ok(fake.released[0] == v[0] && fake.released[5] == v[5], "least recently freed released first");
    is_int((long)fake.live, 1 << 20, "exactly the cap remains held");
}

static void test_cap_prefers_idle_device(void)
{
    struct pc_pool p;
    void *v[20];
    fake_reset(&p, 8 << 20);
    fake.idle = 0;                             /* device busy */
    for (int i = 0; i < 20; i++)
        v[i] = xalloc(&p, 512 * 1024, 0, NULL);
    for (int i = 0; i < 18; i++) {
        pc_pool_free(&p, v[i], 0);
        pc_pool_enforce_cap(&p);
    }
    is_int((long)fake.releases, 0, "busy device: up to 1/8 over the cap is tolerated");
    pc_pool_free(&p, v[18], 0);
    pc_pool_enforce_cap(&p);
    ok(fake.releases > 0, "beyond 1/8 over the cap: trimmed anyway");
    fake.idle = 1;
    pc_pool_free(&p, v[19], 0);
    pc_pool_enforce_cap(&p);
    ok(fake.live <= (8u << 20), "idle device: trimmed to the cap");
}

static void test_oom_trims_and_retries(void)
{
    struct pc_pool p;
    int hit;
    fake_reset(&p, (size_t)1 << 30);
    fake.limit = 4 << 20;
    void *a = xalloc(&p, 1 << 20, 0, NULL);
    pc_pool_free(&p, a, 0);
    uint64_t before = PC_STAT_GET(oom_retries), larger = PC_STAT_GET(oom_larger);
    void *b = xalloc(&p, 7 << 19, 0, &hit);
    ok(b != NULL && !hit, "fits only after the (smaller) idle block is released");
    is_int((long)(PC_STAT_GET(oom_retries) - before), 1, "one retry");
    is_int((long)fake.releases, 1, "... after releasing the idle block");
    is_int((long)(PC_STAT_GET(oom_larger) - larger), 0, "... no larger block to take");
    void *c = NULL;
    is_int(pc_pool_alloc(&p, 3 << 20, 0, &c, &hit), 2, "still impossible: the runtime's error");
    is_int(pc_pool_alloc(&p, (size_t)1 << 50, 0, &c, &hit), -1, "too large to cache: caller passes through");
}

/* Out of memory with an idle block of a larger class whose fence is done:
 * that block, nothing released (a release waits for the device). */
static void test_oom_takes_larger(void)
{
    struct pc_pool p;
    int hit;
    fake_reset(&p, (size_t)1 << 30);
    fake.limit = 4 << 20;
    fake.quiet = 0;
    void *a = xalloc(&p, 3 << 20, 0, NULL);
    void *s = xalloc(&p, 1 << 19, 0, NULL);
    pc_pool_free(&p, s, 0);      /* a smaller idle block: no use */
    pc_pool_free(&p, a, 5);      /* fenced, not yet known done */
    fake.done = 5;               /* ... but done when polled */
    uint64_t larger = PC_STAT_GET(oom_larger);
    void *b = xalloc(&p, 2 << 20, 0, &hit);
    ok(b == a, "2 MiB, out of memory: the idle 3 MiB block");
    is_int((long)fake.releases, 0, "... nothing released");
    is_int((long)(PC_STAT_GET(oom_larger) - larger), 1, "... counted");
    pc_pool_free(&p, b, 0);
    void *c = xalloc(&p, 3 << 20, 0, &hit);
    ok(c == a && hit, "freed, it is a 3 MiB block again: the next 3 MiB request hits it");
    fake.done = 0;
    pc_pool_free(&p, c, 9);      /* fenced and still pending */
    b = NULL;
    is_int(pc_pool_alloc(&p, 2 << 20, 0, &b, &hit), 0, "with its fence pending: no larger block, ...");
    ok(b != a && fake.releases >= 1, "... the cache released and the retry succeeded");
}

/* Out of memory at the class's size with nothing cached: the pinned bytes
 * held besides the pool go first, then the request's own pages are asked
 * for (plainly nothing more is). */
static void test_oom_shed_and_exact(void)
{
    struct pc_pool p;
    int hit;
    size_t req = (5u << 20) + 40000, exact = ((5u << 20) + 40000 + 4095) & ~(size_t)4095;

    fake_reset(&p, (size_t)1 << 30);
    fake.limit = 4 << 20;
    fake.ring = fake.live = 2 << 20;
    void *a = xalloc(&p, 3 << 20, 0, NULL);
    ok(a && fake.sheds == 1 && fake.live == (3u << 20), "3 MiB beside 2 MiB held besides the pool: they were shed, then it fitted");
    pc_pool_free(&p, a, 0);
    pc_pool_trim(&p, 0);
    fake.limit = (5u << 20) + (1u << 18);
    uint64_t before = PC_STAT_GET(oom_exact);
    a = xalloc(&p, req, 0, NULL);
    ok(a && fake.live == exact, "5 MiB + 40000 with 5.25 MiB free: its class (5.5 MiB) does not fit, its pages do");
    is_int((long)(PC_STAT_GET(oom_exact) - before), 1, "... counted");
    pc_pool_free(&p, a, 0);
    fake.limit = 0;
    void *b = xalloc(&p, 5u << 20, 0, &hit);
    ok(b == a && hit, "freed, it serves the class below its size (5 MiB)");
    pc_pool_free(&p, b, 0);
    b = xalloc(&p, (5u << 20) + (1u << 19), 0, &hit);
    ok(b != a && !hit, "... and not its request's class, whose size it lacks");
}

/* Out of memory while another thread's trim is still releasing idle
 * blocks: the allocation waits for that memory instead of failing. */
static void *trim_all(void *arg)
{
    pc_pool_trim(arg, 0);
    return NULL;
}

static void *open_gate(void *arg)
{
    (void)arg;
    usleep(100000);
    pthread_mutex_lock(&fake.lock);
    fake.gate = 0;
    pthread_cond_broadcast(&fake.opened);
    pthread_mutex_unlock(&fake.lock);
    return NULL;
}

static void test_oom_waits_for_releases(void)
{
    struct pc_pool p;
    pthread_t t, g;
    void *b = NULL;
    int hit;

    fake_reset(&p, (size_t)1 << 30);
    fake.limit = 4 << 20;
    void *a = xalloc(&p, 3 << 20, 0, NULL);
    pc_pool_free(&p, a, 0);
    fake.gate = 1;
    pthread_create(&t, NULL, trim_all, &p);
    while (__atomic_load_n(&p.cached, __ATOMIC_RELAXED))      /* taken out, its release held at the gate */
        usleep(1000);
    pthread_create(&g, NULL, open_gate, NULL);
    is_int(pc_pool_alloc(&p, 2 << 20, 0, &b, &hit), 0, "2 MiB while another thread releases 3 MiB: waited for it, fitted");
    ok(b && fake.releases == 1, "... after that release");
    pthread_join(t, NULL);
    pthread_join(g, NULL);
}

static void test_headroom(void)
{
    struct pc_pool p;
    void *live[8] = {0};
    unsigned seed = 7;
    size_t req_live = 0, req_peak = 0, req[8] = {0}, maxreq = 0;
    long worst = -(1L << 40);     /* held bytes beyond the allowed bound */

    fake_reset(&p, (size_t)1 << 40);
    pc_pool_init(&p, &fake_ops, NULL, (size_t)1 << 40, 15);
    /* Log-uniform sizes 64 KiB..32 MiB, a bounded live set, random order. */
    for (int i = 0; i < 4000; i++) {
        int s = rand_r(&seed) % 8;
        if (live[s]) {
            pc_pool_free(&p, live[s], 0);
            req_live -= req[s];
            live[s] = NULL;
        } else {
            req[s] = (size_t)65536 << (rand_r(&seed) % 12);
            req[s] += (size_t)rand_r(&seed) % req[s];
            if (req[s] > maxreq)
                maxreq = req[s];
            live[s] = xalloc(&p, req[s], 0, NULL);
            req_live += req[s];
            if (req_live > req_peak)
                req_peak = req_live;
        }
        /* peak + max(15%, 32 MiB, the largest block), plus class rounding */
        size_t slack = req_peak / 100 * 15 > ((size_t)32 << 20) ? req_peak / 100 * 15 : ((size_t)32 << 20);
        if (slack < maxreq + maxreq / 8)
            slack = maxreq + maxreq / 8;
        long over = (long)fake.live - (long)(req_peak + slack + req_peak / 8);
        if (over > worst)
            worst = over;
    }
    ok(worst <= 0, "held bytes stay within peak + max(15%%, 32 MiB, largest block) (+ rounding): worst excess %ld bytes", worst);
    ok(fake.releases > 0, "idle blocks of unused sizes were released");
}

/* A miss beyond the headroom while the device is busy releases nothing (a
 * release waits for the device, the real allocation would not: a kernel
 * waiting for the host to go on after it would hang); the next free,
 * whose real call waits anyway, trims instead. */
static void test_headroom_waits_for_quiet(void)
{
    struct pc_pool p;
    const size_t M = (size_t)1 << 20;
    int hit;

    fake_reset(&p, (size_t)1 << 40);
    pc_pool_init(&p, &fake_ops, NULL, (size_t)1 << 40, 15);
    pc_stats_reset();
    pc_pool_free(&p, xalloc(&p, 64 * M, 0, &hit), 0);
    pc_pool_free(&p, xalloc(&p, 48 * M, 0, &hit), 0);
    is_int((long)fake.releases, 0, "64 and 48 MiB idle: within the headroom");
    fake.quiet = 0;
    void *c = xalloc(&p, 40 * M, 0, &hit);
    ok(c && !hit && fake.releases == 0, "busy device: a 40 MiB miss beyond the headroom releases nothing");
    is_int((long)PC_STAT_GET(trim_deferred), 1, "... and leaves the trim to the next free (trim_deferred)");
    pc_pool_free(&p, c, 0);
    pc_pool_enforce_cap(&p);
    is_int((long)fake.releases, 1, "the next free trims one idle block");
    ok(fake.released[0] != c, "... the least recently freed, not the block just freed");
    ok(fake.live <= 64 * M + 40 * M, "... back within the headroom (%zu MiB held)", fake.live / M);
    pc_pool_free(&p, xalloc(&p, 40 * M, 0, &hit), 0);
    pc_pool_enforce_cap(&p);
    is_int((long)fake.releases, 1, "nothing owed any more: the free after it releases nothing");
    fake.quiet = 1;
    pc_pool_free(&p, xalloc(&p, 56 * M, 0, &hit), 0);
    ok(fake.releases == 2 && PC_STAT_GET(trim_deferred) == 1, "quiet device: the miss trims at once");
}

/* Near a memory limit idle blocks go: at a free, and at a miss while the
 * device is quiet; never the program's live blocks. */
static void test_memory_limit(void)
{
    struct pc_pool p;
    const size_t M = (size_t)1 << 20;
    void *v[4];
    int hit;

    fake_reset(&p, (size_t)1 << 40);
    pc_stats_reset();
    for (int i = 0; i < 4; i++)
        v[i] = xalloc(&p, 8 * M, 0, &hit);
    fake.allow = 10 * M;
    for (int i = 0; i < 3; i++) {
        pc_pool_free(&p, v[i], 0);
        pc_pool_enforce_cap(&p);
    }
    is_int((long)fake.releases, 2, "10 MiB allowed: of three idle 8 MiB blocks, two released by the frees");
    ok(fake.released[0] == v[0] && fake.released[1] == v[1], "... the least recently freed");
    ok(PC_STAT_GET(trim_mem_blocks) == 2 && PC_STAT_GET(trim_mem_bytes) == 16 * M && PC_STAT_GET(trim_cap_blocks) == 0,
       "... counted as the memory limit's");
    is_int((long)fake.live, 16 * M, "the live block and one idle block stay");
    fake.allow = 0;
    fake.quiet = 0;
    void *w = xalloc(&p, 4 * M, 0, &hit);
    ok(w && !hit && fake.releases == 2, "nothing allowed, device busy: a miss releases nothing");
    fake.quiet = 1;
    void *x = xalloc(&p, 2 * M, 0, &hit);
    ok(x && !hit && fake.releases == 3, "device quiet: the next miss releases the idle block");
    pc_pool_free(&p, w, 0);
    pc_pool_enforce_cap(&p);
    ok(fake.releases == 4 && fake.released[3] == w, "a free with nothing allowed releases the block at once");
    is_int((long)fake.live, 10 * M, "only the live blocks stay (8 + 2 MiB)");
    fake.allow = SIZE_MAX;
    pc_pool_free(&p, x, 0);
    pc_pool_enforce_cap(&p);
    is_int((long)fake.releases, 4, "no limit: the free keeps its block");
    pc_pool_free(&p, v[3], 0);
}

struct churn_arg { struct pc_pool *p; unsigned seed; int bad; };

static void *churn(void *argp)
{
    struct churn_arg *a = argp;
    void *held[8] = {0};
    for (int i = 0; i < 20000; i++) {
        int slot = rand_r(&a->seed) % 8;
        if (held[slot]) {
            if (pc_pool_free(a->p, held[slot], 0) != PC_BLOCK_LIVE)
                a->bad++;
            pc_pool_enforce_cap(a->p);
            held[slot] = NULL;
        } else {
            size_t n = 4096u << (rand_r(&a->seed) % 8);
            held[slot] = xalloc(a->p, n, rand_r(&a->seed) % 2, NULL);
            if (!held[slot])
                a->bad++;
            else
                memset(held[slot], slot, 64);
        }
    }
    for (int s = 0; s < 8; s++)
        if (held[s] && pc_pool_free(a->p, held[s], 0) != PC_BLOCK_LIVE)
            a->bad++;
    pc_pool_enforce_cap(a->p);
    return NULL;
}

static void test_threads(void)
{
    struct pc_pool p;
    pthread_t t[4];
    struct churn_arg a[4];
    int bad = 0;
    fake_reset(&p, 2 << 20);
    for (int i = 0; i < 4; i++) {
        a[i] = (struct churn_arg){ &p, (unsigned)i + 1, 0 };
        pthread_create(&t[i], NULL, churn, &a[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        bad += a[i].bad;
    }
    is_int(bad, 0, "4 threads: every allocation served, every free accepted");
    ok(fake.live == p.cached, "everything freed: the fake runtime holds exactly the cached bytes");
    ok(p.cached <= (2u << 20) + (2u << 20) / 8, "cap respected (with the busy-device slack)");
}

/* A block goes back only to requests of its home (the device whose context
 * allocated it), and dropping a home forgets its blocks, live or idle,
 * without releasing them, and nothing else. */
static void test_homes(void)
{
    struct pc_pool p;
    void *a0, *a1, *b1, *c, *d;
    int hit = -1;

    fake_reset(&p, (size_t)1 << 30);
    a0 = xalloc(&p, 8192, PC_KEY(1, 0), NULL);
    a1 = xalloc(&p, 8192, PC_KEY(1, 1), NULL);
    b1 = xalloc(&p, 8192, PC_KEY(1, 1), NULL);
    pc_pool_free(&p, a0, 0);
    c = xalloc(&p, 8192, PC_KEY(1, 1), &hit);
    ok(c != a0 && !hit, "an idle block of home 0 is not handed to a request of home 1");
    d = xalloc(&p, 8192, PC_KEY(1, 0), &hit);
    ok(d == a0 && hit, "... but to one of home 0");
    is_int(pc_pool_live_key(&p, d), (long)PC_KEY(1, 0), "the live key says flags and home");
    pc_pool_free(&p, a1, 0);
    pc_pool_drop_home(&p, 1);
    is_int(pc_pool_state(&p, a1, 0), PC_BLOCK_NONE, "dropping home 1 forgets its idle block");
    is_int(pc_pool_state(&p, b1, 0), PC_BLOCK_NONE, "... and its live ones");
    is_int(pc_pool_state(&p, d, 0), PC_BLOCK_LIVE, "home 0's block stays");
    is_int(fake.releases, 0, "nothing released: the reset already freed them");
    is_int((long)p.held, 8192, "the cache holds home 0's block only");
    c = xalloc(&p, 8192, PC_KEY(1, 1), &hit);
    ok(c && !hit, "home 1 starts over with a new block");
    is_int(pc_pool_alloc(&p, 8192, PC_KEY(1, PC_POOL_NHOME), &c, &hit), -1, "a home beyond the table: pass through");
}

/* pc_cache_owns remembers the live block it last found, per thread, and
 * asks the pool again once any live block stopped being live: a block freed,
 * forgotten or dropped with its device is no longer the program's, even to
 * the thread that remembered it. */
static void test_owns_memo(void)
{
    char *a, *b, *c;
    struct pc_pool_span sp;

    fake_reset(&pc_cache, (size_t)1 << 30);
    a = xalloc(&pc_cache, 3 * 4096, 0, NULL);
    ok(pc_cache_owns(a + 5000), "a pointer inside a live block is the program's");
    ok(pc_cache_owns(a + 100) && pc_cache_owns(a), "... and so are others of the same block (remembered)");
    ok(!pc_cache_owns(a + 3 * 4096) && !pc_cache_owns(a - 1), "one past the end and one before are not");
    b = xalloc(&pc_cache, 4096, 0, NULL);
    ok(pc_cache_owns(b) && pc_cache_owns(a + 1), "another live block, then the first again");
    ok(pc_pool_live_span(&pc_cache, a + 8, &sp) == 0 && pc_pool_span_live(&sp), "a live block's span is live");
    ok(xalloc(&pc_cache, 4096, 0, NULL) != NULL && pc_pool_span_live(&sp), "... after another allocation too");
    pc_pool_free(&pc_cache, a, 0);
    ok(!pc_pool_span_live(&sp), "... and not after its free");
    ok(!pc_cache_owns(a + 100), "a freed block is not the program's, though this thread remembered it");
    ok(pc_cache_owns(b), "a live one still is");
    is_int(pc_pool_forget(&pc_cache, b), 0, "forget a live block");
    ok(!pc_cache_owns(b + 8), "a forgotten block is not the program's");
    free(b);
    c = xalloc(&pc_cache, 8192, PC_KEY(0, 1), NULL);
    ok(pc_cache_owns(c + 8), "a block of home 1");
    pc_pool_drop_home(&pc_cache, 1);
    ok(!pc_cache_owns(c + 8), "dropped with its home, it is not the program's");
    ok(!pc_cache_owns(NULL), "NULL never is");
}

/* --- a thread's parked block (core/park.h) --- */

static void *kalloc(struct pc_pool *p, struct pc_park *k, size_t n, unsigned key, int *hit)
{
    void *ptr = NULL;
    int h = 0;

    if (pc_park_take(p, k, n, key, &ptr) == 0)
        h = 2;                       /* from the park */
    else if (pc_pool_alloc_for(p, k, n, key, &ptr, &h) != 0)
        return NULL;
    if (hit)
        *hit = h;
    return ptr;
}

/* A parked block is idle to every question, and comes back to its thread
 * for a request of its class and key only. */
static void test_park_states(void)
{
    struct pc_pool p;
    struct pc_park k = {0};
    struct pc_pool_span sp;
    char *a, *b;
    int hit = -1;

    fake_reset(&p, (size_t)1 << 30);
    pc_park_join(&p, &k);
    a = kalloc(&p, &k, 3 * 4096, 1, NULL);
    ok(pc_pool_live_span(&p, a + 8, &sp) == 0 && pc_pool_span_live(&sp), "a live span");
    is_int(pc_park_put(&p, &k, a), 0, "park the block just handed out");
    ok(!pc_pool_span_live(&sp), "parked, the block's span is no longer live");
    is_int(pc_pool_state(&p, a, 0), PC_BLOCK_IDLE, "a parked block is idle");
    is_int(pc_pool_state(&p, a + 100, 1), PC_BLOCK_IDLE, "... inside too");
    is_int(pc_pool_live_span(&p, a + 8, &sp), -1, "... and no live span");
    is_int(pc_pool_free(&p, a, 0), PC_BLOCK_IDLE, "its free again is a double free");
    is_int(pc_pool_forget(&p, a), -1, "it cannot be forgotten as live");
    b = kalloc(&p, &k, 4096, 1, &hit);
    ok(b != a && hit != 2, "another class: not from the park");
    b = kalloc(&p, &k, 3 * 4096, 2, &hit);
    ok(b != a && hit != 2, "another key: not from the park");
    b = kalloc(&p, &k, 3 * 4096 - 100, 1, &hit);
    ok(b == a && hit == 2, "its class and key: the parked block");
    is_int(pc_pool_state(&p, a, 0), PC_BLOCK_LIVE, "live again");
    is_int((long)fake.allocs, 3, "three real blocks in all");
    is_int(pc_pool_free(&p, a, 0), PC_BLOCK_LIVE, "the pool's free takes it");
    is_int((long)p.req_live, 4096 + 3 * 4096, "requested bytes: the two live blocks");
}

/* What a free through the pool would not keep, the park refuses. */
static void test_park_refusals(void)
{
    struct pc_pool p;
    struct pc_park k = {0};
    char *a, *b;

    fake_reset(&p, (size_t)1 << 30);
    pc_park_join(&p, &k);
    a = kalloc(&p, &k, 8192, 0, NULL);
    b = kalloc(&p, &k, 8192, 0, NULL);
    is_int(pc_park_put(&p, &k, a), -1, "not the block handed out last");
    is_int(pc_pool_free(&p, a, 0), PC_BLOCK_LIVE, "... the pool's free then");
    is_int(pc_park_put(&p, &k, b), 0, "the last one parks");
    a = kalloc(&p, &k, 4096, 0, NULL);
    is_int(pc_park_put(&p, &k, a), -1, "one parked block at a time");
    is_int(pc_pool_free(&p, a, 0), PC_BLOCK_LIVE, "... the pool's free then");
    fake_reset(&p, 8192);
    k = (struct pc_park){0};
    pc_park_join(&p, &k);
    a = kalloc(&p, &k, 8192, 0, NULL);
    b = kalloc(&p, &k, 4096, 0, NULL);
    is_int(pc_pool_free(&p, a, 0), PC_BLOCK_LIVE, "8 KiB idle, the whole cap");
    is_int(pc_park_put(&p, &k, b), -1, "a block beyond the cap is not parked");
    fake_reset(&p, (size_t)1 << 30);
    k = (struct pc_park){0};
    pc_park_join(&p, &k);
    fake.allow = 8192;
    a = kalloc(&p, &k, 8192, 0, NULL);
    b = kalloc(&p, &k, 4096, 0, NULL);
    is_int(pc_park_put(&p, &k, b), 0, "within a memory limit: parked");
    a = kalloc(&p, &k, 4096, 0, NULL);
    is_int(pc_pool_free(&p, a, 0), PC_BLOCK_LIVE, "4 KiB idle");
    b = kalloc(&p, &k, 8192 + 4096, 0, NULL);
    is_int(pc_park_put(&p, &k, b), -1, "beyond a memory limit: not parked");
    fake.allow = SIZE_MAX;
    __atomic_store_n(&p.trim_owed, 4096, __ATOMIC_RELAXED);
    b = kalloc(&p, &k, 4096, 0, NULL);
    is_int(pc_park_put(&p, &k, b), -1, "a trim owed: the pool's free pays it");
}

/* Every release of idle blocks, and another thread's miss, reach parked
 * blocks: the pool holds nothing it would not hold without parks. */
static void test_park_releases(void)
{
    struct pc_pool p;
    struct pc_park k1 = {0}, k2 = {0};
    char *a, *b;
    int hit = -1;

    fake_reset(&p, (size_t)1 << 30);
    pc_park_join(&p, &k1);
    pc_park_join(&p, &k2);
    a = kalloc(&p, &k1, 8192, 0, NULL);
    is_int(pc_park_put(&p, &k1, a), 0, "thread 1 parks a block");
    b = kalloc(&p, &k2, 8192, 0, &hit);
    ok(b == a && hit == 1, "thread 2's miss takes it from thread 1's park");
    is_int((long)fake.allocs, 1, "... no real allocation");
    ok(kalloc(&p, &k1, 8192, 0, &hit) != a && hit != 2, "thread 1's park is empty");
    is_int(pc_park_put(&p, &k2, b), 0, "thread 2 parks it");
    pc_pool_release_idle(&p);
    ok(fake.releases == 1 && fake.released[0] == b, "releasing the idle blocks releases the parked one");
    ok(kalloc(&p, &k2, 8192, 0, &hit) != NULL && hit != 2, "... and the park is empty");

    /* out of memory: a parked block is released before the program hears it */
    fake_reset(&p, (size_t)1 << 30);
    k1 = (struct pc_park){0};
    pc_park_join(&p, &k1);
    fake.limit = 64 * 4096;
    a = kalloc(&p, &k1, 40 * 4096, 0, NULL);
    is_int(pc_park_put(&p, &k1, a), 0, "a parked block of 160 KiB");
    b = kalloc(&p, &k1, 48 * 4096, 0, NULL);
    ok(b != NULL && fake.releases == 1 && fake.released[0] == a,
       "a larger request the limit leaves no room for: the parked block released, then served");

    /* a device's loss drops parked blocks with the others */
    fake_reset(&p, (size_t)1 << 30);
    k1 = (struct pc_park){0};
    pc_park_join(&p, &k1);
    a = kalloc(&p, &k1, 8192, PC_KEY(0, 1), NULL);
    is_int(pc_park_put(&p, &k1, a), 0, "a parked block of home 1");
    pc_pool_drop_home(&p, 1);
    is_int(pc_pool_state(&p, a, 0), PC_BLOCK_NONE, "dropped with its home");
    is_int((long)p.held, 0, "the pool holds nothing");
    ok(kalloc(&p, &k1, 8192, PC_KEY(0, 1), &hit) != a || hit != 2, "never handed back from the park");

    /* a thread's exit */
    fake_reset(&p, (size_t)1 << 30);
    k1 = (struct pc_park){0};
    pc_park_join(&p, &k1);
    a = kalloc(&p, &k1, 8192, 0, NULL);
    is_int(pc_park_put(&p, &k1, a), 0, "parked");
    pc_park_leave(&p, &k1);
    is_int((long)p.cached, 8192, "a thread's exit gives its parked block to the idle lists");
    ok(p.parks == NULL && !k1.joined, "... and leaves the list");
    ok(xalloc(&p, 8192, 0, &hit) == a && hit, "another thread gets it");
}

/* A parked block taken to the idle lists and parked again, by another
 * thread or in a reused struct, is never taken back by a park that lost
 * it (the version in its word). */
static void test_park_versions(void)
{
    struct pc_pool p;
    struct pc_park k1 = {0}, k2 = {0};
    struct pc_block *blk;
    char *a, *b;
    void *v = NULL;
    uint64_t w;
    int hit = -1;

    fake_reset(&p, (size_t)1 << 30);
    pc_park_join(&p, &k1);
    pc_park_join(&p, &k2);
    a = kalloc(&p, &k1, 8192, 0, NULL);
    is_int(pc_park_put(&p, &k1, a), 0, "thread 1 parks a");
    blk = k1.parked;                 /* what thread 1's park remembers */
    w = k1.parked_word;
    pc_park_steal(&p);
    b = kalloc(&p, &k2, 8192, 0, &hit);
    ok(b == a && hit == 1, "taken to the idle lists, thread 2 gets it");
    is_int(pc_park_put(&p, &k2, b), 0, "... and parks it");
    __atomic_store_n(&k1.parked, blk, __ATOMIC_RELAXED);   /* thread 1 still points at it */
    k1.parked_word = w;
    is_int(pc_park_take(&p, &k1, 8192, 0, &v), -1, "thread 1's old word does not take it");
    ok(pc_park_take(&p, &k2, 8192, 0, &v) == 0 && v == a, "thread 2's does");
    is_int(pc_pool_free(&p, a, 0), PC_BLOCK_LIVE, "freed");
    pc_pool_release_idle(&p);
    a = kalloc(&p, &k2, 8192, 0, &hit);
    ok(a && !hit && k2.mine == blk, "a new block in the released one's struct");
    is_int(pc_park_put(&p, &k2, a), 0, "... parked");
    __atomic_store_n(&k1.parked, blk, __ATOMIC_RELAXED);
    k1.parked_word = w;
    is_int(pc_park_take(&p, &k1, 8192, 0, &v), -1, "the old word still does not take it");
    ok(pc_park_take(&p, &k2, 8192, 0, &v) == 0 && v == a, "its own park's does");
}

/* Threads park and take back while another takes every parked block to
 * the idle lists and releases them: no block is ever held by two. */
struct park_arg { struct pc_pool *p; unsigned id; int bad; };
static int park_stop;

static void *park_churn(void *v)
{
    struct park_arg *a = v;
    struct pc_park k = {0};

    pc_park_join(a->p, &k);
    for (int i = 0; i < 20000; i++) {
        unsigned *m = kalloc(a->p, &k, 4096 * (1 + i % 2), 0, NULL);

        if (!m) {
            a->bad++;
            continue;
        }
        __atomic_store_n(m, a->id, __ATOMIC_RELAXED);
        for (int j = 0; j < 20; j++)
            if (__atomic_load_n(m, __ATOMIC_RELAXED) != a->id)
                a->bad++;
        if (pc_park_put(a->p, &k, m) != 0 && pc_pool_free(a->p, m, 0) != PC_BLOCK_LIVE)
            a->bad++;
    }
    pc_park_leave(a->p, &k);
    return NULL;
}

static void *park_thief(void *v)
{
    struct pc_pool *p = v;

    while (!__atomic_load_n(&park_stop, __ATOMIC_ACQUIRE)) {
        pc_park_steal(p);
        pc_pool_release_idle(p);
    }
    return NULL;
}

static void test_park_threads(void)
{
    struct pc_pool p;
    struct park_arg a[3];
    pthread_t t[3], th;
    int bad = 0;

    fake_reset(&p, (size_t)1 << 30);
    pthread_create(&th, NULL, park_thief, &p);
    for (int i = 0; i < 3; i++) {
        a[i] = (struct park_arg){ &p, (unsigned)i + 1, 0 };
        pthread_create(&t[i], NULL, park_churn, &a[i]);
    }
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        bad += a[i].bad;
    }
    __atomic_store_n(&park_stop, 1, __ATOMIC_RELEASE);
    pthread_join(th, NULL);
    is_int(bad, 0, "3 threads parking, one taking parked blocks away: never a block held twice");
    ok(p.parks == NULL && fake.live == p.cached, "all gone back: the fake runtime holds exactly the idle bytes");
}

int main(void)
{
    test_size_classes();
    test_reuse_waits_for_fence();
    test_states_and_double_free();
    test_cap_trims_lru();
    test_cap_prefers_idle_device();
    test_oom_trims_and_retries();
    test_oom_takes_larger();
    test_oom_shed_and_exact();
    test_oom_waits_for_releases();
    test_headroom();
    test_headroom_waits_for_quiet();
    test_memory_limit();
    test_wait_without_room();
    test_threads();
    test_homes();
    test_owns_memo();
    test_park_states();
    test_park_refusals();
    test_park_releases();
    test_park_versions();
    test_park_threads();
    return done_testing();
}
