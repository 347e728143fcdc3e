/* test_report.c - the exit report: golden text and JSON, JSON validity, the
 * two renderings agreeing, path templates and the PINCACHE_REPORT switch.
 *
 * Goldens live in tests/unit/golden/; after a deliberate change rewrite them
 * with 'PC_UPDATE_GOLDEN=1 make check' and review the diff. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef HAVE_JANSSON
#include <jansson.h>
#endif
#include "util/emit.h"
#include "util/log.h"
#include "util/options.h"
#include "report/output.h"
#include "report/report.h"
#include "util/stats.h"
#include "tap.h"

static char tmpdir[256];
static const char *srcdir;

/* ---- helpers ------------------------------------------------------------ */

static size_t slurp(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "rb");
    size_t len = 0;

    buf[0] = '\0';
    if (!f)
        return 0;
    len = fread(buf, 1, n - 1, f);
    buf[len] = '\0';
    fclose(f);
    return len;
}

static int spit(const char *path, const char *s)
{
    FILE *f = fopen(path, "wb");

    if (!f)
        return -1;
    fputs(s, f);
    return fclose(f);
}

/* The version changes with every release; goldens say @VERSION@. */
static void normalise_version(char *s)
{
    char pat[64];
    char *p;

    snprintf(pat, sizeof pat, "\"pincache_version\": \"%s\"", PACKAGE_VERSION);
    p = strstr(s, pat);
    if (p) {
        const char *rep = "\"pincache_version\": \"@VERSION@\"";
        memmove(p + strlen(rep), p + strlen(pat), strlen(p + strlen(pat)) + 1);
        memcpy(p, rep, strlen(rep));
    }
}

static void golden(const char *name, const char *actual_path)
{
    static char got[1 << 16], want[1 << 16];
    char gpath[1024];
    int same;

    snprintf(gpath, sizeof gpath, "%s/tests/unit/golden/%s", srcdir, name);
    slurp(actual_path, got, sizeof got);
    normalise_version(got);
    slurp(gpath, want, sizeof want);
    same = strcmp(got, want) == 0;
    if (!same && getenv("PC_UPDATE_GOLDEN")) {
        if (spit(gpath, got) == 0) {
            diag("rewrote %s", gpath);
            same = 1;
        }
    }
    if (!ok(same, "%s matches its golden file", name)) {
        const char *g = got, *w = want;
        int line = 1;
        while (*g && *g == *w) {
            if (*g == '\n')
                line++;
            g++;
            w++;
        }
        diag("  first difference on line %d; output kept in %s", line, actual_path);
        diag("  got:  %.*s", (int)strcspn(g, "\n"), g);
        diag("  want: %.*s", (int)strcspn(w, "\n"), w);
        diag("  (after a deliberate change: PC_UPDATE_GOLDEN=1 make check)");
    }
}

/* One API row: nfast calls of fast_ns and nslow of slow_ns. */
static struct pc_api_stat *fill_api(struct pc_stats *s, int id, uint64_t nfast, uint64_t fast_ns,
                                    uint64_t nslow, uint64_t slow_ns, uint64_t bytes)
{
    struct pc_api_stat *a = &s->api[id];

    memset(a, 0, sizeof *a);
    a->calls = nfast + nslow;
    a->bytes = bytes;
    a->ns = nfast * fast_ns + nslow * slow_ns;
    a->max_ns = nslow ? slow_ns : fast_ns;
    a->hist[pc_hist_bucket(fast_ns)] += nfast;
    a->hist[pc_hist_bucket(slow_ns)] += nslow;
    a->real_calls = a->calls;
    return a;
}

static void fill_copy(struct pc_stats *s, int id, uint64_t calls, uint64_t bytes, uint64_t ns,
                      uint64_t timed_bytes, uint64_t timed_ns)
{
    struct pc_copy_stat *c = &s->copy[id];

    c->calls = calls;
    c->bytes = bytes;
    c->ns = ns;
    c->timed_bytes = timed_bytes;
    c->timed_ns = timed_ns;
}

static void fill_stats(struct pc_stats *s, int observe)
{
    struct pc_api_stat *a;
    unsigned i;

    /* Distinct values everywhere first, so a misplaced field shows. */
    memset(s, 0, sizeof *s);
    for (i = 0; i < pc_stat_ndescs; i++) {
        const struct pc_stat_desc *d = &pc_stat_descs[i];
        *(uint64_t *)((char *)s + d->offset) = 100 + 11 * i;
        if (d->peak_name)
            *(int64_t *)((char *)s + d->peak_offset) = 1000 + 13 * i;
    }
    /* A memory limit's trims have their own hint (test_hints). */
    s->trim_mem_blocks = 0;
    s->trim_mem_bytes = 0;
    if (observe) {
        s->alloc_calls = 500;
        s->alloc_bytes = 2000ull << 20;
        s->alloc_hits = 0;
        s->alloc_misses = 0;
        s->alloc_passthrough = 500;
        s->free_calls = 480;
        s->would_sync = 470;
        s->would_sync_ns = 3210000000ull;
        s->real_alloc_calls = 0;
        s->real_free_calls = 0;
        s->trim_blocks = 0;
        s->trim_cap_blocks = 0;
        s->trim_cap_bytes = 0;
        s->memcpy_calls = 60;
        s->memcpy_bytes = 420ull << 20;
        s->register_calls = 0;
        s->unregister_calls = 0;
        s->live_bytes_peak = 1500ll << 20;
        s->requested_bytes_peak = 1500ll << 20;
        s->cached_bytes_peak = 0;
        s->stage_h2d_calls = 0;
        s->stage_d2h_calls = 0;
        s->stage_h2d_driver_calls = 40;
        s->stage_h2d_driver_bytes = 400ull << 20;
        s->stage_h2d_driver_ns = 45000000;
        s->stage_d2h_driver_calls = 0;
        s->stage_d2h_driver_bytes = 0;
        s->stage_d2h_driver_ns = 0;
        s->predict_hits = 490;
        s->predict_hit_ns = 2100000000ull;
        s->predict_kept = 480;
        s->predict_kept_ns = 3300000000ull;
        s->registered_bytes_peak = 0;
        s->forks_registered = 0;
        s->fork_registered_bytes = 0;
        a = fill_api(s, PC_API_host_alloc, 490, 4000000, 10, 90000000, 2000ull << 20);
        a = fill_api(s, PC_API_free_host, 10, 200000, 470, 6800000, 1500ull << 20);
        a->synced = 470;
        a->stall_ns = 470 * 6800000ull;
        a = fill_api(s, PC_API_memcpy_async, 60, 1125000, 0, 0, 400ull << 20);
        a->synced = 30;
        a->stall_ns = 30 * 1125000ull;
        fill_copy(s, PC_COPY_h2d_pageable, 40, 400ull << 20, 45000000, 0, 0);
        fill_copy(s, PC_COPY_d2h_pageable, 20, 20ull << 20, 22500000, 20ull << 20, 22500000);
        return;
    }
    s->forks_registered = 0;      /* no fork copied registered memory */
    s->fork_registered_bytes = 0;
    s->alloc_calls = 1000;
    s->alloc_bytes = 1000ull << 20;
    s->alloc_hits = 995;
    s->alloc_misses = 5;
    s->alloc_passthrough = 0;
    s->alloc_fence_waits = 0;
    s->free_calls = 1000;
    s->free_cached = 995;
    s->syncs_avoided = 990;
    s->free_passthrough = 3;
    s->free_invalid = 2;
    s->real_alloc_calls = 5;
    s->real_alloc_bytes = 5ull << 20;
    s->real_alloc_ns = 25123456;
    s->real_alloc_fail = 0;
    s->real_free_calls = 3;
    s->real_free_bytes = 812ull << 20;
    s->real_free_ns = 2100000;
    s->trim_blocks = 4;
    s->trim_cap_blocks = 4;
    s->trim_cap_bytes = 812ull << 20;
    s->register_calls = 0;
    s->unregister_calls = 0;
    s->memcpy_calls = 12345;
    s->memcpy_bytes = 7ull << 30;
    s->memcpy_cached_src = 12000;
    s->live_bytes_peak = 1ll << 30;
    s->requested_bytes_peak = 992ll << 20;
    s->cached_bytes_peak = 4ll << 30;
    s->stage_h2d_calls = 512;
    s->stage_h2d_bytes = 1331ull << 20;
    s->stage_h2d_ns = 55000000;
    s->stage_d2h_calls = 20;
    s->stage_d2h_bytes = 80ull << 20;
    s->stage_d2h_ns = 5500000;
    s->stage_h2d_driver_calls = 3;
    s->stage_h2d_driver_bytes = 12ull << 20;
    s->stage_h2d_driver_ns = 1300000;
    s->stage_d2h_driver_calls = 0;
    s->stage_d2h_driver_bytes = 0;
    s->stage_d2h_driver_ns = 0;
    s->registered_bytes_peak = 0;
    a = fill_api(s, PC_API_host_alloc, 695, 900, 5, 5000000, 700ull << 20);
    a->hits = 695;
    a->real_calls = 5;
    a = fill_api(s, PC_API_malloc_host, 300, 1100, 0, 0, 300ull << 20);
    a->hits = 300;
    a->real_calls = 0;
    a = fill_api(s, PC_API_free_host, 995, 1500, 5, 700000, 0);
    a->hits = 995;
    a->real_calls = 5;
    a->sync_avoided = 990;
    a = fill_api(s, PC_API_stream_sync, 1000, 3000, 4000, 300000, 0);
    a->synced = 4000;
    a->stall_ns = 4000 * 300000ull;
    a = fill_api(s, PC_API_free, 0, 0, 3, 4000000, 0);
    a->synced = 3;
    a->stall_ns = 12000000;
    a = fill_api(s, PC_API_memcpy_async, 12000, 2000, 345, 4000000, 7ull << 30);
    fill_copy(s, PC_COPY_h2d_pageable, 515, 1343ull << 20, 56300000, 0, 0);
    fill_copy(s, PC_COPY_h2d_pinned, 11000, 4000ull << 20, 22000000, 0, 0);
    fill_copy(s, PC_COPY_d2h_pinned, 830, 1750ull << 20, 40000000, 1750ull << 20, 40000000);
}

static struct pc_report_info make_info(int mode)
{
    struct pc_report_info in;

    memset(&in, 0, sizeof in);
    in.mode = mode;
    in.pid = 4242;
    in.max_cached = 4ull << 30;
    in.cuda_used = 1;
    in.start_ns = 1000;
    in.end_ns = 1000 + 1500000000ull;
    return in;
}

static int write_report(const char *path, int format, int flags, const struct pc_report_info *in,
                        const struct pc_stats *st, const char *rank, const char *host)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int r;

    if (fd < 0)
        return -errno;
    r = pc_report_emit_fd(fd, format, flags, in, st, rank, host);
    close(fd);
    return r;
}

static void tmp_path(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", tmpdir, name);
}

/* ---- JSON checking ------------------------------------------------------- */

#ifdef HAVE_JANSSON
static json_t *load_json(const char *path)
{
    json_error_t err;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &err);

    if (!j)
        diag("  %s:%d: %s", path, err.line, err.text);
    return j;
}
#endif

/* Parses with jansson, else python3, else skips (returns -1). */
static int json_valid(const char *path)
{
#ifdef HAVE_JANSSON
    json_t *j = load_json(path);
    json_decref(j);
    return j != NULL;
#else
    char cmd[1200];
    if (system("python3 -c 'import json' >/dev/null 2>&1") != 0)
        return -1;
    snprintf(cmd, sizeof cmd, "python3 -m json.tool '%s' >/dev/null", path);
    return system(cmd) == 0;
#endif
}

static void check_json_valid(const char *path, const char *what)
{
    int v = json_valid(path);

    if (v < 0)
        skip(1, "neither jansson nor python3 to parse JSON");
    else
        ok(v == 1, "%s is valid JSON", what);
}

/* ---- tests --------------------------------------------------------------- */

static void check_text_shape(const char *path, const char *what, int max_lines)
{
    static char buf[1 << 16];
    const char *p;
    int lines = 0, prefixed = 0;

    slurp(path, buf, sizeof buf);
    for (p = buf; *p;) {
        const char *nl = strchr(p, '\n');
        lines++;
        if (!strncmp(p, "pincache[4242]: ", 16))
            prefixed++;
        if (!nl)
            break;
        p = nl + 1;
    }
    ok(lines > 0 && lines == prefixed, "%s: every line starts with pincache[4242]: ", what);
    if (max_lines)
        ok(lines <= max_lines, "%s: at most %d lines (%d)", what, max_lines, lines);
}

static void test_golden(void)
{
    struct pc_stats st;
    struct pc_report_info in;
    char path[512];

    fill_stats(&st, 0);
    in = make_info(PC_MODE_CACHE);
    tmp_path(path, sizeof path, "report-cache.txt");
    is_int(write_report(path, PC_REPORT_TEXT, 0, &in, &st, "3", "testhost"), 0, "cache text written");
    golden("report-cache.txt", path);
    check_text_shape(path, "cache text", 15);
    tmp_path(path, sizeof path, "report-cache.json");
    is_int(write_report(path, PC_REPORT_JSON, 0, &in, &st, "3", "testhost"), 0, "cache JSON written");
    golden("report-cache.json", path);
    check_json_valid(path, "cache JSON");

    tmp_path(path, sizeof path, "report-detail.txt");
    write_report(path, PC_REPORT_TEXT, PC_REPORT_DETAIL, &in, &st, NULL, "testhost");
    golden("report-detail.txt", path);
    check_text_shape(path, "detail text", 0);

    fill_stats(&st, 1);
    in = make_info(PC_MODE_OBSERVE);
    in.stage_native = 1u << 1;   /* device 1 reads pageable memory natively */
    tmp_path(path, sizeof path, "report-observe.txt");
    write_report(path, PC_REPORT_TEXT, 0, &in, &st, "0", "testhost");
    golden("report-observe.txt", path);
    check_text_shape(path, "observe text", 15);
    tmp_path(path, sizeof path, "report-observe.json");
    write_report(path, PC_REPORT_JSON, 0, &in, &st, "0", "testhost");
    golden("report-observe.json", path);
    check_json_valid(path, "observe JSON");

    /* Nothing happened at all, in a forked child, after a CUDA error. */
    memset(&st, 0, sizeof st);
    in = make_info(PC_MODE_CACHE);
    in.forked_child = 1;
    in.broken = 1;
    tmp_path(path, sizeof path, "report-empty.txt");
    write_report(path, PC_REPORT_TEXT, 0, &in, &st, NULL, NULL);
    golden("report-empty.txt", path);
    tmp_path(path, sizeof path, "report-empty.json");
    write_report(path, PC_REPORT_JSON, 0, &in, &st, NULL, NULL);
    golden("report-empty.json", path);
    check_json_valid(path, "empty JSON");
}

static void test_recommendations(void)
{
    static char buf[1 << 16];
    struct pc_stats st;
    struct pc_report_info in = make_info(PC_MODE_CACHE);
    char path[512];

    tmp_path(path, sizeof path, "hints.txt");

    fill_stats(&st, 0);
    st.trim_blocks = 0;
    st.trim_cap_blocks = 0;
    write_report(path, PC_REPORT_TEXT, 0, &in, &st, NULL, "h");
    slurp(path, buf, sizeof buf);
    ok(!strstr(buf, "recommendation"), "no trimming, no failures: no recommendation");

    st.trim_mem_blocks = 3;
    st.trim_mem_bytes = 96ull << 20;
    write_report(path, PC_REPORT_TEXT, 0, &in, &st, NULL, "h");
    slurp(path, buf, sizeof buf);
    ok(strstr(buf, "recommendation: a memory limit (cgroup memory.max) came near: the cache released 3 idle "
                   "blocks (96.0 MiB) early") != NULL,
       "idle blocks released near a memory limit: said, with their count and bytes");
    st.trim_mem_blocks = 0;
    st.trim_mem_bytes = 0;

    /* Releases made by the headroom (staying near what the program holds)
     * are by design: the cap was not what released them. */
    fill_stats(&st, 0);
    st.trim_cap_blocks = 0;
    st.trim_cap_bytes = 0;
    write_report(path, PC_REPORT_TEXT, 0, &in, &st, NULL, "h");
    slurp(path, buf, sizeof buf);
    ok(!strstr(buf, "PINCACHE_MAX_CACHED"), "trims by the headroom only: no advice about the cap");

    fill_stats(&st, 0);
    st.cached_bytes_peak = 4ll << 30;
    st.real_free_bytes = 1536ull << 20;
    st.trim_cap_bytes = 1536ull << 20;
    write_report(path, PC_REPORT_TEXT, 0, &in, &st, NULL, "h");
    slurp(path, buf, sizeof buf);
    ok(strstr(buf, "raise PINCACHE_MAX_CACHED to 6G") != NULL,
       "trimmed 1.5G past a 4G cap: raise to 6G (rounded up, parseable)");

    fill_stats(&st, 0);
    st.real_alloc_fail = 2;
    write_report(path, PC_REPORT_TEXT, 0, &in, &st, NULL, "h");
    slurp(path, buf, sizeof buf);
    ok(strstr(buf, "lower PINCACHE_MAX_CACHED (now 4G)") && !strstr(buf, "raise PINCACHE"),
       "failed real allocations: advise a lower cap, not a higher one");

    fill_stats(&st, 0);
    st.alloc_calls = 0;
    st.register_calls = 64;
    write_report(path, PC_REPORT_TEXT, 0, &in, &st, NULL, "h");
    slurp(path, buf, sizeof buf);
    ok(strstr(buf, "cudaHostRegister (64 calls)") != NULL, "cudaHostRegister-only program: say so");
    is_int(count_str(buf, "recommendation: "), 2, "at most two recommendations");

    /* Forks that copied registered memory: the cost at 0.47 ms per MiB, and
     * the ways out; it replaces the cudaHostRegister-only hint. */
    fill_stats(&st, 0);
    st.alloc_calls = 0;
    st.register_calls = 64;
    st.registered_dontfork_bytes_peak = 0;    /* PINCACHE_REGISTER_DONTFORK off */
    st.forks = 8;
    st.forks_registered = 6;
    st.fork_registered_bytes = 96ull << 20;
    write_report(path, PC_REPORT_TEXT, 0, &in, &st, NULL, "h");
    slurp(path, buf, sizeof buf);
    ok(strstr(buf, "fork(): 6 of 8 forks copied registered memory, 96.0 MiB in all") != NULL,
       "forks with registered memory: the summary counts them");
    ok(strstr(buf, "6 forks copied 96.0 MiB of registered memory (about 45.1 ms at an H200's 0.47 ms "
                   "per MiB)") &&
       strstr(buf, "PINCACHE_REGISTER_DONTFORK=1") && strstr(buf, "persistent_workers=True"),
       "... and the recommendation prices them and names the ways out");
    ok(!strstr(buf, "cudaHostRegister (64 calls)"), "... instead of the cudaHostRegister-only hint");

    /* PINCACHE_REGISTER_DONTFORK on (as on the H200, run 18): 5 of 7 forks
     * copied the partial end pages, 40 KiB in all.  Counted in the summary;
     * no recommendation, least of all to set the option that is set. */
    fill_stats(&st, 0);
    st.alloc_calls = 0;
    st.register_calls = 10;
    st.registered_dontfork_bytes_peak = 272ll << 20;
    st.forks = 7;
    st.forks_registered = 5;
    st.fork_registered_bytes = 40960;
    write_report(path, PC_REPORT_TEXT, 0, &in, &st, NULL, "h");
    slurp(path, buf, sizeof buf);
    ok(strstr(buf, "fork(): 5 of 7 forks copied registered memory, 40.0 KiB in all") != NULL &&
       !strstr(buf, "forks copied 40.0 KiB") && !strstr(buf, "set PINCACHE_REGISTER_DONTFORK"),
       "DONTFORK's partial end pages: counted in the summary, no recommendation");
    /* With the option on and still MiBs per fork: no advice to set it. */
    st.fork_registered_bytes = 50ull << 20;
    write_report(path, PC_REPORT_TEXT, 0, &in, &st, NULL, "h");
    slurp(path, buf, sizeof buf);
    ok(strstr(buf, "5 forks copied 50.0 MiB of registered memory") &&
       strstr(buf, "persistent_workers=True") && !strstr(buf, "set PINCACHE_REGISTER_DONTFORK"),
       "DONTFORK on and MiBs copied: recommended, without suggesting the option already set");

    /* Staging slower than the driver: 1.3 GiB in 400 ms against the 12 MiB
     * the driver moved in 1.3 ms (9.7 GB/s): about 256 ms slower, and said. */
    fill_stats(&st, 0);
    st.stage_h2d_ns = 400000000;
    st.stage_d2h_calls = 0, st.stage_d2h_bytes = 0, st.stage_d2h_ns = 0;
    write_report(path, PC_REPORT_TEXT, 0, &in, &st, NULL, "h");
    slurp(path, buf, sizeof buf);
    ok(strstr(buf, "ms slower than at the driver's pageable rate") != NULL && !strstr(buf, "faster than at"),
       "staging slower than the driver: the report says slower, not a saving");

    /* Tiny pageable reads (PyTorch's .item()): their "rate" is latency. */
    fill_stats(&st, 0);
    fill_copy(&st, PC_COPY_d2h_pageable, 459, 1836, 9000000, 1836, 9000000);
    write_report(path, PC_REPORT_TEXT, 0, &in, &st, NULL, "h");
    slurp(path, buf, sizeof buf);
    ok(strstr(buf, "into pageable memory; pinned") != NULL && !strstr(buf, "; pageable 0.0 GB/s"),
       "459 four-byte pageable reads: no pageable rate in the summary, the pinned one stays");
}

#ifdef HAVE_JANSSON
static void test_json_content(void)
{
    struct pc_stats st;
    struct pc_report_info in = make_info(PC_MODE_CACHE);
    char path[512], tpath[512];
    static char text[1 << 16];
    json_t *j, *stats, *sum;
    unsigned i;
    int good = 1;
    size_t k;

    fill_stats(&st, 0);
    tmp_path(path, sizeof path, "content.json");
    tmp_path(tpath, sizeof tpath, "content.txt");
    write_report(path, PC_REPORT_JSON, 0, &in, &st, "3", "testhost");
    write_report(tpath, PC_REPORT_TEXT, 0, &in, &st, "3", "testhost");
    j = load_json(path);
    if (!ok(j != NULL, "JSON loads")) {
        skip(7, "no JSON");
        return;
    }
    is_int(json_integer_value(json_object_get(j, "schema_version")), PC_STATS_SCHEMA_VERSION,
           "schema_version is PC_STATS_SCHEMA_VERSION");
    is_str(json_string_value(json_object_get(j, "pincache_version")), PACKAGE_VERSION,
           "pincache_version is PACKAGE_VERSION");
    stats = json_object_get(j, "stats");
    for (i = 0; i < pc_stat_ndescs; i++) {
        const struct pc_stat_desc *d = &pc_stat_descs[i];
        json_t *v = json_object_get(stats, d->name);
        if (!json_is_integer(v) ||
            (uint64_t)json_integer_value(v) != *(uint64_t *)((char *)&st + d->offset))
            good = 0;
        if (d->peak_name) {
            v = json_object_get(stats, d->peak_name);
            if (!json_is_integer(v) ||
                json_integer_value(v) != *(int64_t *)((char *)&st + d->peak_offset))
                good = 0;
        }
    }
    ok(good, "every statistic of stats.def is in \"stats\" with its value");
    for (i = 0, k = 0; i < pc_stat_ndescs; i++)
        k += pc_stat_descs[i].peak_name != NULL;
    is_int(json_object_size(stats), pc_stat_ndescs + k, "and nothing else (gauges twice)");
    ok(json_is_real(json_object_get(json_object_get(j, "derived"), "hit_rate")), "derived.hit_rate is a number");

    /* The text summary is the JSON summary, line for line. */
    slurp(tpath, text, sizeof text);
    sum = json_object_get(j, "summary");
    good = json_array_size(sum) > 0;
    for (k = 0; k < json_array_size(sum); k++) {
        char line[1024];
        snprintf(line, sizeof line, "pincache[4242]: %s\n", json_string_value(json_array_get(sum, k)));
        if (!strstr(text, line))
            good = 0;
    }
    sum = json_object_get(j, "recommendations");
    for (k = 0; k < json_array_size(sum); k++) {
        char line[1024];
        snprintf(line, sizeof line, "pincache[4242]: recommendation: %s\n",
                 json_string_value(json_array_get(sum, k)));
        if (!strstr(text, line))
            good = 0;
    }
    ok(good, "text lines and JSON summary/recommendations agree");
    is_int(count_str(text, "\n"), json_array_size(json_object_get(j, "summary")) +
           json_array_size(sum), "and the text has no other lines");
    json_decref(j);

    /* Empty stats: no hit rate to speak of. */
    memset(&st, 0, sizeof st);
    write_report(path, PC_REPORT_JSON, 0, &in, &st, NULL, NULL);
    j = load_json(path);
    ok(j && json_is_null(json_object_get(json_object_get(j, "derived"), "hit_rate")),
       "no allocations: hit_rate is null");
    ok(j && json_is_null(json_object_get(j, "rank")), "no rank: null");
    json_decref(j);
}
#endif

static void test_hostile_strings(void)
{
    struct pc_stats st;
    struct pc_report_info in = make_info(PC_MODE_CACHE);
    char path[512];
    const char *host = "h\"o\\s\tt\x01\xff\xc3(\xe2\x82\xac\xf0\x9f\x98\x80\xed\xa0\x80\xc0\xaf";

    fill_stats(&st, 0);
    tmp_path(path, sizeof path, "hostile.json");
    write_report(path, PC_REPORT_JSON, 0, &in, &st, "not-a-number", host);
    check_json_valid(path, "quotes, control bytes and bad UTF-8 in strings");
#ifdef HAVE_JANSSON
    {
        json_t *j = load_json(path);
        const char *want = "h\"o\\s\tt\x01\xef\xbf\xbd\xef\xbf\xbd(\xe2\x82\xac\xf0\x9f\x98\x80"
                           "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd";
        is_str(j ? json_string_value(json_object_get(j, "host")) : NULL, want,
               "valid UTF-8 kept, each bad byte becomes U+FFFD");
        ok(j && json_is_null(json_object_get(j, "rank")), "a non-numeric rank is null");
        json_decref(j);
    }
#else
    skip(2, "no jansson");
#endif
    {
        static char buf[1 << 16];
        tmp_path(path, sizeof path, "hostile.txt");
        write_report(path, PC_REPORT_TEXT, 0, &in, &st, "r\n1", host);
        slurp(path, buf, sizeof buf);
        is_int(count_str(buf, "\n"), count_str(buf, "pincache[4242]: "),
               "text: control characters cannot break lines");
    }
}

/* pincache merge over reports of several modes, and a report read back
 * whose mode is none of PINCACHE_MODE's. */
static void test_other_modes(void)
{
    static char buf[1 << 16];
    struct pc_stats st;
    struct pc_report_info in = make_info(PC_REPORT_MODE_MIXED);
    char path[512];

    fill_stats(&st, 0);
    tmp_path(path, sizeof path, "mixed.txt");
    write_report(path, PC_REPORT_TEXT, 0, &in, &st, NULL, "h");
    slurp(path, buf, sizeof buf);
    ok(strstr(buf, "exit report (mixed mode, ") != NULL, "mixed: said in the heading");
    in.mode = PC_REPORT_MODE_UNKNOWN;
    write_report(path, PC_REPORT_TEXT, 0, &in, &st, NULL, "h");
    slurp(path, buf, sizeof buf);
    ok(strstr(buf, "exit report (unknown mode, ") != NULL, "no known mode: unknown");
    tmp_path(path, sizeof path, "unknown.json");
    write_report(path, PC_REPORT_JSON, 0, &in, &st, NULL, "h");
    slurp(path, buf, sizeof buf);
    ok(strstr(buf, "\"mode\": null,") != NULL, "no known mode: null in JSON");
}

static void test_emitter(void)
{
    struct pc_emitter e;
    char path[512], buf[4096];
    int fd;
    uint64_t v = 7;

    tmp_path(path, sizeof path, "emit.json");
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pc_emit_init(&e, fd, PC_EMIT_JSON, 1, 0);
    pc_emit_begin(&e, NULL);
    pc_emit_dict_begin(&e, "empty", NULL);
    pc_emit_dict_end(&e);
    pc_emit_array_begin(&e, "none", NULL);
    pc_emit_array_end(&e);
    pc_emit_dict_begin(&e, "d", NULL);
    pc_emit_kv(&e, "a", NULL, PC_EMIT_COUNT, &v);
    pc_emit_kv(&e, "n", NULL, PC_EMIT_BYTES, NULL);
    pc_emit_array_begin(&e, "l", NULL);
    pc_emit_line(&e, "x%d", 1);
    pc_emit_line(&e, "y");
    pc_emit_array_end(&e);
    pc_emit_dict_end(&e);
    is_int(pc_emit_end(&e), 0, "emitter: no error");
    close(fd);
    slurp(path, buf, sizeof buf);
    is_str(buf, "{\n  \"empty\": {},\n  \"none\": [],\n  \"d\": {\n    \"a\": 7,\n    \"n\": null,\n"
                "    \"l\": [\n      \"x1\",\n      \"y\"\n    ]\n  }\n}\n",
           "emitter: JSON nesting, commas, empty containers, null");

    /* A big document goes through the buffer in several writes. */
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    pc_emit_init(&e, fd, PC_EMIT_JSON, 1, 0);
    pc_emit_begin(&e, NULL);
    pc_emit_array_begin(&e, "many", NULL);
    for (v = 0; v < 2000; v++)
        pc_emit_line(&e, "line %llu", (unsigned long long)v);
    pc_emit_array_end(&e);
    pc_emit_end(&e);
    close(fd);
    check_json_valid(path, "emitter: a document larger than the buffer");

    fd = open("/dev/full", O_WRONLY);
    if (fd >= 0) {
        struct pc_stats st;
        struct pc_report_info in = make_info(PC_MODE_CACHE);
        fill_stats(&st, 0);
        is_int(pc_report_emit_fd(fd, PC_REPORT_JSON, 0, &in, &st, NULL, NULL), -ENOSPC,
               "a write error is returned");
        close(fd);
    } else {
        skip(1, "no /dev/full");
    }
}

static void test_path(void)
{
    char out[64];

    is_int(pc_report_path(out, sizeof out, "r-%p-%r-%h.json", 4242, "3", "node1"), 0, "path ok");
    is_str(out, "r-4242-3-node1.json", "%%p %%r %%h expanded");
    pc_report_path(out, sizeof out, "/x/%r.json", 1, NULL, "h");
    is_str(out, "/x/0.json", "unset rank is 0");
    pc_report_path(out, sizeof out, "/x/%h.json", 1, NULL, NULL);
    is_str(out, "/x/unknown.json", "no host: unknown");
    pc_report_path(out, sizeof out, "100%%-%q-%", 1, NULL, "h");
    is_str(out, "100%-%q-%", "%%%% is %%, unknown and trailing %% kept");
    pc_report_path(out, sizeof out, "/d/%h-%r", 1, "../up", "a/b");
    is_str(out, "/d/a_b-.._up", "'/' in values cannot change the directory");
    is_int(pc_report_path(out, 8, "abcdefgh", 1, NULL, NULL), -ENAMETOOLONG, "too long: error");
    is_int(pc_report_path(out, 11, "r-%p", 123456789, NULL, NULL), -ENAMETOOLONG,
           "too long after expansion: error");
    is_int(pc_report_path(out, sizeof out, "", 1, NULL, NULL), -EINVAL, "empty: error");
}

static int count_files(const char *prefix)
{
    char cmd[600], buf[64];
    FILE *p;
    int n = -1;

    snprintf(cmd, sizeof cmd, "ls -1 '%s' 2>/dev/null | grep -c '^%s' ", tmpdir, prefix);
    p = popen(cmd, "r");
    if (p) {
        if (fgets(buf, sizeof buf, p))
            n = atoi(buf);
        pclose(p);
    }
    return n;
}

static void run_write(const char *report, const char *log, int cuda_used, char *err, size_t n)
{
    struct pc_report_info in = make_info(PC_MODE_CACHE);

    in.pid = (int)getpid();
    in.cuda_used = cuda_used;
    unsetenv("PINCACHE_MODE");
    setenv("PINCACHE_REPORT", report, 1);
    if (log)
        setenv("PINCACHE_LOG", log, 1);
    else
        unsetenv("PINCACHE_LOG");
    pc_log_reset();
    capture_begin();
    pc_options_init();
    pc_report_write(&in);
    capture_end(err, n);
}

static void test_write(void)
{
    static char err[1 << 16];
    char tmpl[512], path[512], want[64];
    struct pc_stats st;

    fill_stats(&st, 0);
    memcpy(&pc_stats, &st, sizeof st);
    unsetenv("RANK");
    unsetenv("SLURM_PROCID");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("PMI_RANK");

    run_write("stderr", NULL, 1, err, sizeof err);
    snprintf(want, sizeof want, "pincache[%d]: cudaFreeHost: 1,000 calls", (int)getpid());
    ok(strstr(err, want) != NULL, "PINCACHE_REPORT=stderr: summary on stderr, from pc_stats");

    run_write("stderr", NULL, 0, err, sizeof err);
    is_str(err, "", "no CUDA call through us: no report");

    run_write("OFF", NULL, 1, err, sizeof err);
    is_str(err, "", "PINCACHE_REPORT=off: nothing");

    snprintf(tmpl, sizeof tmpl, "%s/rep-%%p-%%r.json", tmpdir);
    snprintf(path, sizeof path, "%s/rep-%d-0.json", tmpdir, (int)getpid());
    run_write(tmpl, NULL, 1, err, sizeof err);
    is_str(err, "", "PINCACHE_REPORT=PATH: stderr quiet at the default level");
    ok(access(path, F_OK) == 0, "the JSON file is at the expanded path");
    check_json_valid(path, "the written report");
    is_int(count_files("rep-"), 1, "no temporary file left behind");
    {
        struct stat sb;
        ok(stat(path, &sb) == 0 && (sb.st_mode & 0777) == (0644 & ~(unsigned)umask(022)),
           "created with mode 0644 (less the umask)");
    }

    run_write(tmpl, "info", 1, err, sizeof err);
    ok(strstr(err, "cudaFreeHost: 1,000 calls") && strstr(err, "report written to "),
       "PINCACHE_LOG=info: the summary on stderr too");

    pc_stats.alloc_calls = 7;
    run_write(tmpl, NULL, 1, err, sizeof err);
    {
        static char buf[1 << 16];
        slurp(path, buf, sizeof buf);
        ok(strstr(buf, "\"alloc_calls\": 7,") != NULL, "an existing report is replaced");
    }

    run_write("/nonexistent-dir/x/report.json", NULL, 1, err, sizeof err);
    is_int(count_str(err, "warning: cannot write the report to /nonexistent-dir/x/report.json: "),
           1, "unwritable path: one warning, naming the report's path");
    ok(strstr(err, "allocations: 7 calls") != NULL, "and the summary falls back to stderr");

    run_write("stderr", "debug", 1, err, sizeof err);
    ok(strstr(err, "  alloc_calls ") && strstr(err, "allocations: 7 calls"),
       "PINCACHE_LOG=debug: the table of every statistic, then the summary");

    unsetenv("PINCACHE_REPORT");
    unsetenv("PINCACHE_LOG");
    pc_options_init();
    pc_stats_reset();
}

int main(void)
{
    const char *t = getenv("TMPDIR");

    srcdir = getenv("top_srcdir");
    if (!srcdir)
        srcdir = ".";
    snprintf(tmpdir, sizeof tmpdir, "%s/pc_report.XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 99;
    }
    pc_options_init();
    test_golden();
    test_recommendations();
#ifdef HAVE_JANSSON
    test_json_content();
#else
    skip(1, "no jansson: JSON content checks");
#endif
    test_hostile_strings();
    test_other_modes();
    test_emitter();
    test_path();
    test_write();
    if (!tap_failures) {
        char cmd[600];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            diag("could not remove %s", tmpdir);
    } else {
        diag("outputs kept in %s", tmpdir);
    }
    return done_testing();
}
