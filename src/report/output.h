/* output.h - where the exit report goes (output.c). */
#ifndef PC_REPORT_OUTPUT_H
#define PC_REPORT_OUTPUT_H
#include "report/info.h"

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

/* Expand a PINCACHE_REPORT template into out.  '/' in substituted values
 * becomes '_'.  Returns 0, -EINVAL (empty) or -ENAMETOOLONG. */
int pc_report_path(char *out, unsigned long n, const char *tmpl, int pid,
                   const char *rank, const char *host);

#endif
