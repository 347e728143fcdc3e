/* report.h - the exit report: a short text summary on stderr and/or the full
 * JSON document, both written through one emitter (emit.h): the document
 * (report.c), its figures (figures.c), sentences (summary.c, hints.c); where
 * it goes: output.h.  Everything here is safe to run from a destructor after
 * the CUDA runtime is gone: no CUDA calls, no malloc, no stdio. */
#ifndef PC_REPORT_H
#define PC_REPORT_H
#include "report/info.h"

struct pc_stats;

/* Lower layers, exposed for the tests (fixed inputs give golden output). */
enum { PC_REPORT_TEXT = 0, PC_REPORT_JSON = 1 };
#define PC_REPORT_DETAIL 1    /* text: add the table of every statistic */

/* One report in `format` to fd from the given statistics.  rank NULL means
 * unset; host NULL means "unknown".  Returns 0 or -errno of the first write
 * error. */
int pc_report_emit_fd(int fd, int format, int flags, const struct pc_report_info *info,
                      const struct pc_stats *st, const char *rank, const char *host);

#endif
