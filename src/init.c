/* init.c - the life cycle: start-up, fork, device loss and exit of every
 * module (pc_modules), and the report at exit. */
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include "init.h"
#include "util/state.h"
#include "api/cache_cuda.h"
#include "api/register.h"
#include "api/streams.h"
#include "util/log.h"
#include "util/options.h"
#include "report/output.h"
#include "util/stats.h"
#include "util/clock.h"
#include "stage/stage.h"
#include "stage/stage_threads.h"
#include "stage/xfer_help.h"
#include "stage/fastalloc.h"
#include "stage/fastmem.h"
#include "stage/ownmem.h"
#include "real/real.h"
#include "real/rtdrv.h"
#include "core/cache.h"
#include "core/fence.h"
#include "core/pinned.h"
#include "core/hostkind.h"
#include "diag/cupti.h"
#include "diag/diag.h"
#include "diag/shadow.h"
#include "diag/trace.h"


static pthread_once_t pc_once = PTHREAD_ONCE_INIT;
static int pc_reported;       /* atomic: the report is written once */
static int pc_exited;         /* atomic: the exit handlers ran */

static void pc_cache_start(void)
{
    pc_cache_init(&pc_cache_cuda_ops);
}

static void pc_trace_start(void)
{
    pc_trace_init();
}

/* The life cycle of every module, in one place.  Each column runs top to
 * bottom:
 *   start        once, after the options are read (pc_init_once);
 *   before_fork  pthread_atfork's prepare, in the parent;
 *   fork_child   in the child of fork(): forget the parent's CUDA state,
 *                make no CUDA call (the child passes everything through);
 *   device_lost  a device's primary context is gone (cudaDeviceReset,
 *                cuDevicePrimaryCtxReset, the last primary release): its
 *                blocks, rings and events with it (api/streams.c calls);
 *   at_exit      once, at exit (pc_dtor), before the report: no CUDA call,
 *                no allocation, and other threads may still be running.
 * The report is pc_dtor's below, plus CUPTI's flush (pc_cupti_started). */
struct pc_module {
    const char *name;
    void (*start)(void);
    void (*before_fork)(void);
    void (*fork_child)(void);
    void (*device_lost)(int dev);
    void (*at_exit)(void);
};

static const struct pc_module pc_modules[] = {
    /* name       start           before_fork              fork_child                    device_lost             at_exit */
    { "stats",    pc_stats_init,  NULL,                    pc_stats_reset,               NULL,                   NULL },
    { "clock",    pc_clock_start, NULL,                    NULL,                         NULL,                   NULL },
    { "cache",    pc_cache_start, NULL,                    pc_cache_after_fork_child,    pc_cache_forget_device, pc_cache_at_exit },
    { "fence",    NULL,           NULL,                    pc_fence_forget_all,          pc_fence_forget_device, NULL },
    { "register", NULL,           pc_register_before_fork, pc_register_after_fork_child, NULL,                   NULL },
    /* host pools and VMM survive a device's loss (cudaDeviceReset and
     * cuCtxDestroy do not free them: cuda_runtime_api.h, cuda.h) */
    { "pinned",   NULL,           NULL,                    pc_pinned_after_fork_child,   NULL,                   NULL },
    { "hostkind", NULL,           NULL,                    pc_hostkind_after_fork_child, pc_hostkind_forget_device, NULL },
    /* before stage and fast, whose fork_child forget their rings and witnesses */
    { "own",      NULL,           NULL,                    pc_own_after_fork_child,      NULL,                   NULL },
    /* at exit: leave the node's share (the last one out removes its file) */
    { "stage",    NULL,           NULL,                    pc_stage_after_fork_child,    pc_stage_forget_device, pc_stage_at_exit },
    /* after cache and stage: their blocks and rings are forgotten first */
    { "fast",     NULL,           pc_fast_memfds_before_fork, pc_fast_after_fork_child,  pc_fast_forget_device,  NULL },
    { "xfer",     NULL,           NULL,                    pc_xfer_after_fork_child,     NULL,                   NULL },
    { "xferhelp", NULL,           NULL,                    pc_xfer_extra_after_fork_child, NULL,                 NULL },
    { "diag",     NULL,           NULL,                    pc_diag_after_fork_child,     NULL,                   NULL },
    { "shadow",   NULL,           NULL,                    pc_shadow_after_fork_child,   NULL,                   NULL },
    { "trace",    pc_trace_start, NULL,                    pc_trace_after_fork_child,    NULL,                   NULL },
    { "cupti",    NULL,           NULL,                    pc_cupti_after_fork_child,    NULL,                   NULL },
};
#define PC_NMODULES (sizeof pc_modules / sizeof pc_modules[0])

static void pc_before_fork(void)
{
    for (size_t i = 0; i < PC_NMODULES; i++)
        if (pc_modules[i].before_fork)
            pc_modules[i].before_fork();
}

static void pc_atfork_child(void)
{
    /* The child must not touch the parent's CUDA state: no fences, no frees.
     * Its report covers only what it does itself, if anything. */
    pc_state.forked_child = 1;
    pc_state.cuda_used = 0;
    pc_state.start_ns = pc_now_ns();
    __atomic_store_n(&pc_reported, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&pc_exited, 0, __ATOMIC_RELAXED);
    for (size_t i = 0; i < PC_NMODULES; i++)
        if (pc_modules[i].fork_child)
            pc_modules[i].fork_child();
}

static void pc_device_lost(int dev)
{
    for (size_t i = 0; i < PC_NMODULES; i++)
        if (pc_modules[i].device_lost)
            pc_modules[i].device_lost(dev);
}

/* CUPTI's exit flush must run before the exit handlers CUPTI and the runtime
 * registered when they initialised (atexit runs the last registered first),
 * so it is registered once CUPTI is on, not at start-up; pc_dtor, which
 * writes the report and the timeline, runs after every atexit handler. */
static void pc_cupti_started(void)
{
    atexit(pc_cupti_at_exit);
}

static void pc_init_once(void)
{
    /* What lower layers get from above, handed down before anything runs. */
    pc_real_set_standin(pc_rtdrv_standin);
    pc_cupti_set_on_start(pc_cupti_started);
    pc_streams_set_device_lost(pc_device_lost);
    pc_fast_set_runner(pc_stage_parallel);

    pc_options_init();
    pc_state.mode = pc_opt.mode;
    pc_state.start_ns = pc_now_ns();
    for (size_t i = 0; i < PC_NMODULES; i++)
        if (pc_modules[i].start)
            pc_modules[i].start();
    pthread_atfork(pc_before_fork, NULL, pc_atfork_child);
    __atomic_store_n(&pc_state.inited, 1, __ATOMIC_RELEASE);
}

void pc_init(void)
{
    pthread_once(&pc_once, pc_init_once);
}

/* errno is 0 when main starts (C11 7.5): start-up's own misses (a /sys
 * file that is not there) must not show. */
__attribute__((constructor)) static void pc_ctor(void)
{
    int saved = errno;

    pc_init();
    errno = saved;
}

/* Runs at exit() from any thread and at dlclose.  No CUDA calls here: the
 * runtime may already be torn down.  Cached blocks are not freed either. */
static void pc_dtor_report(void)
{
    struct pc_report_info info;

    if (!__atomic_load_n(&pc_state.inited, __ATOMIC_ACQUIRE))
        return;
    if (!__atomic_exchange_n(&pc_exited, 1, __ATOMIC_ACQ_REL))
        for (size_t i = 0; i < PC_NMODULES; i++)
            if (pc_modules[i].at_exit)
                pc_modules[i].at_exit();
    if (pc_state.mode == PC_MODE_OFF)
        return;
    if (pc_state.forked_child && !__atomic_load_n(&pc_state.cuda_used, __ATOMIC_RELAXED))
        return;
    if (__atomic_exchange_n(&pc_reported, 1, __ATOMIC_ACQ_REL))
        return;
    pc_tls_depth = 1;        /* nothing below may re-enter a wrapper */
    info = (struct pc_report_info){
        .mode = pc_state.mode,
        .pid = (int)getpid(),
        .max_cached = pc_opt.max_cached,
        .cuda_used = __atomic_load_n(&pc_state.cuda_used, __ATOMIC_RELAXED),
        .forked_child = pc_state.forked_child,
        .broken = pc_fence_broken,
        .stage_native = pc_stage_native_devices(),
        .start_ns = pc_state.start_ns,
        .end_ns = pc_now_ns(),
    };
    pc_report_write(&info);
    if (info.cuda_used)
        pc_trace_write(info.pid, info.start_ns);
}

/* errno as it was, for the exit handlers that run after this one. */
__attribute__((destructor)) static void pc_dtor(void)
{
    int saved = errno;

    pc_dtor_report();
    errno = saved;
}
