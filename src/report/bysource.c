/* bysource.c - pinned bytes by source (bysource.h), from the gauges of
 * stats.def: one row per way CUDA pins host memory. */
#include "config.h"
#include <stddef.h>
#include "util/stats.h"
#include "util/fmt.h"
#include "report/bysource.h"

struct pc_pin_src {
    const char *key;           /* JSON */
    const char *name;          /* text */
    const char *help;
    size_t live, peak;         /* offsets of the gauge and its peak in struct pc_stats */
};

#define PC_SRC(key, name, gauge, help) \
    { key, name, help, offsetof(struct pc_stats, gauge), offsetof(struct pc_stats, gauge##_peak) }
static const struct pc_pin_src pc_pin_srcs[] = {
    PC_SRC("host_alloc", "cudaHostAlloc", live_bytes,
           "cudaHostAlloc, cudaMallocHost, cuMemHostAlloc, cuMemAllocHost: the blocks the program holds"),
    PC_SRC("registered", "registered", registered_bytes, "cudaHostRegister, cuMemHostRegister"),
    PC_SRC("host_pools", "host pools", host_pool_bytes, "allocations from memory pools located on the host"),
    PC_SRC("host_vmm", "host VMM", host_vmm_bytes, "cuMemCreate with a host location"),
};
#define PC_NSRC (sizeof pc_pin_srcs / sizeof pc_pin_srcs[0])

static int64_t pc_at(const struct pc_stats *st, size_t off)
{
    return *(const int64_t *)(const void *)((const char *)st + off);
}

void pc_report_pinned(struct pc_emitter *e, const struct pc_report *r)
{
    int64_t total = 0;
    unsigned i;

    pc_emit_dict_begin(e, "pinned", "pinned bytes by source (live at exit, peak)");
    for (i = 0; i < PC_NSRC; i++) {
        int64_t live = pc_at(r->st, pc_pin_srcs[i].live), peak = pc_at(r->st, pc_pin_srcs[i].peak);
        total += live;
        pc_emit_dict_begin(e, pc_pin_srcs[i].key, pc_pin_srcs[i].help);
        pc_emit_kv(e, "live", "bytes pinned at exit", PC_EMIT_BYTES | PC_EMIT_SIGNED, &live);
        pc_emit_kv(e, "peak", "the most pinned at once", PC_EMIT_BYTES | PC_EMIT_SIGNED, &peak);
        pc_emit_dict_end(e);
    }
    pc_emit_kv(e, "live_total", "bytes pinned at exit, all sources", PC_EMIT_BYTES | PC_EMIT_SIGNED, &total);
    pc_emit_dict_end(e);
}

int pc_report_pinned_elsewhere(const struct pc_report *r)
{
    for (unsigned i = 1; i < PC_NSRC; i++)
        if (pc_at(r->st, pc_pin_srcs[i].peak) > 0)
            return 1;
    return 0;
}

void pc_report_pinned_lines(struct pc_emitter *e, const struct pc_report *r)
{
    char buf[400];
    int len = 0;
    unsigned i;

    if (!pc_report_pinned_elsewhere(r))
        return;              /* the memory line says it all */
    buf[0] = '\0';
    for (i = 0; i < PC_NSRC && (unsigned long)len < sizeof buf; i++) {
        int64_t live = pc_at(r->st, pc_pin_srcs[i].live), peak = pc_at(r->st, pc_pin_srcs[i].peak);
        struct pc_h a, b;
        if (peak <= 0)
            continue;
        len += pc_fmt(buf + len, sizeof buf - (unsigned long)len, "%s%s %s / %s", len ? "; " : "",
                      pc_pin_srcs[i].name, pc_hi(&a, PC_EMIT_BYTES, live), pc_hi(&b, PC_EMIT_BYTES, peak));
    }
    if (len)
        pc_emit_line(e, "pinned by source (live at exit / peak): %s", buf);
}
