/* bysource.h - the report's pinned bytes by source (bysource.c): what the
 * program held pinned through each way CUDA pins host memory, live at exit
 * and at its peak, so that the bytes accounted for are all of them. */
#ifndef PC_REPORT_BYSOURCE_H
#define PC_REPORT_BYSOURCE_H
#include "report/figures.h"

/* JSON: the object "pinned" ({source: {live, peak}}); text: its rows with
 * the detail table only. */
void pc_report_pinned(struct pc_emitter *e, const struct pc_report *r);
/* Did the program pin anything other than through cudaHostAlloc and its
 * kind (registered, host pools, host VMM)? */
int pc_report_pinned_elsewhere(const struct pc_report *r);
/* The summary's line of it, the sources with anything pinned; none when
 * cudaHostAlloc's kind is all there is (the memory line says it). */
void pc_report_pinned_lines(struct pc_emitter *e, const struct pc_report *r);

#endif
