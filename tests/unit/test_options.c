/* test_options.c - PINCACHE_* parsing: helpers, init, warnings, help. */
#include "config.h"
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/log.h"
#include "util/options.h"
#include "util/parse.h"
#include "tap.h"

static const char *const all_env[] = {
#define OPT(field, env, type, def, valid, help) "PINCACHE_" #env,
#include "util/options.def"
#undef OPT
};
#define NOPTS (sizeof all_env / sizeof all_env[0])

static char out[65536];

static void clear_env(void)
{
    size_t i;

    for (i = 0; i < NOPTS; i++)
        unsetenv(all_env[i]);
    unsetenv("RANK");
    unsetenv("SLURM_PROCID");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("PMI_RANK");
}

/* Run pc_options_init, capturing stderr into `out`; returns the number of
 * lines written. */
static int init_captured(void)
{
    pc_log_reset();
    capture_begin();
    pc_options_init();
    capture_end(out, sizeof out);
    return count_str(out, "\n");
}

static void test_bool(void)
{
    static const char *const yes[] = { "1", "true", "TRUE", "Yes", "on", "ON", "tRuE" };
    static const char *const no[] = { "0", "false", "No", "OFF", "off", "FaLsE" };
    static const char *const bad[] = { "", "2", "tru", "yes ", " on", "truex", "y", "-1", "00" };
    size_t i;
    int v;

    for (i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        v = -1;
        ok(pc_parse_bool(yes[i], &v) == 0 && v == 1, "bool '%s' is 1", yes[i]);
    }
    for (i = 0; i < sizeof no / sizeof no[0]; i++) {
        v = -1;
        ok(pc_parse_bool(no[i], &v) == 0 && v == 0, "bool '%s' is 0", no[i]);
    }
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 7;
        ok(pc_parse_bool(bad[i], &v) == -EINVAL && v == 7, "bool '%s' rejected, out untouched", bad[i]);
    }
    ok(pc_parse_bool(NULL, &v) == -EINVAL, "bool NULL rejected");
}

static void test_size(void)
{
    static const struct { const char *s; uint64_t v; } good[] = {
        { "0", 0 }, { "4096", 4096 }, { "512B", 512 }, { "512b", 512 },
        { "4K", 4096 }, { "4k", 4096 }, { "4KB", 4096 }, { "4KiB", 4096 }, { "4kib", 4096 },
        { "1M", 1ull << 20 }, { "3MB", 3ull << 20 }, { "2G", 2ull << 30 }, { "2GiB", 2ull << 30 },
        { "1T", 1ull << 40 }, { "16777215T", 16777215ull << 40 },
        { "18446744073709551615", UINT64_MAX }, { "007", 7 },
    };
    static const char *const bad[] = {
        "", "banana", "-1", "+1", "1.5G", "4 G", " 4G", "4G ", "G", "1X", "1KBB", "1Ki", "1iB",
        "1BB", "1P", "18446744073709551616", "99999999999999999999", "16777216T", "17179869184G",
        "0x10", "1e9",
    };
    size_t i, v;

    for (i = 0; i < sizeof good / sizeof good[0]; i++) {
        v = 1;
        ok(pc_parse_size(good[i].s, &v) == 0 && v == good[i].v, "size '%s' is %llu", good[i].s,
           (unsigned long long)good[i].v);
    }
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        v = 12345;
        ok(pc_parse_size(bad[i], &v) == -EINVAL && v == 12345, "size '%s' rejected", bad[i]);
    }
}

static void test_enum(void)
{
    int v = -1;

    ok(pc_parse_enum("cache", "cache|observe|off", &v) == 0 && v == 0, "enum first choice");
    ok(pc_parse_enum("observe", "cache|observe|off", &v) == 0 && v == 1, "enum middle choice");
    ok(pc_parse_enum("OFF", "cache|observe|off", &v) == 0 && v == 2, "enum last choice, any case");
    ok(pc_parse_enum("Observe", "cache|observe|off", &v) == 0 && v == 1, "enum mixed case");
    v = 9;
    ok(pc_parse_enum("cach", "cache|observe|off", &v) == -EINVAL && v == 9, "enum prefix rejected");
    ok(pc_parse_enum("cachex", "cache|observe|off", &v) == -EINVAL, "enum longer rejected");
    ok(pc_parse_enum("", "cache|observe|off", &v) == -EINVAL, "enum empty rejected");
    ok(pc_parse_enum("observe|off", "cache|observe|off", &v) == -EINVAL, "enum with bar rejected");
    ok(pc_parse_enum("1", "cache|observe|off", &v) == -EINVAL, "enum number rejected");
    ok(pc_parse_enum("warn", "error|warn|info|debug", &v) == 0 && v == PC_LOG_WARN,
       "log names match the PC_LOG_* values");
    ok(pc_parse_enum("debug", "error|warn|info|debug", &v) == 0 && v == PC_LOG_DEBUG,
       "debug is PC_LOG_DEBUG");
}

/* One list per ENUM option gives both its constants and its text. */
static void test_choices(void)
{
    int v = -1;

    is_str(PC_CHOICES_TEXT(PC_MODE_CHOICES), "cache|observe|off", "PINCACHE_MODE's text from its list");
    is_str(PC_CHOICES_TEXT(PC_LOG_LEVELS), "error|warn|info|debug", "PINCACHE_LOG's text from log.h's list");
    ok(PC_MODE_CACHE == 0 && PC_MODE_OBSERVE == 1 && PC_MODE_OFF == 2, "PC_MODE_* numbered in order");
    ok(PC_LOG_ERROR == 0 && PC_LOG_WARN == 1 && PC_LOG_INFO == 2 && PC_LOG_DEBUG == 3,
       "PC_LOG_* numbered in order");
    ok(pc_parse_enum("driver", PC_CHOICES_TEXT(PC_FENCE_CHOICES), &v) == 0 && v == PC_FENCE_DRIVER,
       "a choice parses to its constant (fence)");
    ok(pc_parse_enum("Auto", PC_CHOICES_TEXT(PC_CUPTI_CHOICES), &v) == 0 && v == PC_CUPTI_AUTO,
       "a choice parses to its constant (cupti)");
    is_str(pc_mode_name(PC_MODE_OBSERVE), "observe", "the mode's name");
    ok(pc_mode_name(3) == NULL && pc_mode_name(-1) == NULL, "no name outside the list");
    ok(pc_strieq("OFF", "off") && pc_strieq("", "") && !pc_strieq("of", "off") &&
       !pc_strieq("offf", "off") && !pc_strieq("\xc4", "\xe4"),
       "pc_strieq: ASCII case only, whole strings");
}

/* PATH options: "off" in any case is NULL, decided once here. */
static void test_paths(void)
{
    clear_env();
    init_captured();
    ok(pc_opt.trace == NULL, "PINCACHE_TRACE's default off is NULL");
    is_str(pc_opt.report, "stderr", "PINCACHE_REPORT's default is not a path but not off either");
    setenv("PINCACHE_TRACE", "OFF", 1);
    setenv("PINCACHE_REPORT", "oFf", 1);
    setenv("PINCACHE_VERBOSE", "1", 1);
    init_captured();
    ok(pc_opt.trace == NULL && pc_opt.report == NULL, "off in any case is NULL");
    ok(strstr(out, "PINCACHE_TRACE=OFF\n") && strstr(out, "PINCACHE_REPORT=oFf\n"),
       "PINCACHE_VERBOSE shows them as written");
    setenv("PINCACHE_TRACE", "/tmp/t-%p.json", 1);
    setenv("PINCACHE_REPORT", "offx", 1);
    init_captured();
    is_str(pc_opt.trace, "/tmp/t-%p.json", "a path is kept");
    is_str(pc_opt.report, "offx", "a path that starts with off is a path");
    clear_env();
    init_captured();
}

/* The node list fast blocks read (stage/fastmem.c): placement happens only
 * with two nodes or more, so a miscount would bind memory on one-node
 * hosts or never on others. */
static void test_count_list(void)
{
    ok(pc_parse_count_list("0\n") == 1, "node list \"0\": 1");
    ok(pc_parse_count_list("0-1\n") == 2, "node list \"0-1\": 2");
    ok(pc_parse_count_list("0-3,8-11") == 8, "node list \"0-3,8-11\": 8");
    ok(pc_parse_count_list("0,2,4\n") == 3, "node list \"0,2,4\": 3");
    ok(pc_parse_count_list("") == 0, "empty node list: 0");
    ok(pc_parse_count_list("3-1") == 0, "backwards range: 0");
    ok(pc_parse_count_list("x") == 0, "junk: 0");
}

static void test_format_size(void)
{
    char b[32];

    pc_format_size(b, sizeof b, 4ull << 30);
    is_str(b, "4G", "format 4G");
    pc_format_size(b, sizeof b, 1536ull << 20);
    is_str(b, "1536M", "format 1536M");
    pc_format_size(b, sizeof b, 1000);
    is_str(b, "1000", "format plain bytes");
    pc_format_size(b, sizeof b, 0);
    is_str(b, "0", "format 0");
    pc_format_size(b, sizeof b, 3ull << 40);
    is_str(b, "3T", "format 3T");
    pc_format_size(b, sizeof b, 1ull << 50);
    is_str(b, "1024T", "format stops at T");
}

static void test_defaults(void)
{
    clear_env();
    is_int(init_captured(), 0, "clean environment: nothing printed");
    is_int(pc_opt.mode, PC_MODE_CACHE, "default mode cache");
    is_int(pc_opt.max_cached, 4ull << 30, "default cap 4G");
    is_int(pc_opt.log, PC_LOG_WARN, "default log warn");
    is_str(pc_opt.report, "stderr", "default report stderr");
    is_int(pc_opt.verbose, 0, "default verbose 0");
    is_int(pc_opt.help, 0, "default help 0");
    is_int(pc_opt.test_no_fences, 0, "default test_no_fences 0");
}

static void test_env_values(void)
{
    char path[] = "/tmp/r-%p.json";

    clear_env();
    setenv("PINCACHE_MODE", "Observe", 1);
    setenv("PINCACHE_MAX_CACHED", "512M", 1);
    setenv("PINCACHE_LOG", "error", 1);
    setenv("PINCACHE_REPORT", path, 1);
    setenv("PINCACHE_TEST_NO_FENCES", "yes", 1);
    is_int(init_captured(), 0, "good values: nothing printed");
    is_int(pc_opt.mode, PC_MODE_OBSERVE, "mode from env");
    is_int(pc_opt.max_cached, 512ull << 20, "cap from env");
    is_int(pc_opt.log, PC_LOG_ERROR, "log from env");
    is_int(pc_opt.test_no_fences, 1, "bool from env");
    is_str(pc_opt.report, "/tmp/r-%p.json", "report from env");
    setenv("PINCACHE_REPORT", "changed-later", 1);
    unsetenv("PINCACHE_REPORT");
    is_str(pc_opt.report, "/tmp/r-%p.json", "report survives a later change of the environment");

    /* Init again: everything back to defaults first. */
    clear_env();
    init_captured();
    is_int(pc_opt.mode, PC_MODE_CACHE, "re-init restores the default mode");
    is_str(pc_opt.report, "stderr", "re-init restores the default report");

    clear_env();
    setenv("PINCACHE_MAX_CACHED", "", 1);
    is_int(init_captured(), 0, "empty value: no warning");
    is_int(pc_opt.max_cached, 4ull << 30, "empty value: default kept");
}

static void test_bad_values(void)
{
    char want[256];
    size_t i;

    clear_env();
    setenv("PINCACHE_MAX_CACHED", "banana", 1);
    is_int(init_captured(), 1, "bad size: exactly one line");
    snprintf(want, sizeof want,
             "pincache[%d]: warning: environment option PINCACHE_MAX_CACHED has an invalid value "
             "'banana'; using the default 4G\n", (int)getpid());
    is_str(out, want, "bad size: the warning names variable, value and default");
    is_int(pc_opt.max_cached, 4ull << 30, "bad size: default kept");

    clear_env();
    setenv("PINCACHE_MODE", "fast", 1);
    is_int(init_captured(), 1, "bad enum: one line");
    ok(strstr(out, "PINCACHE_MODE has an invalid value 'fast'; using the default cache") != NULL,
       "bad enum: message");
    ok(strstr(out, "cache|observe|off") != NULL, "bad enum: lists the choices");
    is_int(pc_opt.mode, PC_MODE_CACHE, "bad enum: default kept");

    clear_env();
    setenv("PINCACHE_VERBOSE", "maybe", 1);
    is_int(init_captured(), 1, "bad bool: one line");
    is_int(pc_opt.verbose, 0, "bad bool: default kept");

    /* A warning about the log level itself must not be swallowed by it. */
    clear_env();
    setenv("PINCACHE_LOG", "loud", 1);
    is_int(init_captured(), 1, "bad PINCACHE_LOG: its warning appears");
    ok(strstr(out, "PINCACHE_LOG has an invalid value 'loud'") != NULL, "bad PINCACHE_LOG: message");
    is_int(pc_opt.log, PC_LOG_WARN, "bad PINCACHE_LOG: default warn");

    /* PINCACHE_LOG is read first and governs the others, whatever the order. */
    clear_env();
    setenv("PINCACHE_LOG", "error", 1);
    setenv("PINCACHE_MAX_CACHED", "banana", 1);
    setenv("PINCACHE_MODE", "banana", 1);
    is_int(init_captured(), 0, "PINCACHE_LOG=error silences warnings about other options");

    /* Several bad values: one warning each, no more. */
    clear_env();
    setenv("PINCACHE_MODE", "x", 1);
    setenv("PINCACHE_MAX_CACHED", "-1", 1);
    setenv("PINCACHE_HELP", "2", 1);
    setenv("PINCACHE_VERBOSE", "", 1);
    is_int(init_captured(), 3, "three bad values, three warnings");

    /* A value cannot forge log lines or flood them. */
    clear_env();
    setenv("PINCACHE_MAX_CACHED", "1\npincache[1]: error: forged", 1);
    is_int(init_captured(), 1, "newline in a value: still one line");
    ok(strstr(out, "'1?pincache[1]: error: forged'") != NULL, "control characters shown as '?'");
    {
        char big[4096];
        memset(big, 'x', sizeof big - 1);
        big[sizeof big - 1] = '\0';
        clear_env();
        setenv("PINCACHE_MAX_CACHED", big, 1);
        is_int(init_captured(), 1, "huge value: one line");
        ok(strlen(out) < 200 && strstr(out, "xxx...'") != NULL, "huge value: shown shortened");
    }

    /* Every typed option, given garbage, warns once and keeps its default. */
    for (i = 0; i < NOPTS; i++) {
        if (!strcmp(all_env[i], "PINCACHE_REPORT") || !strcmp(all_env[i], "PINCACHE_TRACE") ||
            !strcmp(all_env[i], "PINCACHE_CUPTI_LIB") ||
            !strcmp(all_env[i], "PINCACHE_TEST_LIMITS_ROOT"))
            continue;                 /* a string: anything is a value */
        clear_env();
        setenv(all_env[i], "zz-not-a-value", 1);
        is_int(init_captured(), 1, "%s=garbage: one warning", all_env[i]);
        ok(strstr(out, all_env[i]) != NULL, "%s: the warning names it", all_env[i]);
    }
    clear_env();
}

static void test_help_verbose(void)
{
    size_t i;
    char prefix[64];

    snprintf(prefix, sizeof prefix, "pincache[%d]: ", (int)getpid());
    clear_env();
    setenv("PINCACHE_HELP", "1", 1);
    setenv("PINCACHE_VERBOSE", "on", 1);
    setenv("PINCACHE_MAX_CACHED", "1536M", 1);
    /* stdout must stay empty: capture it too. */
    capture_begin_fd(1);
    {
        char sout[1024];
        int lines = init_captured();
        capture_end_fd(1, sout, sizeof sout);
        is_str(sout, "", "PINCACHE_HELP/VERBOSE print nothing on stdout");
        ok(lines >= 2 * (int)NOPTS + 2, "help and effective configuration printed (%d lines)", lines);
    }
    for (i = 0; i < NOPTS; i++) {
        char want[128];
        snprintf(want, sizeof want, "\n%s  %s=", prefix, all_env[i]);
        is_int(count_str(out, want), 2, "%s listed in the help and in the effective values",
               all_env[i]);
    }
    ok(strstr(out, "PINCACHE_MAX_CACHED=4G ") != NULL, "help shows the default");
    ok(strstr(out, "PINCACHE_MAX_CACHED=1536M\n") != NULL, "effective value shown as set");
    ok(strstr(out, "PINCACHE_MODE=cache (default)\n") != NULL, "defaults marked");
    ok(strstr(out, "one of cache|observe|off") != NULL, "help shows the choices");
    {
        /* Every line carries the prefix. */
        const char *p = out;
        int bad = 0;
        while (*p) {
            if (strncmp(p, prefix, strlen(prefix)) != 0)
                bad++;
            p = strchr(p, '\n');
            if (!p)
                break;
            p++;
        }
        is_int(bad, 0, "every help/verbose line starts with %s", prefix);
    }
    clear_env();
}

/* The numeric options as the table declares them. */
static const struct num_opt {
    const char *env, *type, *def, *valid;
    size_t offset;
} num_opts[] = {
#define OPT(field, env, type, def, valid, help) \
    { "PINCACHE_" #env, #type, def, PC_OPT_VALID(type, valid), offsetof(struct pc_options, field) },
#include "util/options.def"
#undef OPT
};

static int is_num(const struct num_opt *o)
{
    return !strcmp(o->type, "SIZE") || !strcmp(o->type, "INT");
}

/* The option's value now, as a number (sizes fit: all are below 2^63). */
static long long num_value(const struct num_opt *o)
{
    const char *f = (const char *)&pc_opt + o->offset;
    return !strcmp(o->type, "SIZE") ? (long long)*(const size_t *)f : (long long)*(const long *)f;
}

static int num_parse(const struct num_opt *o, const char *s, long long *v)
{
    size_t z;
    char *end;

    if (!strcmp(o->type, "SIZE")) {
        if (pc_parse_size(s, &z))
            return -1;
        *v = (long long)z;
        return 0;
    }
    *v = strtoll(s, &end, 10);
    return *s && !*end ? 0 : -1;
}

/* Set env=value (and, for the ring at its bounds, a chunk that fits them)
 * and init; returns the lines printed. */
static int init_with(const struct num_opt *o, long long v, int bound)
{
    char buf[32];

    clear_env();
    snprintf(buf, sizeof buf, "%lld", v);
    setenv(o->env, buf, 1);
    if (bound && !strcmp(o->env, "PINCACHE_STAGE_RING"))     /* 2 to 1024 chunks */
        setenv("PINCACHE_STAGE_CHUNK", v <= (64ll << 20) ? "64K" : "1G", 1);
    return init_captured();
}

static void test_ranges(void)
{
    size_t i;

    for (i = 0; i < sizeof num_opts / sizeof num_opts[0]; i++) {
        const struct num_opt *o = &num_opts[i];
        const char *dots = o->valid ? strstr(o->valid, "..") : NULL;
        char lo_s[32] = "";
        long long lo = 0, hi = 0, def = 0;

        if (!is_num(o))
            continue;
        if (dots && (size_t)(dots - o->valid) < sizeof lo_s)
            memcpy(lo_s, o->valid, (size_t)(dots - o->valid));
        if (!ok(dots && num_parse(o, lo_s, &lo) == 0 && num_parse(o, dots + 2, &hi) == 0 &&
                    num_parse(o, o->def, &def) == 0 && lo <= def && def <= hi,
                "%s declares a range in options.def, holding its default (%s)", o->env,
                o->valid ? o->valid : "none")) {
            continue;
        }
        is_int(init_with(o, lo, 1), 0, "%s=%lld (the lowest): no warning", o->env, lo);
        ok(num_value(o) == lo, "%s=%lld: in use as set (%lld)", o->env, lo, num_value(o));
        is_int(init_with(o, hi, 1), 0, "%s=%lld (the highest): no warning", o->env, hi);
        ok(num_value(o) == hi, "%s=%lld: in use as set (%lld)", o->env, hi, num_value(o));
        if (lo > 0 || !strcmp(o->type, "INT")) {
            is_int(init_with(o, lo - 1, 0), 1, "%s=%lld: one warning", o->env, lo - 1);
            ok(strstr(out, "out-of-range") && strstr(out, o->env), "%s: it says out of range",
               o->env);
            ok(num_value(o) == def, "%s=%lld: the default %s in use", o->env, lo - 1, o->def);
        }
        is_int(init_with(o, hi + 1, 0), 1, "%s=%lld: one warning", o->env, hi + 1);
        ok(num_value(o) == def, "%s=%lld: the default %s in use", o->env, hi + 1, o->def);
    }
    clear_env();
}

/* The values of issue 15 (D7): each was clamped silently where used, and
 * PINCACHE_VERBOSE showed it as set. */
static void test_out_of_range_shown(void)
{
    static const char *const bad[][2] = {
        { "PINCACHE_STAGE_PIECES", "0" }, { "PINCACHE_STAGE_LINGER", "-7" },
        { "PINCACHE_STAGE_CHUNK", "5G" }, { "PINCACHE_TRACE_EVENTS", "-1" },
        { "PINCACHE_HEADROOM", "-50" },   { "PINCACHE_STAGE_THREADS", "-4" },
        { "PINCACHE_MAX_CACHED", "2000T" }, { "PINCACHE_STAGE_RING", "64K" },
    };
    size_t i;

    clear_env();
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++)
        setenv(bad[i][0], bad[i][1], 1);
    setenv("PINCACHE_VERBOSE", "1", 1);
    init_captured();
    is_int(count_str(out, "warning:"), 8, "eight values out of range: eight warnings");
    ok(strstr(out, "PINCACHE_STAGE_PIECES=4 (default)\n") != NULL, "verbose: STAGE_PIECES 4 in use");
    ok(strstr(out, "PINCACHE_STAGE_LINGER=200 (default)\n") != NULL, "verbose: STAGE_LINGER 200");
    ok(strstr(out, "PINCACHE_STAGE_CHUNK=4M (default)\n") != NULL, "verbose: STAGE_CHUNK 4M");
    ok(strstr(out, "PINCACHE_TRACE_EVENTS=65536 (default)\n") != NULL, "verbose: TRACE_EVENTS 65536");
    ok(strstr(out, "PINCACHE_HEADROOM=15 (default)\n") != NULL, "verbose: HEADROOM 15");
    ok(strstr(out, "PINCACHE_STAGE_THREADS=0 (default)\n") != NULL, "verbose: STAGE_THREADS 0");
    is_int(pc_opt.stage_pieces, 4, "STAGE_PIECES: the default in use");
    is_int(pc_opt.headroom, 15, "HEADROOM: the default in use");

    /* Values that are rounded as documented: the rounded value is shown. */
    clear_env();
    setenv("PINCACHE_TRACE_EVENTS", "1000", 1);
    setenv("PINCACHE_STAGE_CHUNK", "100000", 1);
    setenv("PINCACHE_STAGE_RING", "1000000", 1);
    setenv("PINCACHE_VERBOSE", "1", 1);
    is_int(count_str((init_captured(), out), "warning:"), 0, "rounded values: no warning");
    is_int(pc_opt.trace_events, 1024, "TRACE_EVENTS 1000: 1024 in use (a power of two)");
    ok(strstr(out, "PINCACHE_TRACE_EVENTS=1024\n") != NULL, "verbose shows 1024");
    is_int(pc_opt.stage_chunk, 96 << 10, "STAGE_CHUNK 100000: 96K in use (whole pages)");
    ok(strstr(out, "PINCACHE_STAGE_CHUNK=96K\n") != NULL, "verbose shows 96K");
    is_int(pc_opt.stage_ring, 10 * (96 << 10), "STAGE_RING 1000000: 10 whole chunks in use");

    /* The ring and the chunk together. */
    clear_env();
    setenv("PINCACHE_STAGE_CHUNK", "1G", 1);
    is_int(init_captured(), 0, "STAGE_CHUNK=1G alone: no warning");
    is_int(pc_opt.stage_ring, 2ll << 30, "... the default ring grows to its two chunks");
    clear_env();
    setenv("PINCACHE_STAGE_CHUNK", "1M", 1);
    setenv("PINCACHE_STAGE_RING", "1M", 1);
    is_int(init_captured(), 1, "a ring of one chunk: one warning");
    ok(strstr(out, "PINCACHE_STAGE_RING=1M") != NULL, "... naming the ring");
    is_int(pc_opt.stage_ring, 64ll << 20, "... the default ring in use");
    clear_env();
    setenv("PINCACHE_STAGE_CHUNK", "64K", 1);
    setenv("PINCACHE_STAGE_RING", "128M", 1);
    is_int(init_captured(), 1, "a ring of 2048 chunks: one warning");
    is_int(pc_opt.stage_ring, 64ll << 20, "... the default ring (1024 chunks) in use");

    /* The help shows the ranges. */
    clear_env();
    setenv("PINCACHE_HELP", "1", 1);
    init_captured();
    ok(strstr(out, " integer, 1 to 64. pieces a staged copy") != NULL, "help: a range");
    ok(strstr(out, " size (K/M/G/T), 64K to 1G. bytes of one ring chunk") != NULL,
       "help: a size range");
    clear_env();
}

static void test_rank(void)
{
    clear_env();
    ok(pc_env_rank() == NULL, "no rank variable: NULL");
    setenv("PMI_RANK", "7", 1);
    is_str(pc_env_rank(), "7", "PMI_RANK");
    setenv("OMPI_COMM_WORLD_RANK", "6", 1);
    is_str(pc_env_rank(), "6", "OMPI_COMM_WORLD_RANK before PMI_RANK");
    setenv("SLURM_PROCID", "5", 1);
    is_str(pc_env_rank(), "5", "SLURM_PROCID before those");
    setenv("RANK", "", 1);
    is_str(pc_env_rank(), "5", "empty RANK skipped");
    setenv("RANK", "2", 1);
    is_str(pc_env_rank(), "2", "RANK first");
    clear_env();
}

int main(void)
{
    test_bool();
    test_size();
    test_enum();
    test_choices();
    test_paths();
    test_format_size();
    test_count_list();
    test_defaults();
    test_env_values();
    test_bad_values();
    test_help_verbose();
    test_ranges();
    test_out_of_range_shown();
    test_rank();
    return done_testing();
}
