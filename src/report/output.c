/* output.c - where the exit report goes (see output.h): PINCACHE_REPORT's
 * choice of destination, the path template, the file written whole through
 * outfile.c, the summary on stderr.
 *
 * Runs at exit, possibly after the CUDA runtime was torn down: only system
 * calls and stack buffers. */
#include "config.h"
#include <errno.h>
#include <unistd.h>
#include "util/fmt.h"
#include "util/log.h"
#include "util/options.h"
#include "util/outfile.h"
#include "util/stats.h"
#include "report/output.h"
#include "report/report.h"

/* Append s to out, '/' and control characters replaced: a substituted value
 * must not change the directory the report lands in. */
static int pc_path_put(char *out, unsigned long n, unsigned long *len, const char *s, int literal)
{
    for (; *s; s++) {
        char c = *s;
        if (!literal && (c == '/' || (unsigned char)c < 0x20))
            c = '_';
        if (*len + 1 >= n)
            return -ENAMETOOLONG;
        out[(*len)++] = c;
    }
    return 0;
}

int pc_report_path(char *out, unsigned long n, const char *tmpl, int pid, const char *rank,
                   const char *host)
{
    unsigned long len = 0;
    char num[24];
    char one[2] = { 0, 0 };
    int r = 0;

    if (!n)
        return -ENAMETOOLONG;
    out[0] = '\0';
    if (!tmpl || !*tmpl)
        return -EINVAL;
    for (; *tmpl && !r; tmpl++) {
        if (*tmpl != '%' || !tmpl[1]) {
            one[0] = *tmpl;
            r = pc_path_put(out, n, &len, one, 1);
            continue;
        }
        switch (*++tmpl) {
        case 'p':
            pc_fmt(num, sizeof num, "%d", pid);
            r = pc_path_put(out, n, &len, num, 0);
            break;
        case 'r':
            r = pc_path_put(out, n, &len, rank && *rank ? rank : "0", 0);
            break;
        case 'h':
            r = pc_path_put(out, n, &len, host && *host ? host : "unknown", 0);
            break;
        case '%':
            r = pc_path_put(out, n, &len, "%", 1);
            break;
        default:      /* unknown: keep it as written */
            one[0] = '%';
            r = pc_path_put(out, n, &len, one, 1);
            one[0] = *tmpl;
            if (!r)
                r = pc_path_put(out, n, &len, one, 1);
        }
    }
    out[len < n ? len : n - 1] = '\0';
    return r;
}

struct pc_report_args {
    const struct pc_report_info *info;
    const struct pc_stats *st;
    const char *rank, *host;
};

static int pc_report_emit_json(int fd, void *arg)
{
    const struct pc_report_args *a = arg;
    return pc_report_emit_fd(fd, PC_REPORT_JSON, 0, a->info, a->st, a->rank, a->host);
}

static int pc_report_to_file(const char *tmpl, const struct pc_report_info *info,
                             const struct pc_stats *st, const char *rank, const char *host)
{
    static char path[PC_OUTFILE_PATH_MAX];   /* off the exiting thread's stack: once, at exit */
    struct pc_report_args a = { info, st, rank, host };
    int r;

    r = pc_report_path(path, sizeof path, tmpl, info->pid, rank, host);
    if (r) {
        pc_warn("PINCACHE_REPORT: cannot use '%.200s' as a path", tmpl);
        return r;
    }
    return pc_write_file(path, "report", pc_report_emit_json, &a);
}

void pc_report_write(const struct pc_report_info *info)
{
    const char *dest = pc_opt.report;     /* NULL: PINCACHE_REPORT=off */
    int flags = pc_opt.log >= PC_LOG_DEBUG ? PC_REPORT_DETAIL : 0;
    char host[256];
    static struct pc_stats st;   /* large; written once per process, at exit */
    const char *rank;

    if (!info || pc_opt.mode == PC_MODE_OFF || !dest)
        return;
    if (!info->cuda_used) {
        pc_info("no CUDA call went through pincache; no report");
        return;
    }
    pc_stats_snapshot(&st);
    rank = pc_env_rank();
    if (gethostname(host, sizeof host) != 0)
        host[0] = '\0';
    host[sizeof host - 1] = '\0';
    if (!host[0])
        pc_fmt(host, sizeof host, "unknown");

    if (!pc_strieq(dest, "stderr")) {
        if (pc_report_to_file(dest, info, &st, rank, host) == 0 && pc_opt.log < PC_LOG_INFO)
            return;
        /* Also the summary on stderr: asked for, or the file failed. */
    }
    pc_report_emit_fd(2, PC_REPORT_TEXT, flags, info, &st, rank, host);
}
