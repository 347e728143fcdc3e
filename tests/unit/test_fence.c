/* Unit tests of the fences (src/core/fence.c, fence_ev.c,
 * fence_streams.c) against a fake device: what a fence covers
 * (context-wide, stream by stream, other devices, destroyed streams), when
 * it is complete, and what it does in a broken context, during a capture,
 * on a refused or failed query, and after a device reset.  No CUDA: fence_ops.h's table is faked here, as
 * test_pool.c fakes the pool's.
 *
 * The fake: every device numbers the work submitted to it (submitted) and
 * completes it in order (completed).  A stream remembers the number of its
 * last work; the legacy stream's covers every blocking stream too; a
 * context-wide record covers all the device's work.  An event is complete
 * once its device's completed count reaches the number it recorded. */
#include "config.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "core/fence.h"
#include "core/fence_ops.h"
#include "tap.h"

const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "detect_leaks=0"; }

#define NDEV 2
#define NSTREAM 8
#define STREAM(i) ((void *)(uintptr_t)(0x100 + (i)))   /* handles of streams 0..NSTREAM-1 */

struct fake_ev { int dev; unsigned long ticket; };

static struct {
    int cur;                                /* current device */
    unsigned long submitted[NDEV], completed[NDEV];
    unsigned long last[NSTREAM];            /* last work on each stream */
    unsigned long legacy_last[NDEV];
    int sdev[NSTREAM], nonblocking[NSTREAM];
    int broken[NDEV];                       /* sticky error of the device's context, or 0 */
    int ctx_wide, ctx_refuse, capture_refuses, query_error, blind_all;
    /* calls made */
    int context_ok_calls, event_records, ctx_records, event_creates, set_devices, get_devices;
    int records_on[NSTREAM], queries_of[NSTREAM];  /* event records on, queries of each stream */
    uintptr_t ctx_of[NDEV];                 /* a device's context handle, if not 0x10 + dev */
    void *last_ctx_ev;                      /* the event of the last context-wide record */
} fk;

/* A fresh fence state (forgetting each device also ends its blindness). */
static void fake_reset(int ctx_wide)
{
    for (int d = 0; d < NDEV; d++)
        pc_fence_forget_device(d);
    pc_fence_forget_all();
    memset(&fk, 0, sizeof fk);
    fk.ctx_wide = ctx_wide;
    pc_fence_broken = 0;
}

static int sidx(void *s)
{
    uintptr_t v = (uintptr_t)s;
    return v >= 0x100 && v < 0x100 + NSTREAM ? (int)(v - 0x100) : -1;
}

/* Work on stream i (-1: the legacy stream of the current device). */
static void submit(int i)
{
    int d = i < 0 ? fk.cur : fk.sdev[i];
    unsigned long n = ++fk.submitted[d];
    if (i < 0)
        fk.legacy_last[d] = n;
    else
        fk.last[i] = n;
}

static void complete_all(int d) { fk.completed[d] = fk.submitted[d]; }

/* The number a record on s would wait for: the legacy stream waits for the
 * blocking streams of its device too. */
static unsigned long stream_ticket(void *s)
{
    int i = sidx(s), d = fk.cur;
    unsigned long t;

    if (i >= 0)
        return fk.last[i];
    t = fk.legacy_last[d];
    for (int k = 0; k < NSTREAM; k++)
        if (fk.sdev[k] == d && !fk.nonblocking[k] && fk.last[k] > t)
            t = fk.last[k];
    return t;
}

static int f_get_device(int *dev) { fk.get_devices++; *dev = fk.cur; return 0; }
static int f_set_device(int dev) { fk.set_devices++; if (dev < 0 || dev >= NDEV) return 101; fk.cur = dev; return 0; }
static int f_context_ok(void) { fk.context_ok_calls++; return !fk.broken[fk.cur]; }
static int f_ctx_wide(void) { return fk.ctx_wide; }
static void *f_ctx_current(void) { return (void *)(fk.ctx_of[fk.cur] ? fk.ctx_of[fk.cur] : (uintptr_t)(0x10 + fk.cur)); }

static int f_ctx_record(void *ctx, void *ev)
{
    struct fake_ev *e = ev;
    int d = (int)((uintptr_t)ctx - 0x10);

    fk.ctx_records++;
    fk.last_ctx_ev = ev;
    if (fk.broken[d])
        return fk.broken[d];
    if (fk.ctx_refuse)
        return 801;
    e->dev = d;
    e->ticket = fk.submitted[d];
    return 0;
}

static int f_event_create(void **ev)
{
    struct fake_ev *e;

    fk.event_creates++;
    if (fk.broken[fk.cur])
        return fk.broken[fk.cur];
    e = calloc(1, sizeof *e);
    e->dev = fk.cur;
    *ev = e;
    return 0;
}

static int f_event_record(void *ev, void *s)
{
    struct fake_ev *e = ev;

    fk.event_records++;
    if (sidx(s) >= 0)
        fk.records_on[sidx(s)]++;
    if (fk.broken[fk.cur])
        return fk.broken[fk.cur];
    e->dev = fk.cur;
    e->ticket = stream_ticket(s);
    return 0;
}

static int f_event_query(void *ev, int *err)
{
    struct fake_ev *e = ev;

    if (fk.capture_refuses)
        return PC_FQ_REFUSED;
    if (fk.query_error || fk.broken[e->dev]) {
        *err = fk.query_error ? fk.query_error : fk.broken[e->dev];
        return PC_FQ_ERROR;
    }
    return fk.completed[e->dev] >= e->ticket ? PC_FQ_DONE : PC_FQ_PENDING;
}

static int f_stream_query(void *s)
{
    if (sidx(s) >= 0)
        fk.queries_of[sidx(s)]++;
    if (fk.capture_refuses)
        return PC_FQ_REFUSED;
    if (fk.query_error || fk.broken[fk.cur])
        return PC_FQ_ERROR;
    return fk.completed[fk.cur] >= stream_ticket(s) ? PC_FQ_DONE : PC_FQ_PENDING;
}

static int f_stream_probe(void *s, int *nonblocking, int *dev)
{
    int i = sidx(s);
    if (i < 0)
        return -1;
    *nonblocking = fk.nonblocking[i];
    *dev = fk.sdev[i];
    return 0;
}

static int f_blind_all(void) { return fk.blind_all; }

static const struct pc_fence_ops fake_ops = {
    .get_device = f_get_device, .set_device = f_set_device, .context_ok = f_context_ok,
    .ctx_wide = f_ctx_wide, .ctx_current = f_ctx_current, .ctx_record = f_ctx_record,
    .event_create = f_event_create, .event_record = f_event_record, .event_query = f_event_query,
    .stream_query = f_stream_query, .stream_probe = f_stream_probe, .blind_all = f_blind_all,
};

/* A stream the program created on device d. */
static void created(int i, int d, int nonblocking)
{
    int cur = fk.cur;
    fk.sdev[i] = d;
    fk.nonblocking[i] = nonblocking;
    fk.cur = d;
    pc_fence_stream_created(STREAM(i), nonblocking);
    fk.cur = cur;
}

static int record(uint64_t *seq, int *busy)
{
    return pc_fence_record(seq, busy);
}

static void test_idle_and_busy(int ctx_wide)
{
    const char *m = ctx_wide ? "context" : "streams";
    uint64_t s1, s2;
    int busy;

    fake_reset(ctx_wide);
    created(0, 0, 1);
    is_int(record(&s1, &busy), 0, "%s: a fence on the idle device", m);
    ok(s1 == 0 && !busy, "%s: ... waits for nothing (seq %lu, busy %d)", m, (unsigned long)s1, busy);
    submit(0);
    is_int(record(&s1, &busy), 0, "%s: a fence with work in flight", m);
    ok(s1 > 0 && busy, "%s: ... waits for it", m);
    ok(!pc_fence_poll(s1), "%s: ... and is pending while the work runs", m);
    submit(-1);
    is_int(record(&s2, &busy), 0, "%s: a second fence", m);
    ok(s2 > s1, "%s: ... numbered after the first", m);
    complete_all(0);
    ok(pc_fence_poll(s2), "%s: complete once the work is", m);
    ok(pc_fence_known(s1), "%s: ... and the earlier fence is known complete without asking", m);
    ok(pc_fence_idle(), "%s: every fence complete: idle", m);
}

/* A stream pincache never saw created: a context-wide fence covers it; a
 * fence made stream by stream covers it only through the legacy stream
 * (blocking), so a non-blocking one makes the device blind, and then no
 * fence can be had there. */
static void test_unseen_streams(void)
{
    uint64_t seq;
    int busy;

    fake_reset(1);
    fk.nonblocking[1] = 1;
    submit(1);
    is_int(record(&seq, &busy), 0, "context: a fence with an unseen stream busy");
    ok(seq > 0 && !pc_fence_poll(seq), "context: ... waits for the unseen stream's work");
    complete_all(0);
    ok(pc_fence_poll(seq), "context: ... and completes with it");

    fake_reset(0);
    fk.nonblocking[1] = 1;
    pc_fence_stream_seen(STREAM(1));
    is_int(record(&seq, &busy), -1, "streams: an unseen non-blocking stream: no fence on its device");
    fake_reset(0);
    fk.nonblocking[2] = 0;
    pc_fence_stream_seen(STREAM(2));
    submit(2);
    is_int(record(&seq, &busy), 0, "streams: an unseen blocking stream is covered by the legacy stream's event");
    ok(seq > 0 && !pc_fence_poll(seq), "streams: ... and waited for");
    fake_reset(0);
    fk.blind_all = 1;
    is_int(record(&seq, &busy), -1, "streams: a cudart pincache cannot see into: no fence");
    fake_reset(1);
    fk.blind_all = 1;
    is_int(record(&seq, &busy), 0, "context: ... the context-wide fence does not care");
}

/* Stream by stream: a non-blocking stream gets no event, idle or busy (a
 * busy one is watched: test_watch). */
static void test_per_stream_events(void)
{
    uint64_t seq;
    int busy;

    fake_reset(0);
    created(0, 0, 1);
    created(1, 0, 1);
    created(2, 0, 0);
    is_int(record(&seq, &busy), 0, "streams: idle device");
    is_int(fk.event_records, 1, "streams: ... one event, on the legacy stream");
    submit(1);
    fk.event_records = 0;
    is_int(record(&seq, &busy), 0, "streams: one non-blocking stream busy");
    is_int(fk.event_records, 1, "streams: ... the legacy stream's event only");
    is_int(fk.records_on[1], 0, "streams: ... none on the busy stream");
    submit(2);
    complete_all(0);
    fk.submitted[0]++;          /* blocking stream 2's work, still running */
    fk.last[2] = fk.submitted[0];
    is_int(record(&seq, &busy), 0, "streams: a blocking stream busy");
    ok(seq > 0 && !pc_fence_poll(seq), "streams: ... covered by the legacy stream's event");
}

/* Work on device 1 while device 0 is current: covered, and the current
 * device is the caller's again afterwards (the fuzzer's
 * dev1-free-not-fenced case). */
static void test_other_device(int ctx_wide)
{
    const char *m = ctx_wide ? "context" : "streams";
    uint64_t seq;
    int busy;

    fake_reset(ctx_wide);
    created(0, 1, 1);
    pc_fence_device_used(1);
    fk.cur = 1;
    submit(0);
    fk.cur = 0;
    is_int(record(&seq, &busy), 0, "%s: work on device 1, device 0 current", m);
    ok(seq > 0 && busy && !pc_fence_poll(seq), "%s: ... the fence waits for device 1", m);
    is_int(fk.cur, 0, "%s: ... and device 0 is current again", m);
    complete_all(1);
    ok(pc_fence_poll(seq), "%s: ... complete with device 1's work", m);
    ok(pc_fence_busy_now() == 0, "%s: nothing in flight now", m);
    fk.cur = 1;
    submit(0);
    fk.cur = 0;
    ok(pc_fence_busy_now() == 1, "%s: busy_now sees device 1's stream", m);
    is_int(fk.cur, 0, "%s: ... and leaves device 0 current", m);
}

/* A stream destroyed while busy stays covered (stream by stream). */
static void test_destroyed_stream(void)
{
    uint64_t seq;
    int busy;

    fake_reset(0);
    created(3, 0, 1);
    submit(3);
    pc_fence_stream_destroying(STREAM(3));
    is_int(record(&seq, &busy), 0, "streams: a busy stream destroyed");
    ok(seq > 0 && !pc_fence_poll(seq), "streams: ... its work still holds the fence");
    complete_all(0);
    ok(pc_fence_poll(seq), "streams: ... until it completes");
}

/* A kernel fault broke the context: no fence, no new event, nothing that
 * would disable caching; stream by stream, the question comes before any
 * record. */
static void test_broken_context(void)
{
    uint64_t seq;
    int busy;

    fake_reset(1);
    submit(-1);
    complete_all(0);
    record(&seq, &busy);         /* an event in the pool */
    fk.broken[0] = 719;
    fk.context_ok_calls = 0;
    is_int(record(&seq, &busy), -1, "context: broken context: no fence");
    ok(!pc_fence_broken, "context: ... caching is not disabled for good");
    is_int(fk.event_records, 0, "context: ... no fallback to events on streams");
    ok(fk.context_ok_calls == 1, "context: ... the question asked once, after the record failed (%d)",
       fk.context_ok_calls);
    fake_reset(1);
    fk.broken[0] = 700;
    is_int(record(&seq, &busy), -1, "context: broken before any event was made: no fence");
    is_int(fk.event_creates, 0, "context: ... and no event made (the runtime's refusal would set the last error)");
    ok(!pc_fence_broken, "context: ... caching not disabled");

    fake_reset(0);
    fk.broken[0] = 719;
    is_int(record(&seq, &busy), -1, "streams: broken context: no fence");
    is_int(fk.event_records + fk.event_creates, 0, "streams: ... asked before any record or new event");
    fake_reset(1);
    record(&seq, &busy);         /* makes the pool's event (asking first) */
    fk.context_ok_calls = 0;
    record(&seq, &busy);
    is_int(fk.context_ok_calls, 0, "context: a healthy free with an event in the pool does not ask");
}

/* Refusals: the context-wide record refused (not broken) falls back to
 * streams; a query refused by a capture is pending; a failed query counts
 * as complete and disables caching; no fence during a capture. */
static void test_refusals(void)
{
    uint64_t seq;
    int busy;

    fake_reset(1);
    fk.ctx_refuse = 1;
    created(0, 0, 1);
    submit(-1);
    is_int(record(&seq, &busy), 0, "context refused: a fence all the same");
    ok(fk.event_records == 1 && seq > 0, "context refused: ... made stream by stream (%d events)", fk.event_records);
    fk.capture_refuses = 1;
    ok(!pc_fence_poll(seq), "a query refused by a capture: still pending");
    ok(!pc_fence_broken, "... and nothing disabled");
    fk.capture_refuses = 0;
    fk.query_error = 999;
    ok(pc_fence_poll(seq), "a failed query: complete (nothing more will run)");
    ok(pc_fence_broken, "... and caching disabled");
    pc_fence_broken = 0;

    fake_reset(1);
    pc_fence_capture_begin();
    is_int(pc_fence_capturing(), 1, "a capture under way");
    is_int(record(&seq, &busy), -1, "no fence during a capture");
    pc_fence_capture_end();
    is_int(record(&seq, &busy), 0, "a fence again after it");
}

/* A reset of device 1 forgets its events and streams, not device 0's. */
static void test_forget_device(void)
{
    uint64_t seq;
    int busy;

    fake_reset(1);
    pc_fence_device_used(1);
    submit(-1);
    fk.cur = 1;
    submit(-1);
    fk.cur = 0;
    is_int(record(&seq, &busy), 0, "work on both devices: one fence");
    pc_fence_forget_device(1);
    complete_all(0);
    ok(pc_fence_poll(seq), "device 1 reset: the fence waits only for device 0");
    fake_reset(0);
    created(0, 1, 1);
    pc_fence_device_used(1);
    fk.cur = 1;
    submit(0);
    fk.cur = 0;
    pc_fence_forget_device(1);
    ok(pc_fence_busy_now() == 0, "device 1 reset: its streams are forgotten");
}

/* The current device is learned once per context: asked again only when
 * another context is current, or after a context went (a destroyed
 * context's handle may come back for another device). */
static void test_current_device(void)
{
    int d = -1;

    fake_reset(1);
    pc_fence_contexts_changed();
    is_int(pc_fence_current_device(&d), 0, "current device: asked");
    is_int(d, 0, "... device 0");
    is_int(pc_fence_current_device(&d), 0, "asked again with the same context current");
    is_int(fk.get_devices, 1, "... the runtime was asked once");
    fk.cur = 1;
    pc_fence_current_device(&d);
    ok(d == 1 && fk.get_devices == 2, "another context current: the runtime asked, device 1");
    /* Device 1's context (0x11, just learned) is destroyed, and its handle
     * comes back for a new context of device 0. */
    fk.ctx_of[0] = 0x11;
    fk.cur = 0;
    pc_fence_contexts_changed();         /* the destroy, which pincache sees */
    pc_fence_current_device(&d);
    ok(d == 0 && fk.get_devices == 3, "a handle destroyed and made again for another device: asked again, that device");
    fk.ctx_of[0] = 0;
}

static void test_wait(void)
{
    uint64_t seq;
    int busy;

    fake_reset(1);
    submit(-1);
    record(&seq, &busy);
    ok(!pc_fence_wait(seq, 1000000), "a wait for work that never ends gives up after its time");
    complete_all(0);
    ok(pc_fence_wait(seq, 1000000), "... and returns at once when it has ended");
}

static void *one_free(void *arg)
{
    uint64_t seq;
    int busy;

    *(int *)arg = record(&seq, &busy);
    return NULL;
}

/* The lock-free path of a free (fence_fast.c): the thread's own event,
 * reused while idle, never used again once its context is forgotten, made
 * a fence while pending, and given back when the thread exits. */
static void test_own_event(void)
{
    uint64_t seq;
    int busy, rc = -1;
    void *first, *pending;
    pthread_t t;

    fake_reset(1);
    record(&seq, &busy);
    first = fk.last_ctx_ev;
    for (int i = 0; i < 5; i++)
        record(&seq, &busy);
    ok(fk.event_creates == 1 && fk.last_ctx_ev == first && seq == 0,
       "own event: an idle free records the thread's one event again (%d made)", fk.event_creates);
    pc_fence_forget_device(0);
    record(&seq, &busy);
    ok(fk.last_ctx_ev != first && fk.event_creates == 2,
       "own event: after its device is forgotten (a reset) the old event is never recorded again");
    submit(-1);
    is_int(record(&seq, &busy), 0, "own event: a free with work in flight is fenced");
    ok(busy && seq > 0, "... with a fence to wait for (busy %d, seq %llu)", busy, (unsigned long long)seq);
    pending = fk.last_ctx_ev;
    ok(!pc_fence_poll(seq), "... not complete while the work runs");
    record(&seq, &busy);
    ok(fk.last_ctx_ev != pending, "... and the next free records another event, not the pending one");
    complete_all(0);
    ok(pc_fence_poll(seq), "... complete once the work is");

    fake_reset(1);
    pthread_create(&t, NULL, one_free, &rc);
    pthread_join(t, NULL);
    is_int(rc, 0, "own event: a thread's free fenced");
    pthread_create(&t, NULL, one_free, &rc);
    pthread_join(t, NULL);
    is_int(fk.event_creates, 1, "own event: a thread's exit gives its event back for the next thread");
}

/* Stream by stream, a busy non-blocking stream is watched, never recorded
 * on (an event behind the program's work would make a cudaStreamQuery
 * right after the program synchronized the stream answer not ready): the
 * fence is complete once a query finds the stream idle. */
static void test_watch(void)
{
    uint64_t s1, s2, s3;
    int busy;

    fake_reset(0);
    created(0, 0, 1);
    created(1, 0, 1);
    submit(0);
    is_int(record(&s1, &busy), 0, "watch: a free with a non-blocking stream busy");
    ok(s1 > 0 && busy, "watch: ... a fence to wait for");
    is_int(fk.records_on[0], 0, "watch: ... and no event recorded on the busy stream");
    ok(!pc_fence_poll(s1), "watch: pending while the stream's work runs");
    submit(0);                  /* more work: the stream stays busy */
    complete_all(0);
    fk.submitted[0]++;
    fk.last[0] = fk.submitted[0];
    ok(!pc_fence_poll(s1), "watch: still pending while the stream has any work (a watch cannot tell which)");
    complete_all(0);
    ok(pc_fence_poll(s1), "watch: complete once the stream is idle");
    is_int(fk.records_on[0], 0, "watch: ... never an event on it");

    submit(1);
    record(&s1, &busy);
    submit(1);
    record(&s2, &busy);
    complete_all(0);
    record(&s3, &busy);         /* finds stream 1 idle */
    fk.queries_of[1] = 0;
    ok(pc_fence_poll(s2) && fk.queries_of[1] == 0,
       "watch: a later free that found the stream idle completes the earlier watches unasked (%d queries)",
       fk.queries_of[1]);

    /* A capture under way: the stream is never asked (the question would
     * break the capture); the fence waits for the capture's end. */
    submit(0);
    record(&s1, &busy);
    complete_all(0);
    pc_fence_capture_begin();
    fk.queries_of[0] = 0;
    ok(!pc_fence_poll(s1) && fk.queries_of[0] == 0, "watch: during a capture the stream is not asked");
    pc_fence_capture_end();
    ok(pc_fence_poll(s1), "watch: ... and asked again after it");

    /* A failed query: complete, and caching ends (as for an event). */
    submit(0);
    record(&s1, &busy);
    fk.query_error = 999;
    ok(pc_fence_poll(s1) && pc_fence_broken, "watch: a failed query: complete, caching disabled");
    fk.query_error = 0;
    pc_fence_broken = 0;
}

/* A watched stream destroyed: its handle is never asked again; work still
 * queued on it holds the watching fence through the event recorded at the
 * destroy; an idle one completes it. */
static void test_watch_destroyed(void)
{
    uint64_t s1, s2;
    int busy;

    fake_reset(0);
    created(2, 0, 1);
    created(3, 0, 1);
    submit(2);
    record(&s1, &busy);
    pc_fence_stream_destroying(STREAM(2));
    fk.queries_of[2] = 0;
    ok(!pc_fence_poll(s1), "watch destroyed busy: the fence still waits");
    is_int(fk.queries_of[2], 0, "watch destroyed busy: ... its handle is not asked");
    complete_all(0);
    ok(pc_fence_poll(s1), "watch destroyed busy: ... complete with the destroyed stream's work");
    is_int(fk.queries_of[2], 0, "watch destroyed busy: ... still never asked");

    submit(3);
    record(&s2, &busy);
    complete_all(0);
    pc_fence_stream_destroying(STREAM(3));
    fk.queries_of[3] = 0;
    ok(pc_fence_poll(s2) && fk.queries_of[3] == 0, "watch destroyed idle: complete, unasked");
}

/* A watch on device 1 is asked with device 1 current, and device 0 is
 * current again after; a reset of device 1 drops it. */
static void test_watch_other_device(void)
{
    uint64_t seq;
    int busy;

    fake_reset(0);
    created(4, 1, 1);
    pc_fence_device_used(1);
    fk.cur = 1;
    submit(4);
    fk.cur = 0;
    record(&seq, &busy);
    ok(seq > 0 && !pc_fence_poll(seq), "watch on device 1: pending while its work runs");
    is_int(fk.cur, 0, "watch on device 1: ... device 0 current again after the poll");
    complete_all(1);
    ok(pc_fence_poll(seq), "watch on device 1: complete when device 1's stream is idle");
    fk.cur = 1;
    submit(4);
    fk.cur = 0;
    record(&seq, &busy);
    pc_fence_forget_device(1);
    ok(pc_fence_poll(seq), "watch on device 1: device 1 reset: the fence waits no more");
}

int main(void)
{
    pc_fence_set_ops(&fake_ops);
    test_idle_and_busy(1);
    test_idle_and_busy(0);
    test_unseen_streams();
    test_per_stream_events();
    test_other_device(1);
    test_other_device(0);
    test_destroyed_stream();
    test_broken_context();
    test_refusals();
    test_forget_device();
    test_current_device();
    test_wait();
    test_own_event();
    test_watch();
    test_watch_destroyed();
    test_watch_other_device();
    return done_testing();
}
