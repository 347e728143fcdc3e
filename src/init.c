/* init.c - start-up, fork and exit. */
#include "config.h"
#include <pthread.h>
#include <unistd.h>
#include "init.h"
#include "util/state.h"
#include "api/api.h"
#include "util/log.h"
#include "util/options.h"
#include "report/report.h"
#include "util/stats.h"
#include "stage/stage.h"
#include "stage/stage_threads.h"
#include "real/real.h"
#include "real/rtdrv.h"
#include "core/fence.h"
#include "diag/diag.h"
#include "diag/trace.h"


static pthread_once_t pc_once = PTHREAD_ONCE_INIT;
static int pc_reported;       /* atomic: the report is written once */

static void pc_atfork_child(void)
{
    /* The child must not touch the parent's CUDA state: no fences, no frees.
     * Its report covers only what it does itself, if anything. */
    pc_state.forked_child = 1;
    pc_state.cuda_used = 0;
    pc_state.start_ns = pc_now_ns();
    pc_stats_reset();
    pc_hostmem_after_fork_child();
    pc_stage_after_fork_child();
    pc_xfer_after_fork_child();
    pc_diag_after_fork_child();
    pc_trace_after_fork_child();
    __atomic_store_n(&pc_reported, 0, __ATOMIC_RELAXED);
}

static void pc_init_once(void)
{
    pc_real_set_standin(pc_rtdrv_standin);
    pc_options_init();
    pc_state.mode = pc_opt.mode;
    pc_state.start_ns = pc_now_ns();
    pc_hostmem_init();
    pc_trace_init();
    pthread_atfork(pc_hostmem_before_fork, NULL, pc_atfork_child);
    __atomic_store_n(&pc_state.inited, 1, __ATOMIC_RELEASE);
}

void pc_init(void)
{
    pthread_once(&pc_once, pc_init_once);
}

__attribute__((constructor)) static void pc_ctor(void)
{
    pc_init();
}

/* Runs at exit() from any thread and at dlclose.  No CUDA calls here: the
 * runtime may already be torn down.  Cached blocks are not freed either. */
__attribute__((destructor)) static void pc_dtor(void)
{
    struct pc_report_info info;
    static const char *const mode_names[] = { "cache", "observe", "off" };

    if (!__atomic_load_n(&pc_state.inited, __ATOMIC_ACQUIRE) || pc_state.mode == PC_MODE_OFF)
        return;
    if (pc_state.forked_child && !__atomic_load_n(&pc_state.cuda_used, __ATOMIC_RELAXED))
        return;
    if (__atomic_exchange_n(&pc_reported, 1, __ATOMIC_ACQ_REL))
        return;
    pc_tls_depth = 1;        /* nothing below may re-enter a wrapper */
    info = (struct pc_report_info){
        .mode = mode_names[pc_state.mode],
        .pid = (int)getpid(),
        .max_cached = pc_opt.max_cached,
        .cuda_used = __atomic_load_n(&pc_state.cuda_used, __ATOMIC_RELAXED),
        .forked_child = pc_state.forked_child,
        .broken = pc_fence_broken,
        .start_ns = pc_state.start_ns,
        .end_ns = pc_now_ns(),
    };
    pc_report_write(&info);
    if (info.cuda_used)
        pc_trace_write(info.pid, info.start_ns);
}
