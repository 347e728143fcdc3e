/* test_trace - the trace ring alone (no CUDA): events from several threads
 * all arrive, the file is valid Chrome Trace Event JSON with the fields
 * Perfetto needs, synchronizing calls are highlighted, a full ring keeps the
 * latest events and says how many it dropped, and writing while other
 * threads still append is safe (run under TSan). */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef HAVE_JANSSON
#include <jansson.h>
#endif
#include "diag/diag.h"
#include "util/stats.h"
#include "diag/trace.h"
#include "tap.h"

struct pc_state pc_state;   /* diag.h's inline helpers name it; unused here */

#define THREADS 4
#define PER_THREAD 128   /* 4 x 128: the ring is exactly full */

static volatile int stop;

static void add(int api, unsigned notes, uint64_t t0, uint64_t bytes)
{
    struct pc_call c = { .t0 = t0, .bytes = bytes, .api = api, .copy = -1, .notes = notes };

    if (api == PC_API_memcpy)
        c.copy = PC_COPY_h2d_pageable;
    pc_trace_add(&c, t0 + 1500, 1);
}

static void *writer(void *arg)
{
    long id = (long)arg;

    for (int i = 0; i < PER_THREAD; i++)
        add((int)((id + i) % PC_API_COUNT), (i % 10 == 0) ? PC_NOTE_BUSY : PC_NOTE_HIT,
            1000000 + (uint64_t)i * 1000, (uint64_t)i);
    return NULL;
}

static void *spinner(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&stop, __ATOMIC_RELAXED))
        add(PC_API_free_host, PC_NOTE_HIT, 5000, 64);
    return NULL;
}

static char *tmpfile_path(const char *name)
{
    static char path[4][256];
    static int k;
    const char *dir = getenv("TMPDIR");

    snprintf(path[k & 3], sizeof path[0], "%s/pc_trace_%d_%s", dir && *dir ? dir : "/tmp",
             (int)getpid(), name);
    return path[k++ & 3];
}

static int emit_to(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644), r;

    if (fd < 0)
        return -1;
    r = pc_trace_emit_fd(fd, 4242, 1000000);
    close(fd);
    return r;
}

#ifdef HAVE_JANSSON
/* Complete events, their well-formedness, sync-highlighted ones. */
static void inspect(const char *path, long *x, long *bad, long *sync, long *terrible, long *dropped)
{
    json_error_t err;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &err), *evs, *e;
    size_t i;

    *x = *bad = *sync = *terrible = *dropped = -1;
    if (!ok(j != NULL, "%s is valid JSON", path)) {
        diag("line %d: %s", err.line, err.text);
        return;
    }
    *x = *bad = *sync = *terrible = 0;
    evs = json_object_get(j, "traceEvents");
    json_array_foreach(evs, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        json_t *args = json_object_get(e, "args");
        if (ph && !strcmp(ph, "M"))
            continue;
        (*x)++;
        if (!ph || strcmp(ph, "X") || !json_string_value(json_object_get(e, "name")) ||
            json_integer_value(json_object_get(e, "pid")) != 4242 ||
            !json_is_integer(json_object_get(e, "tid")) || !json_is_number(json_object_get(e, "ts")) ||
            json_number_value(json_object_get(e, "dur")) != 1.5 ||
            !json_is_integer(json_object_get(args, "bytes")))
            (*bad)++;
        if (json_is_true(json_object_get(args, "synced")))
            (*sync)++;
        if (json_string_value(json_object_get(e, "cname")) &&
            !strcmp(json_string_value(json_object_get(e, "cname")), "terrible") &&
            !strcmp(json_string_value(json_object_get(e, "cat")), "sync"))
            (*terrible)++;
    }
    *dropped = (long)json_integer_value(json_object_get(json_object_get(j, "otherData"), "dropped"));
    json_decref(j);
}
#endif

int main(void)
{
    pthread_t th[THREADS], spin;
    const char *p1 = tmpfile_path("all.json"), *p2 = tmpfile_path("full.json");
    const char *p3 = tmpfile_path("busy.json");
    long x, bad, sync, terrible, dropped;

    is_int(pc_trace_emit_fd(1, 1, 0), -EINVAL, "no ring, no trace");
    is_int(pc_trace_init_n(THREADS * PER_THREAD), 0, "ring allocated");
    for (long i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, writer, (void *)i);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    is_int(PC_STAT_GET(trace_events), THREADS * PER_THREAD, "every event counted");
    is_int(PC_STAT_GET(trace_dropped), 0, "none dropped");
    is_int(emit_to(p1), 0, "trace written");
#ifdef HAVE_JANSSON
    inspect(p1, &x, &bad, &sync, &terrible, &dropped);
    is_int(x, THREADS * PER_THREAD, "every event is in the file");
    is_int(bad, 0, "each has name, ph X, pid, tid, ts, dur and args.bytes");
    is_int(sync, THREADS * ((PER_THREAD + 9) / 10), "synchronizing calls say synced");
    is_int(terrible, sync, "... and are highlighted (cat sync, cname terrible)");
    is_int(dropped, 0, "otherData: nothing dropped");
#else
    skip(6, "no jansson");
#endif

    /* The ring is full: the latest events stay, the rest are counted. */
    for (int i = 0; i < 100; i++)
        add(PC_API_memcpy, 0, 9000000, 4096);
    is_int(PC_STAT_GET(trace_dropped), 100, "overwritten events counted");
    is_int(emit_to(p2), 0, "full ring written");
#ifdef HAVE_JANSSON
    inspect(p2, &x, &bad, &sync, &terrible, &dropped);
    is_int(x, THREADS * PER_THREAD, "a full ring writes its capacity");
    is_int(dropped, 100, "otherData.dropped says how many are missing");
#else
    skip(3, "no jansson");
#endif

    /* Written while another thread keeps appending (exit from one thread
     * while others still run). */
    pthread_create(&spin, NULL, spinner, NULL);
    usleep(2000);
    is_int(emit_to(p3), 0, "written while another thread appends");
    __atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
    pthread_join(spin, NULL);
#ifdef HAVE_JANSSON
    inspect(p3, &x, &bad, &sync, &terrible, &dropped);
    is_int(bad, 0, "... every event in it well-formed");
#else
    skip(2, "no jansson");
#endif

    pc_trace_after_fork_child();
    is_int(emit_to(p2), 0, "after fork: an empty timeline");
#ifdef HAVE_JANSSON
    inspect(p2, &x, &bad, &sync, &terrible, &dropped);
    is_int(x, 0, "... with no event of the parent");
#else
    skip(2, "no jansson");
#endif
    unlink(p1);
    unlink(p2);
    unlink(p3);
    return done_testing();
}
