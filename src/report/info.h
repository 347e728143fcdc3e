/* info.h - what the exit report knows beyond the counters: the process,
 * its mode, its times (the caller fills it: init.c, the CLI). */
#ifndef PC_REPORT_INFO_H
#define PC_REPORT_INFO_H
#include <stddef.h>
#include <stdint.h>

struct pc_report_info {
    int mode;             /* PC_MODE_* (options.h), or PC_REPORT_MODE_* below */
    int pid;
    size_t max_cached;    /* the cap in force */
    int cuda_used;        /* 0: no CUDA call went through us; no report */
    int forked_child;     /* this process is a fork() child */
    int broken;           /* CUDA context errors were seen (caching stopped) */
    uint64_t stage_native; /* bit N: device N reads pageable memory natively, staging left it alone */
    uint64_t start_ns;    /* pc_now_ns() at init */
    uint64_t end_ns;      /* pc_now_ns() now */
};

/* info->mode of a merge of reports of several modes (pincache merge), and of
 * a report read back whose mode is none of PINCACHE_MODE's. */
enum { PC_REPORT_MODE_MIXED = -1, PC_REPORT_MODE_UNKNOWN = -2 };

#endif
