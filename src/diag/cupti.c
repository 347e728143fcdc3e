/* cupti.c - CUPTI activity collection and its hand-over (see cupti.h);
 * finding libcupti: cupti_load.c.
 *
 * Facts this rests on (DESIGN.md, CUPTI 13): a process has one CUPTI
 * subscriber, and Nsight Systems, Nsight Compute, compute-sanitizer and
 * torch.profiler (Kineto) all want it; the Activity API needs none.
 * CONCURRENT_KERNEL is used, never KERNEL, which serializes kernels. */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include "util/state.h"
#include "diag/cupti.h"
#include "diag/cupti_load.h"
#include "diag/call.h"
#include "util/log.h"
#include "util/options.h"
#include "real/real.h"
#include "util/stats.h"
#include "diag/timeline.h"

#if defined(__has_include)
#if __has_include(<cupti_activity.h>)
#include <stddef.h>
#include <cupti_activity.h>
_Static_assert(CUPTI_ACTIVITY_KIND_MEMCPY == PC_CUPTI_KIND_MEMCPY &&
               CUPTI_ACTIVITY_KIND_MEMSET == PC_CUPTI_KIND_MEMSET &&
               CUPTI_ACTIVITY_KIND_KERNEL == PC_CUPTI_KIND_KERNEL &&
               CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL == PC_CUPTI_KIND_CONCURRENT_KERNEL &&
               CUPTI_ACTIVITY_FLAG_FLUSH_FORCED == PC_CUPTI_FLUSH_FORCED &&
               CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE == PC_CUPTI_MEMKIND_PAGEABLE &&
               CUPTI_ACTIVITY_MEMORY_KIND_PINNED == PC_CUPTI_MEMKIND_PINNED &&
               CUPTI_ERROR_NOT_INITIALIZED == PC_CUPTI_ERROR_NOT_INITIALIZED &&
               CUPTI_ERROR_MAX_LIMIT_REACHED == PC_CUPTI_ERROR_MAX_LIMIT_REACHED,
               "CUPTI constants");
_Static_assert(offsetof(CUpti_ActivityKernel10, start) == PC_CUPTI_KERNEL_START &&
               offsetof(CUpti_ActivityKernel10, end) == PC_CUPTI_KERNEL_END &&
               offsetof(CUpti_ActivityKernel10, deviceId) == PC_CUPTI_KERNEL_DEVICE &&
               offsetof(CUpti_ActivityKernel10, streamId) == PC_CUPTI_KERNEL_STREAM,
               "kernel record layout");
_Static_assert(offsetof(CUpti_ActivityMemcpy6, srcKind) == PC_CUPTI_MEMCPY_SRCKIND &&
               offsetof(CUpti_ActivityMemcpy6, dstKind) == PC_CUPTI_MEMCPY_DSTKIND &&
               offsetof(CUpti_ActivityMemcpy6, bytes) == PC_CUPTI_COPY_BYTES &&
               offsetof(CUpti_ActivityMemcpy6, start) == PC_CUPTI_COPY_START &&
               offsetof(CUpti_ActivityMemcpy6, end) == PC_CUPTI_COPY_END &&
               offsetof(CUpti_ActivityMemcpy6, deviceId) == PC_CUPTI_COPY_DEVICE &&
               offsetof(CUpti_ActivityMemcpy6, streamId) == PC_CUPTI_COPY_STREAM,
               "memcpy record layout");
_Static_assert(offsetof(CUpti_ActivityMemset4, bytes) == PC_CUPTI_COPY_BYTES &&
               offsetof(CUpti_ActivityMemset4, start) == PC_CUPTI_COPY_START &&
               offsetof(CUpti_ActivityMemset4, end) == PC_CUPTI_COPY_END &&
               offsetof(CUpti_ActivityMemset4, deviceId) == PC_CUPTI_COPY_DEVICE &&
               offsetof(CUpti_ActivityMemset4, streamId) == PC_CUPTI_COPY_STREAM,
               "memset record layout");
#endif
#endif

/* Bounded buffers: CUPTI is given at most this much; when all are out it
 * drops records (cupti_dropped). */
#define PC_CUPTI_NBUF 8
#define PC_CUPTI_BUFSZ (512u << 10)

static const int pc_cupti_kinds[] = {
    PC_CUPTI_KIND_CONCURRENT_KERNEL, PC_CUPTI_KIND_MEMCPY, PC_CUPTI_KIND_MEMSET,
};
#define PC_CUPTI_NKINDS (sizeof pc_cupti_kinds / sizeof pc_cupti_kinds[0])

/* C.lock serializes the state changes (start, hand-over, exit flush); it is
 * never held while a CUPTI callback of ours waits for it (the buffer
 * callbacks do not take it).  state is also read without it (atomic). */
static struct {
    pthread_mutex_t lock;
    int state;                 /* enum pc_cupti_state, atomic */
    int foreign;               /* another component called CUPTI before we took it */
    void *handle;              /* the libcupti in use */
    void *callers;             /* the one a caller loaded, before we loaded any (atomic) */
    struct pc_cupti_fns fn;
    void (*on_start)(void);    /* from init.c, before any call; called once CUPTI is on */
    int enabled[PC_CUPTI_NKINDS];
    int64_t offset;            /* pc_now_ns() minus CUPTI's clock, atomic */
    uint8_t *bufs;             /* PC_CUPTI_NBUF buffers, mmap'd once */
    uint32_t free_bufs;        /* bit i: buffer i is ours (atomic) */
} C = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Set while this thread is inside pincache's own CUPTI calls: a CUPTI call a
 * tool makes from a callback we triggered is forwarded, not a hand-over. */
static __thread int pc_cupti_inside __attribute__((tls_model("initial-exec")));

int pc_cupti_state(void)
{
    return __atomic_load_n(&C.state, __ATOMIC_ACQUIRE);
}

static void pc_cupti_set_state(int s)
{
    __atomic_store_n(&C.state, s, __ATOMIC_RELEASE);
}

/* A function of the libcupti in use (or, for the wrappers before we loaded
 * one, of the one the caller loaded). */
static void *pc_cupti_sym(const char *name)
{
    return pc_cupti_lookup(__atomic_load_n(&C.handle, __ATOMIC_ACQUIRE), &C.callers, name);
}

/* --- buffers and records ---------------------------------------------------- */

static void pc_cupti_sample_clock(void)
{
    uint64_t a, b, ts = 0;

    a = pc_now_ns();
    if (C.fn.timestamp(&ts) != PC_CUPTI_SUCCESS || !ts)
        return;
    b = pc_now_ns();
    __atomic_store_n(&C.offset, (int64_t)(a + (b - a) / 2) - (int64_t)ts, __ATOMIC_RELAXED);
}

static uint64_t pc_cupti_to_host(uint64_t ts, int64_t off)
{
    int64_t t = (int64_t)ts + off;

    return ts && t > 0 ? (uint64_t)t : 0;
}

static void pc_cupti_buf_request(uint8_t **buf, size_t *size, size_t *max_records)
{
    uint32_t m = __atomic_load_n(&C.free_bufs, __ATOMIC_ACQUIRE);
    unsigned i;

    *buf = NULL;
    *size = 0;
    *max_records = 0;
    do {
        if (!m)
            return;                /* all out: CUPTI drops records, and counts them */
        i = (unsigned)__builtin_ctz(m);
    } while (!__atomic_compare_exchange_n(&C.free_bufs, &m, m & ~(1u << i), 1, __ATOMIC_ACQ_REL,
                                          __ATOMIC_ACQUIRE));
    *buf = C.bufs + (size_t)i * PC_CUPTI_BUFSZ;
    *size = PC_CUPTI_BUFSZ;
}

static uint64_t pc_rd64(const uint8_t *r, unsigned off)
{
    uint64_t v;

    memcpy(&v, r + off, sizeof v);
    return v;
}

static uint32_t pc_rd32(const uint8_t *r, unsigned off)
{
    uint32_t v;

    memcpy(&v, r + off, sizeof v);
    return v;
}

/* One record into the timeline (the timeline's lock is held). */
static void pc_cupti_record(const uint8_t *r, int64_t off)
{
    struct pc_gpu_ev ev;
    int kind = (int)pc_rd32(r, 0);
    unsigned src, dst;

    memset(&ev, 0, sizeof ev);
    switch (kind) {
    case PC_CUPTI_KIND_KERNEL:
    case PC_CUPTI_KIND_CONCURRENT_KERNEL:
        ev.kind = PC_GPU_KERNEL;
        ev.start = pc_rd64(r, PC_CUPTI_KERNEL_START);
        ev.end = pc_rd64(r, PC_CUPTI_KERNEL_END);
        ev.device = pc_rd32(r, PC_CUPTI_KERNEL_DEVICE);
        ev.stream = pc_rd32(r, PC_CUPTI_KERNEL_STREAM);
        break;
    case PC_CUPTI_KIND_MEMCPY:
    case PC_CUPTI_KIND_MEMSET:
        /* A copy record is laid out like a memset's up to the stream id. */
        ev.kind = kind == PC_CUPTI_KIND_MEMCPY ? PC_GPU_MEMCPY : PC_GPU_MEMSET;
        if (kind == PC_CUPTI_KIND_MEMCPY) {
            src = r[PC_CUPTI_MEMCPY_SRCKIND];
            dst = r[PC_CUPTI_MEMCPY_DSTKIND];
            ev.mem = src == PC_CUPTI_MEMKIND_PAGEABLE || dst == PC_CUPTI_MEMKIND_PAGEABLE ? PC_GPU_MEM_PAGEABLE
                   : src == PC_CUPTI_MEMKIND_PINNED || dst == PC_CUPTI_MEMKIND_PINNED ? PC_GPU_MEM_PINNED
                   : PC_GPU_MEM_OTHER;
        }
        ev.bytes = pc_rd64(r, PC_CUPTI_COPY_BYTES);
        ev.start = pc_rd64(r, PC_CUPTI_COPY_START);
        ev.end = pc_rd64(r, PC_CUPTI_COPY_END);
        ev.device = pc_rd32(r, PC_CUPTI_COPY_DEVICE);
        ev.stream = pc_rd32(r, PC_CUPTI_COPY_STREAM);
        break;
    default:
        return;
    }
    if (!ev.start || ev.end < ev.start) {
        ev.start = ev.end = 0;     /* no timing (a forced flush of unfinished work) */
    } else {
        ev.start = pc_cupti_to_host(ev.start, off);
        ev.end = pc_cupti_to_host(ev.end, off);
    }
    pc_tl_add_gpu_locked(&ev);
}

/* CUPTI's worker thread, or the thread calling cuptiActivityFlushAll. */
static void pc_cupti_buf_complete(void *ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid)
{
    void *rec = NULL;
    uint64_t n = 0;
    size_t dropped = 0;
    size_t idx;
    int64_t off;

    if (!buf || !C.bufs || buf < C.bufs || buf >= C.bufs + (size_t)PC_CUPTI_NBUF * PC_CUPTI_BUFSZ)
        return;                    /* not one of ours */
    idx = (size_t)(buf - C.bufs) / PC_CUPTI_BUFSZ;
    if (valid && !pc_state.forked_child) {
        pc_cupti_sample_clock();
        off = __atomic_load_n(&C.offset, __ATOMIC_RELAXED);
        pc_tl_lock();
        while (C.fn.next_record(buf, valid, &rec) == PC_CUPTI_SUCCESS && rec) {
            pc_cupti_record(rec, off);
            n++;
        }
        pc_tl_unlock();
        PC_STAT_ADD(cupti_records, n);
    }
    if (C.fn.dropped(NULL, 0, &dropped) == PC_CUPTI_SUCCESS && dropped)
        PC_STAT_ADD(cupti_dropped, dropped);
    __atomic_fetch_or(&C.free_bufs, 1u << idx, __ATOMIC_ACQ_REL);
}

/* --- start, hand-over, exit --------------------------------------------------- */

/* Disable the kinds we enabled.  C.lock held. */
static void pc_cupti_disable_ours(void)
{
    size_t i;

    for (i = 0; i < PC_CUPTI_NKINDS; i++)
        if (C.enabled[i])
            C.fn.disable(pc_cupti_kinds[i]);
    memset(C.enabled, 0, sizeof C.enabled);
}

/* Stop collecting: deliver every buffer, disable our kinds.  C.lock held. */
static void pc_cupti_stop(void)
{
    pc_cupti_inside = 1;
    C.fn.flush_all(PC_CUPTI_FLUSH_FORCED);
    pc_cupti_disable_ours();
    /* Anything CUPTI still held after the disable comes back now. */
    C.fn.flush_all(PC_CUPTI_FLUSH_FORCED);
    pc_cupti_inside = 0;
    pc_tl_finish();
}

void pc_cupti_set_on_start(void (*fn)(void))
{
    C.on_start = fn;
}

/* Runs at exit() before the destructors, and before the exit handlers CUPTI
 * and the runtime registered earlier: CUPTI is still alive. */
void pc_cupti_at_exit(void)
{
    int saved = errno;       /* for the program's exit handlers after this one */

    if (pc_state.forked_child)
        return;
    pthread_mutex_lock(&C.lock);
    if (pc_cupti_state() == PC_CUPTI_ACTIVE) {
        pc_cupti_stop();
        pc_cupti_set_state(PC_CUPTI_FINISHED);
    }
    pthread_mutex_unlock(&C.lock);
    errno = saved;
}

void pc_cupti_after_fork_child(void)
{
    /* The parent's CUPTI session is not the child's: nothing more here. */
    pthread_mutex_init(&C.lock, NULL);
    pc_tl_reset();
}

/* Counted and said once; returns state. */
static int pc_cupti_give_up(int state, const char *why, const char *what)
{
    if (state == PC_CUPTI_UNAVAILABLE) {
        PC_STAT_INC(cupti_unavailable);
        pc_info("CUPTI unavailable (%s%s); sync attribution from fences", why, what ? what : "");
    } else {
        PC_STAT_INC(cupti_declined);
        pc_info("CUPTI left alone (%s%s); sync attribution from fences", why, what ? what : "");
    }
    return state;
}

/* PINCACHE_TEST_CUPTI_KINDS: which of our kinds are enabled (all, but for
 * the measurements of what each costs). */
static int pc_cupti_kind_wanted(int kind)
{
    switch (pc_opt.test_cupti_kinds) {
    case PC_TEST_CUPTI_KINDS_NONE:
        return 0;
    case PC_TEST_CUPTI_KINDS_KERNELS:
        return kind == PC_CUPTI_KIND_CONCURRENT_KERNEL;
    case PC_TEST_CUPTI_KINDS_COPIES:
        return kind != PC_CUPTI_KIND_CONCURRENT_KERNEL;
    default:
        return 1;
    }
}

/* Take CUPTI if we should and can; returns the new state.  C.lock held. */
static int pc_cupti_start(void)
{
    const char *tool;
    char err[32];
    void *m;
    size_t i;
    int r;

    if (pc_opt.cupti == PC_CUPTI_OFF)
        return pc_cupti_give_up(PC_CUPTI_DECLINED, "PINCACHE_CUPTI=off", NULL);
    if (C.foreign)
        return pc_cupti_give_up(PC_CUPTI_DECLINED, "another component of the process uses it", NULL);
    if (pc_opt.cupti == PC_CUPTI_AUTO) {
        if ((tool = pc_env_cuda_tool()) != NULL)
            return pc_cupti_give_up(PC_CUPTI_DECLINED, "another CUDA tool is present: ", tool);
        /* CUPTI works only with the real driver; without one (a stand-in
         * runtime) auto says nothing. */
        if (!pc_loaded_path("libcuda.so", NULL, 0)) {
            pc_debug("CUPTI not tried: no CUDA driver loaded");
            return PC_CUPTI_DECLINED;
        }
        if ((tool = pc_cupti_tool_loaded()) != NULL)
            return pc_cupti_give_up(PC_CUPTI_DECLINED, "another CUDA tool is present: ", tool);
    }
    C.handle = pc_cupti_open();
    if (!C.handle)
        return pc_cupti_give_up(PC_CUPTI_UNAVAILABLE, "libcupti not found", NULL);
    if (!pc_cupti_resolve(C.handle, &C.fn))
        return pc_cupti_give_up(PC_CUPTI_UNAVAILABLE, "libcupti lacks the Activity API", NULL);
    m = mmap(NULL, (size_t)PC_CUPTI_NBUF * PC_CUPTI_BUFSZ, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return pc_cupti_give_up(PC_CUPTI_UNAVAILABLE, "no memory for its buffers", NULL);
    C.bufs = m;
    __atomic_store_n(&C.free_bufs, (1u << PC_CUPTI_NBUF) - 1, __ATOMIC_RELEASE);
    if (pc_opt.trace)              /* PINCACHE_TRACE is not off */
        pc_tl_trace_init((unsigned long)pc_opt.trace_events);

    pc_cupti_inside = 1;
    pc_cupti_sample_clock();
    r = C.fn.register_callbacks(pc_cupti_buf_request, pc_cupti_buf_complete);
    for (i = 0; r == PC_CUPTI_SUCCESS && i < PC_CUPTI_NKINDS; i++) {
        if (!pc_cupti_kind_wanted(pc_cupti_kinds[i]))
            continue;
        r = C.fn.enable(pc_cupti_kinds[i]);
        C.enabled[i] = r == PC_CUPTI_SUCCESS;
    }
    if (r != PC_CUPTI_SUCCESS)
        pc_cupti_disable_ours();
    pc_cupti_inside = 0;
    if (r != PC_CUPTI_SUCCESS) {
        pc_fmt(err, sizeof err, "%d", r);
        return pc_cupti_give_up(PC_CUPTI_UNAVAILABLE, "activity collection refused, error ", err);
    }
    /* After CUPTI initialised: the life cycle (init.c) registers the exit
     * flush now, so that it runs before CUPTI's exit handlers. */
    if (C.on_start)
        C.on_start();
    PC_STAT_INC(cupti_enabled);
    pc_info("CUPTI activity collection on (kernels, copies, memsets)");
    return PC_CUPTI_ACTIVE;
}

static void pc_cupti_try_start(void)
{
    pthread_mutex_lock(&C.lock);
    if (pc_cupti_state() == PC_CUPTI_IDLE && !pc_state.forked_child) {
        pc_cupti_set_state(PC_CUPTI_ENABLING);
        pc_cupti_set_state(pc_cupti_start());
    }
    pthread_mutex_unlock(&C.lock);
}

static int pc_cupti_sync_api(int api, unsigned notes)
{
    switch (api) {
    case PC_API_free_host:
        return (notes & PC_NOTE_REAL) != 0;    /* a cached free does not wait */
    case PC_API_host_unregister:
    case PC_API_free:
    case PC_API_stream_sync:
    case PC_API_device_sync:
        return 1;
    default:
        return 0;
    }
}

void pc_cupti_call_end(int api, unsigned notes, uint64_t t0, uint64_t t1, int ok)
{
    int s = pc_cupti_state();

    if (s == PC_CUPTI_IDLE) {
        if (!ok || pc_state.forked_child)
            return;            /* wait for a call that initialised the runtime */
        pc_cupti_try_start();
        return;                /* this call ran before the timeline did */
    }
    if (s == PC_CUPTI_ACTIVE && ok && !pc_state.forked_child && pc_cupti_sync_api(api, notes))
        pc_tl_add_call(api, t0, t1);
}

void *pc_cupti_hand_over(const char *name)
{
    int s;

    if (pc_state.forked_child || pc_cupti_inside || pc_opt.test_cupti_no_handover)
        return pc_cupti_sym(name);
    s = pc_cupti_state();
    if (s == PC_CUPTI_IDLE || s == PC_CUPTI_ENABLING || s == PC_CUPTI_ACTIVE) {
        pthread_mutex_lock(&C.lock);
        s = pc_cupti_state();
        if (s == PC_CUPTI_IDLE) {
            C.foreign = 1;     /* we will never take it */
        } else if (s == PC_CUPTI_ACTIVE) {
            pc_cupti_stop();
            PC_STAT_INC(cupti_handed_over);
            pc_cupti_set_state(PC_CUPTI_HANDED_OVER);
            pc_info("CUPTI handed over (%s called by another component); sync attribution from "
                    "fences from now on", name);
        }
        pthread_mutex_unlock(&C.lock);
    }
    return pc_cupti_sym(name);
}
