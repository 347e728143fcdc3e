/* hints.h - the exit report's recommendations (hints.c), through e as text
 * lines or JSON strings. */
#ifndef PC_REPORT_HINTS_H
#define PC_REPORT_HINTS_H
#include "report/figures.h"

void pc_report_hints(struct pc_emitter *e, const struct pc_report *r);

#endif
