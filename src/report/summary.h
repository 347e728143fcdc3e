/* summary.h - the exit report's summary lines (summary.c), through e as
 * text lines or JSON strings. */
#ifndef PC_REPORT_SUMMARY_H
#define PC_REPORT_SUMMARY_H
#include "report/figures.h"

void pc_report_summary(struct pc_emitter *e, const struct pc_report *r);

#endif
