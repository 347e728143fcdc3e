/* options.h - PINCACHE_* configuration, generated from options.def. */
#ifndef PC_OPTIONS_H
#define PC_OPTIONS_H
#include <stddef.h>
#include "util/choices.h"
#include "util/log.h"   /* PC_LOG_*, the values of PINCACHE_LOG */

#define PC_OPT_CTYPE_BOOL int
#define PC_OPT_CTYPE_SIZE size_t
#define PC_OPT_CTYPE_INT  long
#define PC_OPT_CTYPE_STR  const char *
#define PC_OPT_CTYPE_PATH const char *   /* NULL: "off" */
#define PC_OPT_CTYPE_ENUM int

struct pc_options {
#define OPT(field, env, type, def, valid, help) PC_OPT_CTYPE_##type field;
#include "util/options.def"
#undef OPT
};

/* The ENUM options' values, from their lists in options.def (defined by
 * the include above): PC_MODE_CACHE = 0, PC_MODE_OBSERVE, PC_MODE_OFF, ... */
enum { PC_MODE_CHOICES(PC_CHOICE_ENUM) };
enum { PC_CUPTI_CHOICES(PC_CHOICE_ENUM) };
enum { PC_CLOCK_CHOICES(PC_CHOICE_ENUM) };
enum { PC_FENCE_CHOICES(PC_CHOICE_ENUM) };
enum { PC_STAGE_CHOICES(PC_CHOICE_ENUM) };
enum { PC_FAST_ALLOC_CHOICES(PC_CHOICE_ENUM) };
enum { PC_TEST_CUPTI_KINDS_CHOICES(PC_CHOICE_ENUM) };

/* A PINCACHE_MODE value as a user writes it ("observe"); NULL if none is. */
const char *pc_mode_name(int mode);

/* The effective configuration.  Written once by pc_options_init() before any
 * other module runs, read-only afterwards (no lock needed). */
extern struct pc_options pc_opt;

/* Read every PINCACHE_* variable.  A bad value logs one warning naming the
 * variable and keeps the default.  Prints the table when PINCACHE_HELP is
 * set and the effective values when PINCACHE_VERBOSE is set (both to stderr).
 * getenv is called nowhere else in the library. */
void pc_options_init(void);

/* Write "PINCACHE_X  default  help" lines (the PINCACHE_HELP text) to fd. */
void pc_options_print_help(int fd);
/* Write "PINCACHE_X=value" for every option (the PINCACHE_VERBOSE text) to fd. */
void pc_options_print_effective(int fd);

/* Environment values that are not options but that the report needs
 * (rank, host), read here so that getenv stays in one module.  The returned
 * string is owned by the environment; NULL when unset. */
const char *pc_env_rank(void);
/* Processes on this node, as a launcher says (LOCAL_WORLD_SIZE of torchrun,
 * OMPI_COMM_WORLD_LOCAL_SIZE, SLURM_NTASKS_PER_NODE); 1 when none does. */
long pc_env_local_procs(void);

/* The name of a variable that shows another CUDA tool in the process (one
 * that uses CUPTI or instruments the driver): CUDA_INJECTION64_PATH,
 * NVTX_INJECTION64_PATH, NSYS_PROFILING_SESSION_ID, or LD_PRELOAD naming a
 * sanitizer or injection library; NULL when none does. */
const char *pc_env_cuda_tool(void);

#endif
