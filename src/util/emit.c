/* emit.c - the text and JSON renderings behind emit.h. */
#include "config.h"
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include "util/emit.h"
#include "util/log.h"

#define PC_EMIT_LINE 512

static void pc_emit_flush(struct pc_emitter *e)
{
    if (e->len && !e->err)
        e->err = pc_write_all(e->fd, e->buf, e->len);
    e->len = 0;
}

static void pc_emit_putn(struct pc_emitter *e, const char *s, unsigned long n)
{
    while (n) {
        unsigned long room = sizeof e->buf - e->len;
        unsigned long k = n < room ? n : room;
        memcpy(e->buf + e->len, s, k);
        e->len += k;
        s += k;
        n -= k;
        if (e->len == sizeof e->buf)
            pc_emit_flush(e);
    }
}

static void pc_emit_puts(struct pc_emitter *e, const char *s)
{
    pc_emit_putn(e, s, strlen(s));
}

static void pc_emit_printf(struct pc_emitter *e, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void pc_emit_printf(struct pc_emitter *e, const char *fmt, ...)
{
    char tmp[PC_EMIT_LINE];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = pc_vfmt(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    pc_emit_putn(e, tmp, (unsigned long)n < sizeof tmp ? (unsigned long)n : sizeof tmp - 1);
}

/* ---- values ------------------------------------------------------------- */

/* A JSON string: quotes, backslashes and control characters escaped, and
 * invalid UTF-8 replaced by U+FFFD so the document always parses. */
static void pc_json_string(struct pc_emitter *e, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");

    pc_emit_puts(e, "\"");
    while (*p) {
        unsigned char c = *p;
        int need = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2
                 : (c & 0xf8) == 0xf0 ? 3 : -1;
        int i;

        if (c == '"' || c == '\\') {
            char esc[2] = { '\\', (char)c };
            pc_emit_putn(e, esc, 2);
        } else if (c < 0x20 || c == 0x7f) {
            pc_emit_printf(e, "\\u%04x", c);
        } else if (need == 0) {
            pc_emit_putn(e, (const char *)p, 1);
        } else {
            /* Accept only well-formed sequences: no overlongs, surrogates or
             * code points past U+10FFFF. */
            unsigned cp = need < 0 ? 0 : c & (0x3f >> need);
            for (i = 1; need > 0 && i <= need; i++) {
                if ((p[i] & 0xc0) != 0x80)
                    break;
                cp = (cp << 6) | (p[i] & 0x3f);
            }
            if (need > 0 && i > need &&
                cp >= (need == 1 ? 0x80u : need == 2 ? 0x800u : 0x10000u) &&
                cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff)) {
                pc_emit_putn(e, (const char *)p, (unsigned long)need + 1);
                p += need + 1;
                continue;
            }
            pc_emit_puts(e, "\\ufffd");
        }
        p++;
    }
    pc_emit_puts(e, "\"");
}

static void pc_json_value(struct pc_emitter *e, int type, const void *v)
{
    int base = type & ~PC_EMIT_SIGNED;

    if (!v) {
        pc_emit_puts(e, "null");
        return;
    }
    switch (base) {
    case PC_EMIT_COUNT:
    case PC_EMIT_BYTES:
    case PC_EMIT_NSEC:
        if (type & PC_EMIT_SIGNED)
            pc_emit_printf(e, "%lld", (long long)*(const int64_t *)v);
        else
            pc_emit_printf(e, "%llu", (unsigned long long)*(const uint64_t *)v);
        break;
    case PC_EMIT_INT:
        pc_emit_printf(e, "%lld", (long long)*(const int64_t *)v);
        break;
    case PC_EMIT_BOOL:
        pc_emit_puts(e, *(const int *)v ? "true" : "false");
        break;
    case PC_EMIT_RATIO:
    case PC_EMIT_PCT: {
        double d = *(const double *)v;
        if (d != d || d > 1e300 || d < -1e300)
            pc_emit_puts(e, "null");       /* JSON has no NaN or infinity */
        else
            pc_emit_printf(e, base == PC_EMIT_RATIO ? "%.4f" : "%.2f", d);
        break;
    }
    case PC_EMIT_STR:
        pc_json_string(e, (const char *)v);
        break;
    case PC_EMIT_FLOAT: {
        double d = *(const double *)v;
        if (d != d || d > 1e300 || d < -1e300)
            pc_emit_puts(e, "null");
        else
            pc_emit_printf(e, "%.3f", d);
        break;
    }
    default:
        pc_emit_puts(e, "null");
    }
}

static int pc_human_u64(char *buf, unsigned long n, int base, uint64_t v, const char *sign)
{
    static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };

    switch (base) {
    case PC_EMIT_BYTES: {
        double d = (double)v;
        int u = -1;
        if (v < 1024)
            return pc_fmt(buf, n, "%s%llu B", sign, (unsigned long long)v);
        while (d >= 1024 && u < 5) {
            d /= 1024;
            u++;
        }
        return pc_fmt(buf, n, "%s%.1f %s", sign, d, units[u]);
    }
    case PC_EMIT_NSEC:
        if (v < 1000)
            return pc_fmt(buf, n, "%s%llu ns", sign, (unsigned long long)v);
        if (v < 1000000)
            return pc_fmt(buf, n, "%s%.1f us", sign, (double)v / 1e3);
        if (v < 1000000000)
            return pc_fmt(buf, n, "%s%.1f ms", sign, (double)v / 1e6);
        return pc_fmt(buf, n, "%s%.2f s", sign, (double)v / 1e9);
    default:
        return pc_fmt(buf, n, "%s%'llu", sign, (unsigned long long)v);
    }
}

/* Strings in text output: control characters become '?' so a value cannot
 * break the line structure. */
static int pc_human_str(char *buf, unsigned long n, const char *s)
{
    unsigned long i = 0, len = 0;

    for (; s[len]; len++) {
        unsigned char c = (unsigned char)s[len];
        if (i + 1 < n)
            buf[i++] = (c < 0x20 || c == 0x7f) ? '?' : (char)c;
    }
    if (n)
        buf[i] = '\0';
    return (int)len;
}

int pc_emit_human(char *buf, unsigned long n, int type, const void *v)
{
    int base = type & ~PC_EMIT_SIGNED;

    if (!v)
        return pc_fmt(buf, n, "n/a");
    switch (base) {
    case PC_EMIT_COUNT:
    case PC_EMIT_BYTES:
    case PC_EMIT_NSEC:
        if (type & PC_EMIT_SIGNED) {
            int64_t s = *(const int64_t *)v;
            uint64_t mag = s < 0 ? 0 - (uint64_t)s : (uint64_t)s;
            return pc_human_u64(buf, n, base, mag, s < 0 ? "-" : "");
        }
        return pc_human_u64(buf, n, base, *(const uint64_t *)v, "");
    case PC_EMIT_INT:
        return pc_fmt(buf, n, "%lld", (long long)*(const int64_t *)v);
    case PC_EMIT_BOOL:
        return pc_fmt(buf, n, "%s", *(const int *)v ? "yes" : "no");
    case PC_EMIT_RATIO:
        return pc_fmt(buf, n, "%.1f%%", *(const double *)v * 100);
    case PC_EMIT_PCT:
        return pc_fmt(buf, n, "%.1f%%", *(const double *)v);
    case PC_EMIT_STR:
        return pc_human_str(buf, n, (const char *)v);
    case PC_EMIT_FLOAT:
        return pc_fmt(buf, n, "%.2f", *(const double *)v);
    }
    return pc_fmt(buf, n, "?");
}

/* ---- structure ---------------------------------------------------------- */

static void pc_text_prefix(struct pc_emitter *e)
{
    pc_emit_printf(e, "pincache[%d]: ", e->pid);
}

/* JSON: the separator and indentation before a new member at this depth. */
static void pc_json_member(struct pc_emitter *e, const char *key)
{
    int i;

    if (e->depth > 0) {
        pc_emit_puts(e, e->items[e->depth] ? ",\n" : "\n");
        for (i = 0; i < e->depth; i++)
            pc_emit_puts(e, "  ");
    }
    e->items[e->depth] = 1;
    if (key) {
        pc_json_string(e, key);
        pc_emit_puts(e, ": ");
    }
}

static void pc_json_open(struct pc_emitter *e, const char *key, char open, char close)
{
    if (e->depth + 1 >= PC_EMIT_DEPTH) {
        if (!e->err)
            e->err = -E2BIG;           /* a caller bug; the output is void */
        return;
    }
    pc_json_member(e, key);
    pc_emit_putn(e, &open, 1);
    e->depth++;
    e->items[e->depth] = 0;
    e->closer[e->depth] = close;
}

static void pc_json_close(struct pc_emitter *e)
{
    int i, had;

    if (e->depth == 0)
        return;
    had = e->items[e->depth];
    e->depth--;
    if (had) {
        pc_emit_puts(e, "\n");
        for (i = 0; i < e->depth; i++)
            pc_emit_puts(e, "  ");
    }
    pc_emit_putn(e, &e->closer[e->depth + 1], 1);
}

void pc_emit_init(struct pc_emitter *e, int fd, int format, int pid, int detail)
{
    memset(e, 0, sizeof *e);
    e->fd = fd;
    e->format = format;
    e->pid = pid;
    e->detail = detail;
}

void pc_emit_begin(struct pc_emitter *e, const char *title)
{
    if (e->format == PC_EMIT_JSON) {
        pc_json_open(e, NULL, '{', '}');
    } else if (e->detail && title) {
        pc_text_prefix(e);
        pc_emit_printf(e, "%s:\n", title);
    }
}

int pc_emit_end(struct pc_emitter *e)
{
    if (e->format == PC_EMIT_JSON) {
        while (e->depth > 0)
            pc_json_close(e);
        pc_emit_puts(e, "\n");
    }
    pc_emit_flush(e);
    return e->err;
}

void pc_emit_dict_begin(struct pc_emitter *e, const char *key, const char *title)
{
    if (e->format == PC_EMIT_JSON) {
        pc_json_open(e, key, '{', '}');
    } else if (e->detail && title) {
        pc_text_prefix(e);
        pc_emit_printf(e, "%s:\n", title);
    }
}

void pc_emit_dict_end(struct pc_emitter *e)
{
    if (e->format == PC_EMIT_JSON)
        pc_json_close(e);
}

void pc_emit_array_begin(struct pc_emitter *e, const char *key, const char *title)
{
    if (e->format == PC_EMIT_JSON)
        pc_json_open(e, key, '[', ']');
    e->title = title;
}

void pc_emit_array_end(struct pc_emitter *e)
{
    if (e->format == PC_EMIT_JSON)
        pc_json_close(e);
    e->title = NULL;
}

void pc_emit_kv(struct pc_emitter *e, const char *key, const char *help, int type,
                const void *value)
{
    char val[64];

    if (e->format == PC_EMIT_JSON) {
        pc_json_member(e, key);
        pc_json_value(e, type, value);
        return;
    }
    if (!e->detail)
        return;
    pc_emit_human(val, sizeof val, type, value);
    pc_text_prefix(e);
    /* The help apart: a long one must not lose its end (and the line's
     * newline) to pc_emit_printf's bound. */
    pc_emit_printf(e, "  %-22s %14s  ", key, val);
    pc_emit_puts(e, help ? help : "");
    pc_emit_puts(e, "\n");
}

void pc_emit_pairs(struct pc_emitter *e, const char *key, const uint64_t *a, const uint64_t *b,
                   unsigned n)
{
    unsigned i;

    if (e->format != PC_EMIT_JSON)
        return;
    pc_json_member(e, key);
    pc_emit_puts(e, "[");
    for (i = 0; i < n; i++) {
        if (b)
            pc_emit_printf(e, "%s[%llu, %llu]", i ? ", " : "", (unsigned long long)a[i],
                           (unsigned long long)b[i]);
        else
            pc_emit_printf(e, "%s%llu", i ? ", " : "", (unsigned long long)a[i]);
    }
    pc_emit_puts(e, "]");
}

void pc_emit_line(struct pc_emitter *e, const char *fmt, ...)
{
    char line[PC_EMIT_LINE];
    char safe[PC_EMIT_LINE];
    va_list ap;

    va_start(ap, fmt);
    pc_vfmt(line, sizeof line, fmt, ap);
    va_end(ap);
    if (e->format == PC_EMIT_JSON) {
        pc_json_member(e, NULL);
        pc_json_string(e, line);
        return;
    }
    pc_human_str(safe, sizeof safe, line);
    pc_text_prefix(e);
    if (e->title)
        pc_emit_printf(e, "%s: ", e->title);
    pc_emit_puts(e, safe);
    pc_emit_puts(e, "\n");
}
