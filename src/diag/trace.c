/* trace.c - the PINCACHE_TRACE timeline (see trace.h).
 *
 * The ring is a power-of-two array of fixed-size events, mmap'd once.  A
 * writer takes a slot with one atomic increment and fills it seqlock-style:
 * seq 0 while it writes, index+1 once done, so the exit writer can skip a
 * slot another thread is still filling.  Nothing is ever freed: a thread
 * still appending while another exits only costs that one event. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "diag/call.h"
#include "util/log.h"
#include "util/options.h"
#include "util/outfile.h"
#include "report/output.h"
#include "util/stats.h"
#include "diag/trace.h"

#define PC_TRACE_MIN 16ul
#define PC_TRACE_MAX (1ul << 24)

struct pc_trace_ev {
    uint64_t seq;          /* index + 1 once complete; 0 while being written */
    uint64_t t0;           /* pc_now_ns() at entry */
    uint64_t dur;
    uint64_t bytes;
    uint32_t tid;
    int16_t api;
    int8_t copy;
    uint8_t notes;
    uint32_t ok;
    uint32_t pad;
};

/* ring and mask are written by init (before any call is accounted) and
 * never again; next is the only shared, changing word. */
static struct {
    struct pc_trace_ev *ring;
    uint64_t mask;
    uint64_t next;          /* atomic: events ever added (this process) */
} T;

static __thread uint32_t pc_trace_tid;

int pc_trace_init_n(unsigned long n)
{
    unsigned long cap = PC_TRACE_MIN;
    void *m;

    if (T.ring)
        return 0;
    while (cap < n && cap < PC_TRACE_MAX)
        cap <<= 1;
    m = mmap(NULL, cap * sizeof(struct pc_trace_ev), PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -errno;
    T.mask = cap - 1;
    __atomic_store_n(&T.ring, (struct pc_trace_ev *)m, __ATOMIC_RELEASE);
    return 0;
}

int pc_trace_init(void)
{
    int r;

    if (!pc_opt.trace)
        return 0;                /* PINCACHE_TRACE=off (options decide "off") */
    r = pc_trace_init_n((unsigned long)pc_opt.trace_events);
    if (r)
        pc_warn("PINCACHE_TRACE: cannot allocate the event ring; no trace");
    return r;
}

void pc_trace_add(const struct pc_call *c, uint64_t t1, int ok)
{
    struct pc_trace_ev *ring = __atomic_load_n(&T.ring, __ATOMIC_ACQUIRE), *e;
    uint64_t i;

    if (!ring)
        return;
    if (!pc_trace_tid)
        pc_trace_tid = (uint32_t)syscall(SYS_gettid);
    i = __atomic_fetch_add(&T.next, 1, __ATOMIC_RELAXED);
    if (i > T.mask)
        PC_STAT_INC(trace_dropped);
    PC_STAT_INC(trace_events);
    e = &ring[i & T.mask];
    /* Each field a release store after seq 0: a reader that acquires any
     * of them sees seq 0 or later when it looks again (no fences, which
     * ThreadSanitizer cannot follow; plain moves on x86). */
    __atomic_store_n(&e->seq, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&e->t0, c->t0, __ATOMIC_RELEASE);
    __atomic_store_n(&e->dur, t1 > c->t0 ? t1 - c->t0 : 0, __ATOMIC_RELEASE);
    __atomic_store_n(&e->bytes, c->bytes, __ATOMIC_RELEASE);
    __atomic_store_n(&e->tid, pc_trace_tid, __ATOMIC_RELEASE);
    __atomic_store_n(&e->api, (int16_t)c->api, __ATOMIC_RELEASE);
    __atomic_store_n(&e->copy, (int8_t)c->copy, __ATOMIC_RELEASE);
    __atomic_store_n(&e->notes, (uint8_t)c->notes, __ATOMIC_RELEASE);
    __atomic_store_n(&e->ok, (uint32_t)(ok != 0), __ATOMIC_RELEASE);
    __atomic_store_n(&e->seq, i + 1, __ATOMIC_RELEASE);
}

/* Copy slot i out if it holds a complete event of index i. */
static int pc_trace_read(uint64_t i, struct pc_trace_ev *out)
{
    struct pc_trace_ev *e = &T.ring[i & T.mask];
    uint64_t s = __atomic_load_n(&e->seq, __ATOMIC_ACQUIRE);

    if (s != i + 1)
        return 0;
    out->t0 = __atomic_load_n(&e->t0, __ATOMIC_ACQUIRE);
    out->dur = __atomic_load_n(&e->dur, __ATOMIC_ACQUIRE);
    out->bytes = __atomic_load_n(&e->bytes, __ATOMIC_ACQUIRE);
    out->tid = __atomic_load_n(&e->tid, __ATOMIC_ACQUIRE);
    out->api = __atomic_load_n(&e->api, __ATOMIC_ACQUIRE);
    out->copy = __atomic_load_n(&e->copy, __ATOMIC_ACQUIRE);
    out->notes = __atomic_load_n(&e->notes, __ATOMIC_ACQUIRE);
    out->ok = __atomic_load_n(&e->ok, __ATOMIC_ACQUIRE);
    return __atomic_load_n(&e->seq, __ATOMIC_RELAXED) == s &&
           out->api >= 0 && out->api < PC_API_COUNT;
}

/* Buffered write(2); the first error sticks. */
struct pc_tw {
    int fd;
    int err;
    unsigned long len;
    char buf[16384];
};

static void pc_tw_flush(struct pc_tw *w)
{
    if (w->len && !w->err)
        w->err = pc_write_all(w->fd, w->buf, w->len);
    w->len = 0;
}

static void pc_tw_put(struct pc_tw *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void pc_tw_put(struct pc_tw *w, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (sizeof w->buf - w->len < 512)
        pc_tw_flush(w);
    va_start(ap, fmt);
    n = pc_vfmt(w->buf + w->len, sizeof w->buf - w->len, fmt, ap);
    va_end(ap);
    if (n > 0)
        w->len += (unsigned long)n < sizeof w->buf - w->len ? (unsigned long)n
                                                             : sizeof w->buf - w->len - 1;
}

/* Microseconds with nanosecond digits, as Chrome's format expects. */
#define PC_US(ns) (unsigned long long)((ns) / 1000), (unsigned long long)((ns) % 1000)

static void pc_trace_event(struct pc_tw *w, int pid, uint64_t start_ns, const struct pc_trace_ev *e)
{
    int synced = (e->notes & PC_NOTE_BUSY) && e->ok;
    uint64_t ts = e->t0 > start_ns ? e->t0 - start_ns : 0;
    const char *cache = (e->notes & PC_NOTE_HIT) ? "hit" : (e->notes & PC_NOTE_MISS) ? "miss" : NULL;

    /* A call that waited for the device stands out: its own category and
     * Chrome's reserved colour for bad news. */
    pc_tw_put(w, ",\n{\"name\":\"%s\",\"cat\":\"%s\",%s\"ph\":\"X\",\"pid\":%d,\"tid\":%u,"
                 "\"ts\":%llu.%03llu,\"dur\":%llu.%03llu,\"args\":{\"bytes\":%llu",
              pc_api_rows[e->api].key, synced ? "sync" : cache ? "cache" : "api",
              synced ? "\"cname\":\"terrible\"," : "", pid, (unsigned)e->tid, PC_US(ts),
              PC_US(e->dur), (unsigned long long)e->bytes);
    if (cache)
        pc_tw_put(w, ",\"cache\":\"%s\"", cache);
    if (e->copy >= 0 && e->copy < PC_COPY_COUNT)
        pc_tw_put(w, ",\"copy\":\"%s\"", pc_copy_rows[e->copy].key);
    if (synced)
        pc_tw_put(w, ",\"synced\":true");
    if (e->notes & PC_NOTE_AVOIDED)
        pc_tw_put(w, ",\"sync_avoided\":true");
    if (!e->ok)
        pc_tw_put(w, ",\"error\":true");
    pc_tw_put(w, "}}");
}

int pc_trace_emit_fd(int fd, int pid, uint64_t start_ns)
{
    static struct pc_tw w;     /* once per process, at exit: off the stack */
    struct pc_trace_ev e;
    uint64_t end, i, first, written = 0, dropped;

    w.fd = fd;
    w.err = 0;
    w.len = 0;
    if (!T.ring)
        return -EINVAL;
    end = __atomic_load_n(&T.next, __ATOMIC_ACQUIRE);
    first = end > T.mask + 1 ? end - (T.mask + 1) : 0;
    dropped = first;
    pc_tw_put(&w, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
                  "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"pincache %d\"}}",
              pid, pid);
    for (i = first; i < end; i++) {
        if (!pc_trace_read(i, &e)) {
            dropped++;
            continue;
        }
        pc_trace_event(&w, pid, start_ns, &e);
        written++;
    }
    pc_tw_put(&w, "\n],\"otherData\":{\"pincache_version\":\"%s\",\"events\":%llu,\"dropped\":%llu}}\n",
              PACKAGE_VERSION, (unsigned long long)written, (unsigned long long)dropped);
    pc_tw_flush(&w);
    return w.err;
}

struct pc_trace_args { int pid; uint64_t start_ns; };

static int pc_trace_emit_cb(int fd, void *arg)
{
    const struct pc_trace_args *a = arg;
    return pc_trace_emit_fd(fd, a->pid, a->start_ns);
}

void pc_trace_write(int pid, uint64_t start_ns)
{
    static char path[PC_OUTFILE_PATH_MAX];   /* off the exiting thread's stack: once, at exit */
    char host[256];
    struct pc_trace_args a = { pid, start_ns };

    if (!T.ring)
        return;
    if (gethostname(host, sizeof host) != 0 || !host[0])
        pc_fmt(host, sizeof host, "unknown");
    host[sizeof host - 1] = '\0';
    if (pc_report_path(path, sizeof path, pc_opt.trace, pid, pc_env_rank(), host) != 0) {
        pc_warn("PINCACHE_TRACE: cannot use '%.200s' as a path", pc_opt.trace);
        return;
    }
    pc_write_file(path, "trace", pc_trace_emit_cb, &a);
}

void pc_trace_after_fork_child(void)
{
    /* The child is single-threaded here: plain stores are fine. */
    pc_trace_tid = 0;
    __atomic_store_n(&T.next, 0, __ATOMIC_RELAXED);
}
