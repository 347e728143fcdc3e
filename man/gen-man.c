/* gen-man.c - print the roff for pincache(7)'s generated sections from the
 * same X-macro lists the library uses, so the page cannot drift from them.
 *   gen-man env     the option list (ENVIRONMENT)
 *   gen-man stats   the statistics (REPORT FIELDS)
 *   gen-man apis    the per-API objects and their fields
 *   gen-man copies  the per-copy-kind objects and their fields
 * Built and run on the build machine by gen-man.sh; not installed. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include "util/choices.h"
#include "util/log.h"   /* PINCACHE_LOG's choices */

struct opt {
    const char *env, *type, *def, *valid, *help;
};

static const struct opt opts[] = {
#define OPT(field, env, type, def, valid, help) \
    { "PINCACHE_" #env, #type, def, PC_OPT_VALID(type, valid), help },
#include "options.def"
#undef OPT
};

struct stat_row {
    const char *name, *kind;
    int gauge;
    const char *help;
};

static const struct stat_row stats[] = {
#define STAT(name, kind, help) { #name, #kind, 0, help },
#define GAUGE(name, kind, help) { #name, #kind, 1, help },
#include "stats.def"
#undef STAT
#undef GAUGE
};

/* The PC_API/PC_COPY rows and their fields (stats.def). */
struct row {
    const char *key, *help;
};
struct field {
    const char *name, *kind, *merge, *help;
};
#define STAT(name, kind, help)
#define GAUGE(name, kind, help)
static const struct row apis[] = {
#define PC_API(id, key, help) { key, help },
#include "stats.def"
#undef PC_API
};
static const struct field api_fields[] = {
#define PC_API_FIELD(name, kind, merge, help) { #name, #kind, #merge, help },
#include "stats.def"
#undef PC_API_FIELD
};
static const struct row copies[] = {
#define PC_COPY(id, key, help) { key, help },
#include "stats.def"
#undef PC_COPY
};
static const struct field copy_fields[] = {
#define PC_COPY_FIELD(name, kind, merge, help) { #name, #kind, #merge, help },
#include "stats.def"
#undef PC_COPY_FIELD
};
#undef STAT
#undef GAUGE

/* Text for a roff body line: backslashes escaped, and a leading '.' or '\''
 * (a request) neutralised. */
static void roff_text(const char *s)
{
    if (*s == '.' || *s == '\'')
        fputs("\\&", stdout);
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\e", stdout);
        else
            putchar(*s);
    }
}

/* The help line as a sentence. */
static void roff_sentence(const char *s)
{
    size_t n = strlen(s);

    roff_text(s);
    if (n && s[n - 1] != '.')
        putchar('.');
    putchar('\n');
}

static void print_env(void)
{
    size_t i;

    for (i = 0; i < sizeof opts / sizeof opts[0]; i++) {
        const struct opt *o = &opts[i];
        printf(".TP\n\\fB%s\\fR=", o->env);
        if (!strcmp(o->type, "ENUM")) {
            const char *c = o->valid;
            while (*c) {
                size_t n = strcspn(c, "|");
                printf("\\fI%.*s\\fR", (int)n, c);
                c += n;
                if (*c == '|') {
                    printf("|");
                    c++;
                }
            }
        } else {
            printf("\\fI%s\\fR", !strcmp(o->type, "BOOL") ? "bool"
                               : !strcmp(o->type, "SIZE") ? "size"
                               : !strcmp(o->type, "INT") ? "integer" : "string");
        }
        printf(" (");
        if (strcmp(o->type, "ENUM") && o->valid && strstr(o->valid, "..")) {
            const char *dots = strstr(o->valid, "..");
            printf("\\fB%.*s\\fR to \\fB%s\\fR; ", (int)(dots - o->valid), o->valid, dots + 2);
        }
        printf("default \\fB");
        roff_text(o->def);
        printf("\\fR)\n");
        roff_sentence(o->help);
    }
}

static void print_stats(void)
{
    size_t i;

    for (i = 0; i < sizeof stats / sizeof stats[0]; i++) {
        const struct stat_row *s = &stats[i];
        const char *unit = !strcmp(s->kind, "BYTES") ? "bytes"
                         : !strcmp(s->kind, "NSEC") ? "nanoseconds" : "count";
        printf(".TP\n");
        if (s->gauge)
            printf(".BR %s \", \" %s_peak \" (%s)\"\n", s->name, s->name, unit);
        else
            printf(".BR %s \" (%s)\"\n", s->name, unit);
        if (s->gauge) {
            roff_text(s->help);
            printf(": the level at exit, and the highest it reached.\n");
        } else {
            roff_sentence(s->help);
        }
    }
}

static const char *unit_of(const char *kind)
{
    return !strcmp(kind, "BYTES") ? "bytes" : !strcmp(kind, "NSEC") ? "nanoseconds" : "count";
}

/* The row names, then the fields every row has. */
static void print_rows(const struct row *rows, size_t nrows, const struct field *fields,
                       size_t nfields)
{
    size_t i;

    for (i = 0; i < nrows; i++) {
        printf(".TP\n.B %s\n", rows[i].key);
        roff_sentence(rows[i].help);
    }
    printf(".PP\nEach member is an object with these fields:\n");
    for (i = 0; i < nfields; i++) {
        printf(".TP\n.BR %s \" (%s%s)\"\n", fields[i].name, unit_of(fields[i].kind),
               !strcmp(fields[i].merge, "MAX") ? "; pincache merge keeps the largest" : "");
        roff_sentence(fields[i].help);
    }
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "env")) {
        print_env();
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "stats")) {
        print_stats();
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "apis")) {
        print_rows(apis, sizeof apis / sizeof apis[0], api_fields, sizeof api_fields / sizeof api_fields[0]);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "copies")) {
        print_rows(copies, sizeof copies / sizeof copies[0], copy_fields,
                   sizeof copy_fields / sizeof copy_fields[0]);
        return 0;
    }
    if (argc == 2 && !strcmp(argv[1], "schema")) {
        printf("%d\n", PC_STATS_SCHEMA_VERSION);
        return 0;
    }
    fprintf(stderr, "usage: gen-man env|stats|apis|copies|schema\n");
    return 2;
}
