/* report.h - the exit report: a short text summary on stderr and/or the full
 * JSON document, both written through one emitter (emit.h).  Everything here
 * is safe to run from a destructor after the CUDA runtime is gone: no CUDA
 * calls, no malloc, no stdio. */
#ifndef PC_REPORT_H
#define PC_REPORT_H
#include <stddef.h>
#include <stdint.h>

struct pc_stats;

/* What the core knows beyond the counters.  Filled by the caller. */
struct pc_report_info {
    const char *mode;     /* "cache", "observe", ... as it should be reported */
    int pid;
    size_t max_cached;    /* the cap in force */
    int cuda_used;        /* 0: no CUDA call went through us; no report */
    int forked_child;     /* this process is a fork() child */
    int broken;           /* CUDA context errors were seen (caching stopped) */
    uint64_t start_ns;    /* pc_now_ns() at init */
    uint64_t end_ns;      /* pc_now_ns() now */
};

/* Write the report where PINCACHE_REPORT says, from the live pc_stats:
 *   off     nothing;
 *   stderr  the text summary on stderr (whatever PINCACHE_LOG says);
 *   PATH    the JSON document to PATH after expanding %p (pid), %r (rank,
 *           "0" when unset), %h (host name) and %%; written by
 *           pc_write_file (outfile.h), so a reader never sees half a
 *           file and a link, FIFO or terminal is written through.  The summary
 *           also goes to stderr when PINCACHE_LOG is info or debug, or when
 *           the file cannot be written.
 * No report when PINCACHE_MODE=off or info->cuda_used is 0.  At
 * PINCACHE_LOG=debug the text also lists every statistic. */
void pc_report_write(const struct pc_report_info *info);

/* Lower layers, exposed for the tests (fixed inputs give golden output). */
enum { PC_REPORT_TEXT = 0, PC_REPORT_JSON = 1 };
#define PC_REPORT_DETAIL 1    /* text: add the table of every statistic */

/* One report in `format` to fd from the given statistics.  rank NULL means
 * unset; host NULL means "unknown".  Returns 0 or -errno of the first write
 * error. */
int pc_report_emit_fd(int fd, int format, int flags, const struct pc_report_info *info,
                      const struct pc_stats *st, const char *rank, const char *host);

/* Expand a PINCACHE_REPORT template into out.  '/' in substituted values
 * becomes '_'.  Returns 0, -EINVAL (empty) or -ENAMETOOLONG. */
int pc_report_path(char *out, unsigned long n, const char *tmpl, int pid,
                   const char *rank, const char *host);

#endif
