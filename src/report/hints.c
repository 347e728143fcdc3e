/* hints.c - the exit report's recommendations: at most two, most useful
 * first, each a change the user can make, from the figures (figures.h). */
#include "config.h"
#include "util/fmt.h"
#include "util/parse.h"
#include "report/figures.h"
#include "report/hints.h"

#define PC_REPORT_MAX_HINTS 2

/* Copies from pageable memory run at a fraction of the pinned rate
 * (measured: 6.5-15 GB/s against 55); worth a word once they are most of
 * the bytes and not trivially few. */
#define PC_HINT_PAGEABLE_PCT 50.0
#define PC_HINT_PAGEABLE_MIN (16ull << 20)

/* What a fork copies of registered memory, measured on the H200
 * (tests/bench/forkcost.cu): 0.47 ms per MiB, against 2.9 ms for the fork
 * itself.  Under a MiB a fork (what MADV_DONTFORK leaves: the partial pages
 * at the ends of the ranges) is not worth a recommendation; the summary line
 * still counts it. */
#define PC_FORK_NS_PER_MIB 470000.0
#define PC_HINT_FORK_MIN (1ull << 20)      /* bytes per fork */


static void pc_report_hint_pageable(struct pc_emitter *e, const struct pc_report *r, int *n)
{
    const struct pc_copy_stat *c = r->st->copy;
    const char *fix = r->observe ? "or run in cache mode, which stages them through pinned memory"
                                 : "or keep PINCACHE_STAGE on";
    struct pc_h g;
    double pct;

    if (r->h2d_ok && r->h2d_pageable_pct >= PC_HINT_PAGEABLE_PCT &&
        c[PC_COPY_h2d_pageable].bytes >= PC_HINT_PAGEABLE_MIN) {
        pct = r->h2d_pageable_pct;
        if ((*n)++ < PC_REPORT_MAX_HINTS) {
            pc_emit_human(g.s, sizeof g.s, PC_EMIT_PCT, &pct);
            pc_emit_line(e, "%s of host-to-device bytes came from pageable memory: pin them "
                            "(PyTorch: pin_memory=True) %s", g.s, fix);
        }
    } else if (r->d2h_ok && r->d2h_pageable_pct >= PC_HINT_PAGEABLE_PCT &&
               c[PC_COPY_d2h_pageable].bytes >= PC_HINT_PAGEABLE_MIN) {
        pct = r->d2h_pageable_pct;
        if ((*n)++ < PC_REPORT_MAX_HINTS) {
            pc_emit_human(g.s, sizeof g.s, PC_EMIT_PCT, &pct);
            pc_emit_line(e, "%s of device-to-host bytes went to pageable memory: copy into pinned "
                            "buffers %s", g.s, fix);
        }
    }
}

/* At most PC_REPORT_MAX_HINTS, most useful first. */
void pc_report_hints(struct pc_emitter *e, const struct pc_report *r)
{
    const struct pc_stats *st = r->st;
    struct pc_h a, b, c;
    int n = 0;

    if (r->info->broken)
        return;      /* the numbers after the break say little */
    if (r->observe && st->would_sync && n++ < PC_REPORT_MAX_HINTS)
        pc_emit_line(e, "run in cache mode (pincache run without --observe) to avoid %s device "
                        "synchronizations (%s stalled)",
                     pc_hu(&a, PC_EMIT_COUNT, st->would_sync),
                     pc_hu(&b, PC_EMIT_NSEC, st->would_sync_ns));
    if (!r->observe && st->real_alloc_fail && n++ < PC_REPORT_MAX_HINTS) {
        char cap[32];
        pc_format_size(cap, sizeof cap, r->info->max_cached);
        pc_emit_line(e, "%s real pinned allocations failed: pinned host memory is short; lower "
                        "PINCACHE_MAX_CACHED (now %s) or free pinned buffers sooner",
                     pc_hu(&a, PC_EMIT_COUNT, st->real_alloc_fail), cap);
    } else if (!r->observe && st->trim_cap_blocks && n++ < PC_REPORT_MAX_HINTS) {
        /* Enough to have kept everything the cap released, in round units,
         * and never below the cap in force.  Releases made to stay near what
         * the program holds (the headroom) are by design: no advice. */
        uint64_t peak = st->cached_bytes_peak > 0 ? (uint64_t)st->cached_bytes_peak : 0;
        uint64_t want = (peak > r->info->max_cached ? peak : r->info->max_cached) +
                        st->trim_cap_bytes;
        uint64_t unit = want >= (1ull << 30) ? (1ull << 30) : (1ull << 20);
        char size[32];
        want = (want + unit - 1) / unit * unit;
        pc_format_size(size, sizeof size, (size_t)want);
        pc_emit_line(e, "the cache hit its cap and released %s idle blocks (%s) with cudaFreeHost; "
                        "raise PINCACHE_MAX_CACHED to %s",
                     pc_hu(&a, PC_EMIT_COUNT, st->trim_cap_blocks),
                     pc_hu(&b, PC_EMIT_BYTES, st->trim_cap_bytes), size);
    }
    if (!r->observe && st->trim_mem_blocks && n++ < PC_REPORT_MAX_HINTS)
        pc_emit_line(e, "a memory limit (cgroup memory.max) came near: the cache released %s idle "
                        "blocks (%s) early, to leave the program room; with that much more room "
                        "under the limit it would have kept them",
                     pc_hu(&a, PC_EMIT_COUNT, st->trim_mem_blocks),
                     pc_hu(&b, PC_EMIT_BYTES, st->trim_mem_bytes));
    int fork_hint = st->forks_registered &&
                    st->fork_registered_bytes >= st->forks_registered * PC_HINT_FORK_MIN;
    if (fork_hint && n++ < PC_REPORT_MAX_HINTS) {
        uint64_t est = (uint64_t)((double)st->fork_registered_bytes / (1 << 20) * PC_FORK_NS_PER_MIB);
        /* With PINCACHE_REGISTER_DONTFORK on, what forks still copy is not
         * its to fix: do not suggest it. */
        int dontfork = st->registered_dontfork_bytes_peak > 0;
        pc_emit_line(e, "%s forks copied %s of registered memory (about %s at an H200's %.2f ms per "
                        "MiB): keep forked workers alive (PyTorch: persistent_workers=True), %s"
                        "pin with cudaHostAlloc (PyTorch: leave pinned_use_cuda_host_register unset)",
                     pc_hu(&a, PC_EMIT_COUNT, st->forks_registered),
                     pc_hu(&b, PC_EMIT_BYTES, st->fork_registered_bytes),
                     pc_hu(&c, PC_EMIT_NSEC, est), PC_FORK_NS_PER_MIB / 1e6,
                     dontfork ? "or " : "set PINCACHE_REGISTER_DONTFORK=1 if the children never read "
                                        "that memory, or ");
    }
    pc_report_hint_pageable(e, r, &n);
    if (!r->observe && !st->alloc_calls && st->register_calls && !fork_hint &&
        n++ < PC_REPORT_MAX_HINTS)
        pc_emit_line(e, "the program pins memory with cudaHostRegister (%s calls), which is not "
                        "cached; PyTorch: leave pinned_use_cuda_host_register unset",
                     pc_hu(&c, PC_EMIT_COUNT, st->register_calls));
}
