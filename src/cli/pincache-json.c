/* pincache-json - the JSON half of the CLI: `pincache report` and
 * `pincache merge`.  Reports are read with jansson into the same struct
 * pc_stats the library fills (field names come from stats.def), then written
 * by the library's own report code, so the CLI and the exit report cannot
 * drift apart. */
#include "config.h"
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/hist.h"
#include "report/report.h"
#include "util/options.h"
#include "util/parse.h"
#include "util/stats.h"

struct pc_loaded {
    struct pc_report_info info;
    struct pc_stats st;
    char mode[16];
    char rank[32];
    char host[256];
    const char *path;
};

static int pc_usage(FILE *f)
{
    fputs("usage: pincache report [--json] [--detail] FILE.json\n"
          "       pincache merge [--json] FILE.json...\n", f);
    return f == stderr ? 2 : 0;
}

static uint64_t pc_json_u64(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (json_is_integer(v))
        return (uint64_t)json_integer_value(v);
    if (json_is_real(v))
        return (uint64_t)json_real_value(v);
    return 0;
}

static void pc_json_str(json_t *o, const char *key, char *out, size_t n)
{
    json_t *v = json_object_get(o, key);
    out[0] = '\0';
    if (json_is_string(v))
        snprintf(out, n, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(out, n, "%lld", (long long)json_integer_value(v));
}

/* The "apis" and "copies" objects: one row per stats.def PC_API/PC_COPY
 * entry, fields by name; a histogram's [lower, count] pairs go back into the
 * bucket each lower bound names. */
static void pc_load_rows(json_t *root, struct pc_stats *st)
{
    json_t *apis = json_object_get(root, "apis"), *copies = json_object_get(root, "copies");
    unsigned i, j;

    for (i = 0; i < PC_API_COUNT && json_is_object(apis); i++) {
        json_t *o = json_object_get(apis, pc_api_rows[i].key), *h, *pair;
        size_t k;
        if (!json_is_object(o))
            continue;
        for (j = 0; j < pc_api_nfields; j++) {
            uint64_t v = pc_json_u64(o, pc_api_fields[j].name);
            memcpy((char *)&st->api[i] + pc_api_fields[j].offset, &v, sizeof v);
        }
        h = json_object_get(o, "hist");
        json_array_foreach(h, k, pair) {
            json_t *lo = json_array_get(pair, 0), *n = json_array_get(pair, 1);
            if (json_is_integer(lo) && json_is_integer(n) && json_integer_value(lo) >= 0 &&
                json_integer_value(n) >= 0)
                st->api[i].hist[pc_hist_bucket((uint64_t)json_integer_value(lo))] +=
                    (uint64_t)json_integer_value(n);
        }
    }
    for (i = 0; i < PC_COPY_COUNT && json_is_object(copies); i++) {
        json_t *o = json_object_get(copies, pc_copy_rows[i].key);
        if (!json_is_object(o))
            continue;
        for (j = 0; j < pc_copy_nfields; j++) {
            uint64_t v = pc_json_u64(o, pc_copy_fields[j].name);
            memcpy((char *)&st->copy[i] + pc_copy_fields[j].offset, &v, sizeof v);
        }
    }
}

/* "staging": {"native_devices": [N, ...]} as the mask the report writes. */
static void pc_load_native(json_t *root, struct pc_report_info *info)
{
    json_t *a = json_object_get(json_object_get(root, "staging"), "native_devices"), *v;
    size_t i;

    json_array_foreach(a, i, v) {
        json_int_t d = json_integer_value(v);
        if (json_is_integer(v) && d >= 0 && d < 64)
            info->stage_native |= (uint64_t)1 << d;
    }
}

static int pc_load(const char *path, struct pc_loaded *l)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr), *stats;
    unsigned i;

    memset(l, 0, sizeof *l);
    l->path = path;
    if (!root) {
        fprintf(stderr, "pincache: %s:%d: %s\n", path, jerr.line, jerr.text);
        return -1;
    }
    if (pc_json_u64(root, "schema_version") != PC_STATS_SCHEMA_VERSION)
        fprintf(stderr, "pincache: %s: schema_version %llu, this pincache reads %d; unknown fields are ignored\n",
                path, (unsigned long long)pc_json_u64(root, "schema_version"), PC_STATS_SCHEMA_VERSION);
    stats = json_object_get(root, "stats");
    if (!json_is_object(stats)) {
        fprintf(stderr, "pincache: %s: not a pincache report (no \"stats\")\n", path);
        json_decref(root);
        return -1;
    }
    for (i = 0; i < pc_stat_ndescs; i++) {
        const struct pc_stat_desc *d = &pc_stat_descs[i];
        char *base = (char *)&l->st;
        uint64_t v = pc_json_u64(stats, d->name);
        memcpy(base + d->offset, &v, sizeof v);
        if (d->peak_name) {
            v = pc_json_u64(stats, d->peak_name);
            memcpy(base + d->peak_offset, &v, sizeof v);
        }
    }
    pc_load_rows(root, &l->st);
    pc_json_str(root, "mode", l->mode, sizeof l->mode);
    pc_json_str(root, "rank", l->rank, sizeof l->rank);
    pc_json_str(root, "host", l->host, sizeof l->host);
    if (pc_parse_enum(l->mode, PC_CHOICES_TEXT(PC_MODE_CHOICES), &l->info.mode) != 0)
        l->info.mode = PC_REPORT_MODE_UNKNOWN;
    l->info.pid = (int)pc_json_u64(root, "pid");
    l->info.max_cached = (size_t)pc_json_u64(root, "max_cached");
    l->info.cuda_used = json_is_true(json_object_get(root, "cuda_used"));
    l->info.forked_child = json_is_true(json_object_get(root, "forked_child"));
    l->info.broken = json_is_true(json_object_get(root, "broken"));
    pc_load_native(root, &l->info);
    l->info.start_ns = 0;
    l->info.end_ns = pc_json_u64(root, "wall_ns");
    json_decref(root);
    return 0;
}

static int pc_cmd_report(int argc, char **argv, int format, int flags)
{
    struct pc_loaded l;
    if (argc != 1)
        return pc_usage(stderr);
    if (pc_load(argv[0], &l) != 0)
        return 1;
    return pc_report_emit_fd(1, format, flags, &l.info, &l.st, l.rank[0] ? l.rank : NULL,
                             l.host[0] ? l.host : NULL) == 0 ? 0 : 1;
}

static void pc_add_fields(char *sum, const char *add, const struct pc_field_desc *f, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        uint64_t a, b;
        memcpy(&a, sum + f[i].offset, sizeof a);
        memcpy(&b, add + f[i].offset, sizeof b);
        a = f[i].merge == PC_STAT_MERGE_MAX ? (a > b ? a : b) : a + b;
        memcpy(sum + f[i].offset, &a, sizeof a);
    }
}

/* Counters add up.  Gauges: levels and peaks are summed too, so a merged
 * peak is an upper bound of the ranks' simultaneous peak.  Per-API and
 * per-copy fields add up (max_ns keeps the largest), histograms bucket by
 * bucket. */
static void pc_add(struct pc_stats *sum, const struct pc_stats *st)
{
    for (unsigned i = 0; i < PC_API_COUNT; i++) {
        pc_add_fields((char *)&sum->api[i], (const char *)&st->api[i], pc_api_fields, pc_api_nfields);
        for (unsigned j = 0; j < PC_HIST_BUCKETS; j++)
            sum->api[i].hist[j] += st->api[i].hist[j];
    }
    for (unsigned i = 0; i < PC_COPY_COUNT; i++)
        pc_add_fields((char *)&sum->copy[i], (const char *)&st->copy[i], pc_copy_fields, pc_copy_nfields);
    for (unsigned i = 0; i < pc_stat_ndescs; i++) {
        const struct pc_stat_desc *d = &pc_stat_descs[i];
        uint64_t a, b;
        memcpy(&a, (const char *)sum + d->offset, sizeof a);
        memcpy(&b, (const char *)st + d->offset, sizeof b);
        a += b;
        memcpy((char *)sum + d->offset, &a, sizeof a);
        if (d->peak_name) {
            memcpy(&a, (const char *)sum + d->peak_offset, sizeof a);
            memcpy(&b, (const char *)st + d->peak_offset, sizeof b);
            a += b;
            memcpy((char *)sum + d->peak_offset, &a, sizeof a);
        }
    }
}

/* Device synchronizations: calls that waited (any API), and their time. */
static uint64_t pc_synced(const struct pc_stats *st, uint64_t *ns)
{
    uint64_t n = 0;

    *ns = 0;
    for (unsigned i = 0; i < PC_API_COUNT; i++) {
        n += st->api[i].synced;
        *ns += st->api[i].stall_ns;
    }
    return n;
}

static void pc_merge_row(const char *rank, const char *host, const char *pid, const struct pc_stats *st)
{
    uint64_t stall, synced = pc_synced(st, &stall);
    int64_t peak = st->held_bytes_peak > st->live_bytes_peak ? st->held_bytes_peak : st->live_bytes_peak;

    printf("%-6s %-16.16s %8s %10llu %10llu %10llu %10llu %11llu %10llu %11.3f %14lld\n", rank, host,
           pid, (unsigned long long)st->alloc_calls, (unsigned long long)st->alloc_hits,
           (unsigned long long)st->alloc_misses, (unsigned long long)st->free_calls,
           (unsigned long long)st->syncs_avoided, (unsigned long long)synced, (double)stall / 1e9,
           (long long)peak);
}

/* One row per report, then the totals; numbers plain, for scripts. */
static void pc_merge_table(const struct pc_loaded *l, int n, const struct pc_stats *sum)
{
    char pid[16], what[32];

    printf("%-6s %-16s %8s %10s %10s %10s %10s %11s %10s %11s %14s\n", "rank", "host", "pid", "allocs",
           "hits", "misses", "frees", "syncs_avoid", "synced", "stall_s", "peak_pinned_B");
    for (int i = 0; i < n; i++) {
        snprintf(pid, sizeof pid, "%d", l[i].info.pid);
        pc_merge_row(l[i].rank[0] ? l[i].rank : "-", l[i].host, pid, &l[i].st);
    }
    snprintf(what, sizeof what, "%d report%s", n, n == 1 ? "" : "s");
    pc_merge_row("total", what, "-", sum);
}

static int pc_cmd_merge(int argc, char **argv, int format)
{
    struct pc_loaded *l;
    static struct pc_stats sum;
    struct pc_report_info info;
    int i, bad = 0;

    if (argc < 1)
        return pc_usage(stderr);
    l = calloc((size_t)argc, sizeof *l);
    if (!l)
        return 1;
    memset(&sum, 0, sizeof sum);
    info = (struct pc_report_info){ .cuda_used = 1 };
    for (i = 0; i < argc; i++) {
        if (pc_load(argv[i], &l[i]) != 0) {
            bad = 1;
            continue;
        }
        pc_add(&sum, &l[i].st);
        if (i == 0)
            info.mode = l[i].info.mode;
        else if (info.mode != l[i].info.mode)
            info.mode = PC_REPORT_MODE_MIXED;
        if (l[i].info.end_ns > info.end_ns)
            info.end_ns = l[i].info.end_ns;
        info.max_cached += l[i].info.max_cached;
        info.broken |= l[i].info.broken;
        info.stage_native |= l[i].info.stage_native;
    }
    if (bad) {
        free(l);
        return 1;
    }
    if (format == PC_REPORT_TEXT) {
        pc_merge_table(l, argc, &sum);
        fflush(stdout);
    }
    i = pc_report_emit_fd(1, format, 0, &info, &sum, NULL, "merged");
    free(l);
    return i == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "json", no_argument, NULL, 'j' },
        { "detail", no_argument, NULL, 'd' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int format = PC_REPORT_TEXT, flags = 0, c;
    const char *cmd;

    if (argc < 2)
        return pc_usage(stderr);
    cmd = argv[1];
    argv++;
    argc--;
    while ((c = getopt_long(argc, argv, "jdh", opts, NULL)) != -1) {
        switch (c) {
        case 'j': format = PC_REPORT_JSON; break;
        case 'd': flags |= PC_REPORT_DETAIL; break;
        case 'h': return pc_usage(stdout);
        default: return pc_usage(stderr);
        }
    }
    if (strcmp(cmd, "report") == 0)
        return pc_cmd_report(argc - optind, argv + optind, format, flags);
    if (strcmp(cmd, "merge") == 0)
        return pc_cmd_merge(argc - optind, argv + optind, format);
    return pc_usage(stderr);
}
