/* options.c - PINCACHE_* environment options, all generated from options.def.
 *
 * The only module that calls getenv.  Bad values never stop the program:
 * each one, unparsable or out of its declared range, logs a single warning
 * and the option keeps its default.  The modules use the values as they are
 * here: no range is checked again where an option is used, and no "off"
 * of a PATH option is decided again.  The value parsers: parse.c. */
#include "config.h"
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/log.h"
#include "util/options.h"
#include "util/parse.h"

struct pc_options pc_opt;

enum pc_opt_type { PC_OPT_T_BOOL, PC_OPT_T_SIZE, PC_OPT_T_INT, PC_OPT_T_STR, PC_OPT_T_PATH, PC_OPT_T_ENUM };

struct pc_opt_desc {
    const char *env;
    enum pc_opt_type type;
    const char *def;
    const char *valid;        /* ENUM: the choices; SIZE, INT: "LO..HI" */
    const char *help;
    size_t offset;
};

static const struct pc_opt_desc pc_opt_descs[] = {
#define OPT(field, env, type, def, valid, help) \
    { "PINCACHE_" #env, PC_OPT_T_##type, def, PC_OPT_VALID(type, valid), help,                    \
      offsetof(struct pc_options, field) },
#include "util/options.def"
#undef OPT
};
#define PC_NOPTS (sizeof pc_opt_descs / sizeof pc_opt_descs[0])

/* Whether each option came from the environment (for PINCACHE_VERBOSE). */
static unsigned char pc_opt_from_env[PC_NOPTS];

/* PATH options: the value as given, "off" included (PINCACHE_VERBOSE shows
 * it as written).  Filled by init only. */
static const char *pc_opt_path_text[PC_NOPTS];

static const char *const pc_mode_names[] = { PC_MODE_CHOICES(PC_CHOICE_NAME) };

/* STR values are copied here: the program may later change its environment,
 * and the report reads PINCACHE_REPORT at exit.  Filled by init only. */
static char pc_opt_strings[8192];
static size_t pc_opt_strings_used;

const char *pc_mode_name(int mode)
{
    return mode >= 0 && (size_t)mode < sizeof pc_mode_names / sizeof pc_mode_names[0]
               ? pc_mode_names[mode] : NULL;
}

static void *pc_opt_field(const struct pc_opt_desc *d)
{
    return (char *)&pc_opt + d->offset;
}

static const char *pc_opt_keep_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p;

    if (n > sizeof pc_opt_strings - pc_opt_strings_used)
        return NULL;
    p = pc_opt_strings + pc_opt_strings_used;
    memcpy(p, s, n);
    pc_opt_strings_used += n;
    return p;
}

/* A SIZE or INT option's range "LO..HI" as the type's own parser reads
 * it; 0, or -EINVAL where the table has none that parses. */
static int pc_opt_bounds(const struct pc_opt_desc *d, char lo[32], const char **hi)
{
    const char *dots = d->valid ? strstr(d->valid, "..") : NULL;
    size_t n = dots ? (size_t)(dots - d->valid) : 0;

    if (!dots || n == 0 || n >= 32 || !dots[2])
        return -EINVAL;
    memcpy(lo, d->valid, n);
    lo[n] = '\0';
    *hi = dots + 2;
    return 0;
}

static int pc_size_in(const struct pc_opt_desc *d, size_t v)
{
    char lo[32];
    const char *hi;
    size_t a, b;

    return pc_opt_bounds(d, lo, &hi) == 0 && pc_parse_size(lo, &a) == 0 &&
           pc_parse_size(hi, &b) == 0 && v >= a && v <= b;
}

static int pc_int_in(const struct pc_opt_desc *d, long v)
{
    char lo[32];
    const char *hi;
    long a, b;

    return pc_opt_bounds(d, lo, &hi) == 0 && pc_parse_int(lo, &a) == 0 &&
           pc_parse_int(hi, &b) == 0 && v >= a && v <= b;
}

/* An ENUM with "on" and "off" among its choices takes the boolean spellings
 * for them (PINCACHE_STAGE=1 kept its meaning when it gained "auto"). */
static int pc_opt_enum_bool(const struct pc_opt_desc *d, const char *s, int *out)
{
    int b;

    if (pc_parse_bool(s, &b))
        return -EINVAL;
    return pc_parse_enum(b ? "on" : "off", d->valid, out);
}

/* Parse s into the option's field.  0, -EINVAL (does not parse) or -ERANGE
 * (outside the declared range); the field is untouched on failure. */
static int pc_opt_set(const struct pc_opt_desc *d, const char *s)
{
    void *f = pc_opt_field(d);
    size_t z;
    long l;
    int i;

    switch (d->type) {
    case PC_OPT_T_BOOL:
        if (pc_parse_bool(s, &i))
            return -EINVAL;
        *(int *)f = i;
        return 0;
    case PC_OPT_T_SIZE:
        if (pc_parse_size(s, &z))
            return -EINVAL;
        if (!pc_size_in(d, z))
            return -ERANGE;
        *(size_t *)f = z;
        return 0;
    case PC_OPT_T_INT:
        if (pc_parse_int(s, &l))
            return -EINVAL;
        if (!pc_int_in(d, l))
            return -ERANGE;
        *(long *)f = l;
        return 0;
    case PC_OPT_T_ENUM:
        if (pc_parse_enum(s, d->valid, &i) && pc_opt_enum_bool(d, s, &i))
            return -EINVAL;
        *(int *)f = i;
        return 0;
    case PC_OPT_T_STR:
    case PC_OPT_T_PATH:
        /* Defaults are string literals; only environment values are copied. */
        if (s != d->def && !(s = pc_opt_keep_string(s)))
            return -EINVAL;
        if (d->type == PC_OPT_T_PATH) {
            pc_opt_path_text[d - pc_opt_descs] = s;
            if (pc_strieq(s, "off"))
                s = NULL;         /* decided here, once, for every user of the path */
        }
        *(const char **)f = s;
        return 0;
    }
    return -EINVAL;
}

/* A value echoed in a warning: bounded, control characters replaced, so a
 * hostile or binary value cannot forge log lines. */
static void pc_sanitize(char *out, size_t n, const char *s)
{
    size_t i = 0;

    while (*s && i + 4 < n) {
        unsigned char c = (unsigned char)*s++;
        out[i++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (*s) {
        memcpy(out + i, "...", 3);
        i += 3;
    }
    out[i] = '\0';
}

static void pc_opt_from_environment(size_t i)
{
    const struct pc_opt_desc *d = &pc_opt_descs[i];
    const char *s = getenv(d->env);
    char shown[80];

    if (!s || !*s)
        return;                 /* unset or empty: the default stands */
    char lo[32];
    const char *hi;
    int r = pc_opt_set(d, s);

    if (r == 0) {
        pc_opt_from_env[i] = 1;
        return;
    }
    pc_sanitize(shown, sizeof shown, s);
    if (d->type == PC_OPT_T_ENUM)
        pc_warn("environment option %s has an invalid value '%s'; using the default %s"
                " (expected one of %s)", d->env, shown, d->def, d->valid);
    else if (r == -ERANGE && pc_opt_bounds(d, lo, &hi) == 0)
        pc_warn("environment option %s has an out-of-range value '%s'; using the default %s"
                " (expected %s to %s)", d->env, shown, d->def, lo, hi);
    else
        pc_warn("environment option %s has an invalid value '%s'; using the default %s",
                d->env, shown, d->def);
}

/* The index of the option stored at offset; PC_NOPTS if none is. */
static size_t pc_opt_find(size_t offset)
{
    size_t i;

    for (i = 0; i < PC_NOPTS && pc_opt_descs[i].offset != offset; i++)
        ;
    return i;
}

/* The rules that tie options together or round a value, applied once
 * after parsing so that the values shown are the values in use. */
static void pc_options_settle(void)
{
    static const size_t def_ring = 64u << 20;     /* options.def's default */
    size_t chunk, lo, hi, ring = pc_opt_find(offsetof(struct pc_options, stage_ring));
    unsigned long n = 1;
    char a[32], b[32], c[32];

    /* The trace ring indexes with a mask. */
    while (n < (unsigned long)pc_opt.trace_events)
        n <<= 1;
    pc_opt.trace_events = (long)n;

    /* Ring chunks are separate pinned buffers, whole pages each; the ring
     * needs two (one filling while the other's DMA runs) and keeps its slot
     * table small (1024). */
    chunk = pc_opt.stage_chunk & ~(size_t)4095;
    pc_opt.stage_chunk = chunk;
    lo = 2 * chunk;
    hi = 1024 * chunk;
    if (pc_opt.stage_ring < lo || pc_opt.stage_ring > hi) {
        size_t def = def_ring < lo ? lo : def_ring > hi ? hi : def_ring;
        if (ring < PC_NOPTS && pc_opt_from_env[ring]) {
            pc_format_size(a, sizeof a, pc_opt.stage_ring);
            pc_format_size(b, sizeof b, def);
            pc_format_size(c, sizeof c, chunk);
            pc_warn("environment option PINCACHE_STAGE_RING=%s is not 2 to 1024 chunks of %s"
                    " (PINCACHE_STAGE_CHUNK); using the default %s", a, c, b);
            pc_opt_from_env[ring] = 0;
        }
        pc_opt.stage_ring = def;
    }
    pc_opt.stage_ring -= pc_opt.stage_ring % chunk;

    /* The node's file is found by name from any working directory. */
    if (!pc_opt.node_share_dir || pc_opt.node_share_dir[0] != '/') {
        size_t dir = pc_opt_find(offsetof(struct pc_options, node_share_dir));
        if (dir < PC_NOPTS) {
            pc_sanitize(a, sizeof a, pc_opt.node_share_dir ? pc_opt.node_share_dir : "");
            pc_warn("environment option PINCACHE_NODE_SHARE_DIR has an invalid value '%s'; using the "
                    "default %s (expected an absolute path)", a, pc_opt_descs[dir].def);
            pc_opt_set(&pc_opt_descs[dir], pc_opt_descs[dir].def);
            pc_opt_from_env[dir] = 0;
        }
    }
}

void pc_options_init(void)
{
    size_t i, log_idx = pc_opt_find(offsetof(struct pc_options, log));

    pc_opt_strings_used = 0;
    for (i = 0; i < PC_NOPTS; i++) {
        pc_opt_from_env[i] = 0;
        if (pc_opt_set(&pc_opt_descs[i], pc_opt_descs[i].def) != 0)
            pc_error("built-in default '%s' of %s does not parse or is out of range",
                     pc_opt_descs[i].def, pc_opt_descs[i].env);
    }
    /* The level first, so that it governs the warnings about the others; a
     * bad PINCACHE_LOG is reported at the default level (warn). */
    pc_log_set_level(pc_opt.log);
    if (log_idx < PC_NOPTS)
        pc_opt_from_environment(log_idx);
    pc_log_set_level(pc_opt.log);
    for (i = 0; i < PC_NOPTS; i++)
        if (i != log_idx)
            pc_opt_from_environment(i);
    pc_options_settle();
    if (pc_opt.help)
        pc_options_print_help(2);
    if (pc_opt.verbose)
        pc_options_print_effective(2);
}

static const char *const pc_type_word[] = {
    [PC_OPT_T_BOOL] = "boolean", [PC_OPT_T_SIZE] = "size (K/M/G/T)",
    [PC_OPT_T_INT] = "integer", [PC_OPT_T_STR] = "string", [PC_OPT_T_PATH] = "string",
    [PC_OPT_T_ENUM] = "one of",
};

void pc_options_print_help(int fd)
{
    char line[1024];
    char left[64];
    int pid = (int)getpid();
    size_t i;
    int n;

    n = pc_fmt(line, sizeof line, "pincache[%d]: options (environment variables, defaults shown):\n", pid);
    pc_write_all(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    for (i = 0; i < PC_NOPTS; i++) {
        const struct pc_opt_desc *d = &pc_opt_descs[i];
        char valid[96] = "", lo[32];
        const char *hi;
        if (d->type == PC_OPT_T_ENUM)
            pc_fmt(valid, sizeof valid, " %s", d->valid);
        else if (pc_opt_bounds(d, lo, &hi) == 0)
            pc_fmt(valid, sizeof valid, ", %s to %s", lo, hi);
        pc_fmt(left, sizeof left, "%s=%s", d->env, d->def);
        n = pc_fmt(line, sizeof line, "pincache[%d]:   %-28s %s%s. %s\n", pid, left,
                   pc_type_word[d->type], valid, d->help);
        if ((size_t)n >= sizeof line) {
            n = sizeof line - 1;
            line[n - 1] = '\n';
        }
        pc_write_all(fd, line, (size_t)n);
    }
}

/* The value as a user would write it back. */
static void pc_opt_show(char *buf, size_t n, const struct pc_opt_desc *d)
{
    const void *f = pc_opt_field(d);

    switch (d->type) {
    case PC_OPT_T_BOOL:
        pc_fmt(buf, n, "%d", *(const int *)f);
        break;
    case PC_OPT_T_SIZE:
        pc_format_size(buf, n, *(const size_t *)f);
        break;
    case PC_OPT_T_INT:
        pc_fmt(buf, n, "%ld", *(const long *)f);
        break;
    case PC_OPT_T_STR:
        pc_sanitize(buf, n, *(const char *const *)f ? *(const char *const *)f : "");
        break;
    case PC_OPT_T_PATH:
        pc_sanitize(buf, n, pc_opt_path_text[d - pc_opt_descs] ? pc_opt_path_text[d - pc_opt_descs] : "");
        break;
    case PC_OPT_T_ENUM: {
        const char *c = d->valid;
        int idx = *(const int *)f;
        size_t len;
        while (idx-- > 0 && c && (c = strchr(c, '|')))
            c++;
        if (!c)
            c = "?";
        len = strcspn(c, "|");
        pc_fmt(buf, n, "%.*s", (int)len, c);
        break;
    }
    }
}

void pc_options_print_effective(int fd)
{
    char line[1024];
    char val[512];
    int pid = (int)getpid();
    size_t i;
    int n;

    n = pc_fmt(line, sizeof line, "pincache[%d]: effective configuration:\n", pid);
    pc_write_all(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    for (i = 0; i < PC_NOPTS; i++) {
        pc_opt_show(val, sizeof val, &pc_opt_descs[i]);
        n = pc_fmt(line, sizeof line, "pincache[%d]:   %s=%s%s\n", pid, pc_opt_descs[i].env, val,
                   pc_opt_from_env[i] ? "" : " (default)");
        pc_write_all(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    }
}

/* The value of the first of names[0..n) that is set and not empty. */
static const char *pc_env_first(const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *v = getenv(names[i]);
        if (v && *v)
            return v;
    }
    return NULL;
}

const char *pc_env_rank(void)
{
    /* torchrun/accelerate first, then the launchers' own variables. */
    static const char *const names[] = { "RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK" };
    return pc_env_first(names, sizeof names / sizeof names[0]);
}

long pc_env_local_procs(void)
{
    static const char *const names[] = { "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                         "SLURM_NTASKS_PER_NODE" };
    const char *v = pc_env_first(names, sizeof names / sizeof names[0]);
    char *end;
    long n;

    if (!v)
        return 1;
    n = strtol(v, &end, 10);         /* Slurm may say "4(x2)": the leading number */
    return end != v && n > 0 && n <= 4096 ? n : 1;
}

const char *pc_env_cuda_tool(void)
{
    /* Nsight Systems, Nsight Compute and compute-sanitizer load their agents
     * through the driver's injection variable; nsys also marks its session. */
    static const char *const names[] = { "CUDA_INJECTION64_PATH", "NVTX_INJECTION64_PATH",
                                         "NSYS_PROFILING_SESSION_ID" };
    static const char *const preloads[] = { "sanitizer", "Injection", "nsys", "nsight" };
    const char *v;
    size_t i;

    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        v = getenv(names[i]);
        if (v && *v)
            return names[i];
    }
    v = getenv("LD_PRELOAD");
    for (i = 0; v && i < sizeof preloads / sizeof preloads[0]; i++)
        if (strstr(v, preloads[i]))
            return "LD_PRELOAD";
    return NULL;
}
