/* test_timeline - the GPU timeline's bookkeeping (src/timeline.c) alone, no
 * CUDA, no CUPTI: busy intervals merged out of order, synchronizing calls
 * measured against them, the bounded rings, the trace ring. */
#include "config.h"
#include <string.h>
#include "tap.h"
#include "util/stats.h"
#include "diag/timeline.h"

static void fresh(void)
{
    pc_tl_reset();
    pc_stats_reset();
}

static void gpu(int kind, uint64_t s, uint64_t e, uint64_t bytes, int mem)
{
    struct pc_gpu_ev ev;

    memset(&ev, 0, sizeof ev);
    ev.kind = (uint8_t)kind;
    ev.start = s;
    ev.end = e;
    ev.bytes = bytes;
    ev.mem = (uint8_t)mem;
    ev.stream = 7;
    pc_tl_add_gpu(&ev);
}

static void kernel(uint64_t s, uint64_t e)
{
    gpu(PC_GPU_KERNEL, s, e, 0, 0);
}

static void test_waited_and_idle(void)
{
    fresh();
    pc_tl_add_call(PC_API_free_host, 100, 200);      /* the kernel runs through its entry */
    pc_tl_add_call(PC_API_free_host, 300, 310);      /* nothing runs */
    kernel(50, 150);
    kernel(400, 420);                                  /* the next activity */
    pc_tl_finish();
    is_int(PC_STAT_GET(cupti_sync_calls), 2, "two calls measured");
    is_int(PC_STAT_GET(cupti_sync_calls_waited), 1, "one waited");
    is_int(PC_STAT_GET(cupti_sync_stall_ns), 50, "its stall runs from entry to the kernel's end");
    is_int(pc_stats.api[PC_API_free_host].gpu_waited, 1, "per API: waited");
    is_int(pc_stats.api[PC_API_free_host].gpu_stall_ns, 50, "per API: stall");
    is_int(PC_STAT_GET(gpu_idle_after_sync_ns), 250, "GPU idle from the drain (150) to the next kernel (400)");
    is_int(PC_STAT_GET(gpu_busy_ns), 120, "busy time");
    is_int(PC_STAT_GET(gpu_kernels), 2, "kernels counted");
}

static void test_out_of_order_merge(void)
{
    fresh();
    kernel(300, 400);
    kernel(100, 150);
    kernel(250, 320);          /* overlaps the first: one interval 250..400 */
    kernel(140, 260);          /* bridges: 100..400 */
    kernel(500, 600);
    kernel(600, 650);          /* touches: 500..650 */
    pc_tl_add_call(PC_API_device_sync, 120, 380);
    pc_tl_finish();
    is_int(PC_STAT_GET(gpu_busy_ns), 300 + 150, "merged busy time (100..400, 500..650)");
    is_int(PC_STAT_GET(cupti_sync_stall_ns), 260, "a call inside a busy stretch stalls to its return");
    is_int(PC_STAT_GET(gpu_idle_after_sync_ns), 0, "no idle gap when the GPU is still busy at its return");
}

static void test_call_during_work_started_later(void)
{
    fresh();
    pc_tl_add_call(PC_API_stream_sync, 1000, 2000);
    kernel(1100, 1500);        /* queued work that started after entry */
    pc_tl_add_call(PC_API_stream_sync, 3000, 3100);
    kernel(2900, 2950);        /* ended before the second call */
    pc_tl_finish();
    is_int(PC_STAT_GET(cupti_sync_calls_waited), 1, "work starting during the call counts; work ending before it does not");
    is_int(PC_STAT_GET(cupti_sync_stall_ns), 500, "stall to the end of that work");
    is_int(pc_stats.api[PC_API_stream_sync].gpu_waited, 1, "counted for cudaStreamSynchronize");
}

static void test_untimed_and_copies(void)
{
    fresh();
    gpu(PC_GPU_MEMCPY, 0, 0, 4096, PC_GPU_MEM_PAGEABLE);     /* no timing (forced flush) */
    gpu(PC_GPU_MEMCPY, 10, 20, 1000, PC_GPU_MEM_PINNED);
    gpu(PC_GPU_MEMCPY, 30, 40, 7, PC_GPU_MEM_OTHER);
    gpu(PC_GPU_MEMSET, 50, 60, 8, 0);
    pc_tl_finish();
    is_int(PC_STAT_GET(gpu_memcpys), 3, "every copy counted, timed or not");
    is_int(PC_STAT_GET(gpu_memcpy_pageable_bytes), 4096, "pageable bytes");
    is_int(PC_STAT_GET(gpu_memcpy_pinned_bytes), 1000, "pinned bytes");
    is_int(PC_STAT_GET(gpu_memcpy_other_bytes), 7, "other bytes");
    is_int(PC_STAT_GET(gpu_memsets), 1, "memsets");
    is_int(PC_STAT_GET(gpu_busy_ns), 30, "only timed activity is busy time");
}

/* More intervals and calls than the rings hold: calls are resolved as the
 * intervals they need leave, and nothing is lost or counted twice. */
static void test_rings_overflow(void)
{
    uint64_t i, n = 3 * PC_TL_BUSY_MAX, calls = 0;

    fresh();
    for (i = 0; i < n; i++) {
        uint64_t t = 1000 * (i + 1);   /* 0 would mean "no timing" */
        kernel(t, t + 100);
        if (i % 4 == 0) {
            pc_tl_add_call(PC_API_free, t + 50, t + 200);   /* waits 50 */
            pc_tl_add_call(PC_API_free, t + 300, t + 400);  /* idle */
            calls += 2;
        }
    }
    pc_tl_finish();
    is_int(PC_STAT_GET(cupti_sync_calls), calls, "every call measured once");
    is_int(PC_STAT_GET(cupti_sync_calls_waited), calls / 2, "half of them waited");
    is_int(PC_STAT_GET(cupti_sync_stall_ns), 50 * (calls / 2), "stalls exact");
    is_int(PC_STAT_GET(gpu_busy_ns), 100 * n, "busy time counted once per interval");
    is_int(PC_STAT_GET(gpu_idle_after_sync_ns), 900 * (calls / 2), "idle gaps exact");
    /* Later activity, older than what left the ring, is counted but not kept. */
    kernel(5, 6);
    is_int(PC_STAT_GET(gpu_kernels), n + 1, "late kernels still counted");
    pc_tl_finish();
    is_int(PC_STAT_GET(gpu_busy_ns), 100 * n, "and not added to the busy time twice");
}

static unsigned long seen_first, seen_n;

static void each(void *arg, const struct pc_gpu_ev *ev)
{
    if (!seen_n++)
        seen_first = (unsigned long)ev->start;
}

static void test_trace_ring(void)
{
    uint64_t i;

    fresh();
    is_int(pc_tl_trace_each(each, NULL), 0, "no ring, no events");
    ok(pc_tl_trace_init(10) == 0, "a ring of 16");
    for (i = 1; i <= 20; i++)
        kernel(i * 10, i * 10 + 5);
    seen_n = 0;
    is_int(pc_tl_trace_each(each, NULL), 16, "the latest 16 kept");
    is_int(seen_first, 50, "oldest first");
}

int main(void)
{
    test_waited_and_idle();
    test_out_of_order_merge();
    test_call_during_work_started_later();
    test_untimed_and_copies();
    test_rings_overflow();
    test_trace_ring();
    return done_testing();
}
