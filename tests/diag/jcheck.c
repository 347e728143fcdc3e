/* jcheck - read pincache's JSON output for the diagnostics tests (jansson).
 *
 *   jcheck expect REPORT.json [LABEL]   "expect PATH[+PATH...] VALUE [MAX]" lines on
 *                                       stdin -> one TAP point each, then the plan;
 *                                       with MAX, any value from VALUE to MAX
 *   jcheck get FILE.json PATH[+PATH...] print one value (integers, true/false, null);
 *                                       several paths: their sum
 *   jcheck trace TRACE.json             print "key value" facts about a Chrome trace
 *   jcheck merge M.json A.json B.json   TAP: M's stats/apis/copies are A's and B's
 *                                       added up (max_ns: the larger; histograms
 *                                       bucket by bucket)
 *   jcheck same A.json B.json           exit 0 when both documents are equal
 * Exit status 2 when a file does not parse. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int npoint, nfail;

static json_t *load(const char *path)
{
    json_error_t err;
    json_t *j = json_load_file(path, JSON_REJECT_DUPLICATES, &err);

    if (!j) {
        printf("not ok %d - %s parses: line %d: %s\n", ++npoint, path, err.line, err.text);
        exit(2);
    }
    return j;
}

/* a.b.c, where a key may itself not contain a dot. */
static json_t *at(json_t *root, const char *path)
{
    char buf[512], *p, *dot;

    snprintf(buf, sizeof buf, "%s", path);
    for (p = buf; root && p; p = dot) {
        dot = strchr(p, '.');
        if (dot)
            *dot++ = '\0';
        root = json_object_get(root, p);
    }
    return root;
}

/* Sum of the '+'-joined paths; -1 when one is missing or not an integer. */
static long long value(json_t *root, const char *paths)
{
    char buf[1024], *p, *plus;
    long long sum = 0;

    snprintf(buf, sizeof buf, "%s", paths);
    for (p = buf; p; p = plus) {
        json_t *v;
        plus = strchr(p, '+');
        if (plus)
            *plus++ = '\0';
        v = at(root, p);
        if (!json_is_integer(v))
            return -1;
        sum += json_integer_value(v);
    }
    return sum;
}

static int cmd_expect(const char *path, const char *label)
{
    json_t *root = load(path);
    char line[1200], what[1024];
    long long want, max, got;
    int n;

    while (fgets(line, sizeof line, stdin)) {
        if ((n = sscanf(line, "expect %1023s %lld %lld", what, &want, &max)) < 2)
            continue;
        got = value(root, what);
        npoint++;
        if (n == 2)
            snprintf(line, sizeof line, "= %lld", want);
        else
            snprintf(line, sizeof line, "in %lld..%lld", want, max);
        if (n == 2 ? got == want : got >= want && got <= max) {
            printf("ok %d - %s%s%s %s\n", npoint, label ? label : "", label ? ": " : "", what, line);
        } else {
            nfail++;
            printf("not ok %d - %s%s%s %s\n# got %lld\n", npoint, label ? label : "",
                   label ? ": " : "", what, line, got);
        }
    }
    json_decref(root);
    printf("1..%d\n", npoint);
    return nfail != 0;
}

static int cmd_get(const char *file, const char *path)
{
    json_t *root = load(file), *v;

    if (strchr(path, '+')) {          /* a sum of integers */
        long long sum = value(root, path);
        if (sum >= 0)
            printf("%lld\n", sum);
        else
            printf("null\n");
        json_decref(root);
        return sum < 0;
    }
    v = at(root, path);

    if (json_is_integer(v))
        printf("%lld\n", (long long)json_integer_value(v));
    else if (json_is_real(v))
        printf("%g\n", json_real_value(v));
    else if (json_is_string(v))
        printf("%s\n", json_string_value(v));
    else if (json_is_boolean(v))
        printf("%s\n", json_is_true(v) ? "true" : "false");
    else
        printf("null\n");
    json_decref(root);
    return v ? 0 : 1;
}

/* Facts about a trace: complete events and their kinds, malformed ones. */
static int cmd_trace(const char *file)
{
    json_t *root = load(file), *evs = json_object_get(root, "traceEvents"), *e;
    long long x = 0, sync = 0, terrible = 0, avoided = 0, hits = 0, misses = 0, bad = 0, meta = 0;
    long long byname[64] = { 0 };
    const char *names[64];
    int nnames = 0;
    size_t i;

    json_array_foreach(evs, i, e) {
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        const char *cat = json_string_value(json_object_get(e, "cat"));
        const char *cname = json_string_value(json_object_get(e, "cname"));
        json_t *args = json_object_get(e, "args");
        int k;

        if (ph && !strcmp(ph, "M")) {
            meta++;
            continue;
        }
        if (!ph || strcmp(ph, "X") || !name || !cat || !json_is_number(json_object_get(e, "ts")) ||
            !json_is_number(json_object_get(e, "dur")) || !json_is_integer(json_object_get(e, "pid")) ||
            !json_is_integer(json_object_get(e, "tid")) ||
            !json_is_integer(json_object_get(args, "bytes"))) {
            bad++;
            continue;
        }
        x++;
        if (!strcmp(cat, "sync")) {
            sync++;
            if (!json_is_true(json_object_get(args, "synced")))
                bad++;
        }
        if (cname && !strcmp(cname, "terrible"))
            terrible++;
        if (json_is_true(json_object_get(args, "sync_avoided")))
            avoided++;
        if (json_string_value(json_object_get(args, "cache"))) {
            hits += !strcmp(json_string_value(json_object_get(args, "cache")), "hit");
            misses += !strcmp(json_string_value(json_object_get(args, "cache")), "miss");
        }
        for (k = 0; k < nnames && strcmp(names[k], name); k++)
            ;
        if (k == nnames && nnames < 64)
            names[nnames++] = name;
        if (k < 64)
            byname[k]++;
    }
    printf("events %lld\nmeta %lld\nsync %lld\nterrible %lld\navoided %lld\nhits %lld\nmisses %lld\nbad %lld\n",
           x, meta, sync, terrible, avoided, hits, misses, bad);
    printf("written %lld\ndropped %lld\n", (long long)value(root, "otherData.events"),
           (long long)value(root, "otherData.dropped"));
    for (int k = 0; k < nnames; k++)
        printf("name.%s %lld\n", names[k], byname[k]);
    json_decref(root);
    return 0;
}

/* Every integer member of object m equals a's plus b's (max for max_ns). */
static void merge_obj(const char *where, json_t *m, json_t *a, json_t *b, long long *bad)
{
    const char *key;
    json_t *v;

    json_object_foreach(m, key, v) {
        json_t *va = json_object_get(a, key), *vb = json_object_get(b, key);
        char sub[512];

        snprintf(sub, sizeof sub, "%s.%s", where, key);
        if (json_is_object(v)) {
            merge_obj(sub, v, va, vb, bad);
        } else if (!strcmp(key, "hist")) {
            /* bucket lower bound -> count */
            long long sum = 0, ma = 0;
            size_t i;
            json_t *pair;
            json_array_foreach(v, i, pair) ma += json_integer_value(json_array_get(pair, 1));
            json_array_foreach(va, i, pair) sum += json_integer_value(json_array_get(pair, 1));
            json_array_foreach(vb, i, pair) sum += json_integer_value(json_array_get(pair, 1));
            json_array_foreach(v, i, pair) {
                long long lo = json_integer_value(json_array_get(pair, 0)), want = 0;
                size_t k;
                json_t *q;
                json_array_foreach(va, k, q) if (json_integer_value(json_array_get(q, 0)) == lo)
                    want += json_integer_value(json_array_get(q, 1));
                json_array_foreach(vb, k, q) if (json_integer_value(json_array_get(q, 0)) == lo)
                    want += json_integer_value(json_array_get(q, 1));
                if (want != json_integer_value(json_array_get(pair, 1))) {
                    printf("# %s bucket %lld: %lld, want %lld\n", sub, lo,
                           (long long)json_integer_value(json_array_get(pair, 1)), want);
                    (*bad)++;
                }
            }
            if (ma != sum) {
                printf("# %s: %lld calls, want %lld\n", sub, ma, sum);
                (*bad)++;
            }
        } else if (json_is_integer(v) && strcmp(key, "p50_ns") && strcmp(key, "p99_ns")) {
            long long x = json_integer_value(va), y = json_integer_value(vb);
            long long want = !strcmp(key, "max_ns") ? (x > y ? x : y) : x + y;
            if (json_integer_value(v) != want) {
                printf("# %s: %lld, want %lld\n", sub, (long long)json_integer_value(v), want);
                (*bad)++;
            }
        }
    }
}

static int cmd_merge(const char *fm, const char *fa, const char *fb)
{
    static const char *const sections[] = { "stats", "apis", "copies" };
    json_t *m = load(fm), *a = load(fa), *b = load(fb);

    for (unsigned i = 0; i < 3; i++) {
        long long bad = 0;
        json_t *sm = json_object_get(m, sections[i]);
        merge_obj(sections[i], sm, json_object_get(a, sections[i]), json_object_get(b, sections[i]), &bad);
        npoint++;
        if (json_is_object(sm) && json_object_size(sm) > 0 && !bad) {
            printf("ok %d - merge: %s is the sum of both reports (%zu members)\n", npoint, sections[i],
                   json_object_size(sm));
        } else {
            nfail++;
            printf("not ok %d - merge: %s is the sum of both reports (%lld differ)\n", npoint,
                   sections[i], bad);
        }
    }
    printf("1..%d\n", npoint);
    json_decref(m);
    json_decref(a);
    json_decref(b);
    return nfail != 0;
}

int main(int argc, char **argv)
{
    if (argc >= 3 && !strcmp(argv[1], "expect"))
        return cmd_expect(argv[2], argc > 3 ? argv[3] : NULL);
    if (argc == 4 && !strcmp(argv[1], "get"))
        return cmd_get(argv[2], argv[3]);
    if (argc == 3 && !strcmp(argv[1], "trace"))
        return cmd_trace(argv[2]);
    if (argc == 5 && !strcmp(argv[1], "merge"))
        return cmd_merge(argv[2], argv[3], argv[4]);
    if (argc == 4 && !strcmp(argv[1], "same")) {
        json_t *a = load(argv[2]), *b = load(argv[3]);
        int same = json_equal(a, b);
        json_decref(a);
        json_decref(b);
        return same ? 0 : 1;
    }
    fprintf(stderr, "usage: jcheck expect|get|trace|merge|same ...\n");
    return 2;
}
