/* log.h - the one logger: "pincache[pid]: level: msg" to stderr via write(2).
 * No allocation, a stack buffer, a recursion guard; never writes to stdout. */
#ifndef PC_LOG_H
#define PC_LOG_H
#include "util/choices.h"
#include "util/fmt.h"   /* pc_fmt: callers of the logger format their own lines too */

/* Levels, lowest first: PC_LOG_ERROR = 0 .. PC_LOG_DEBUG = 3, and the choices
 * of PINCACHE_LOG (options.def).  The logger owns them: options sets the
 * level, the logger does not read options. */
#define PC_LOG_LEVELS(C) C(LOG, ERROR, "error") C(LOG, WARN, "warn") C(LOG, INFO, "info") \
                         C(LOG, DEBUG, "debug")
enum { PC_LOG_LEVELS(PC_CHOICE_ENUM) };

void pc_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* At most one message per call site: `static int once; pc_log_once(&once, ...)`. */
void pc_log_once(int *flag, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define pc_error(...) pc_log(PC_LOG_ERROR, __VA_ARGS__)
#define pc_warn(...)  pc_log(PC_LOG_WARN,  __VA_ARGS__)
#define pc_info(...)  pc_log(PC_LOG_INFO,  __VA_ARGS__)
#define pc_debug(...) pc_log(PC_LOG_DEBUG, __VA_ARGS__)

/* write(2) all of buf, retrying on EINTR and short writes.  0 or -errno;
 * a closed pipe or RLIMIT_FSIZE gives -EPIPE or -EFBIG, not a signal
 * (util/sigguard.h), and a pipe, FIFO, socket or terminal that has no room
 * for 2 s -EAGAIN, not a hang.  Every write pincache makes goes through
 * here. */
int pc_write_all(int fd, const void *buf, unsigned long n);

/* "pincache[pid]: warning: " for level into buf; returns its length. */
int pc_log_prefix(char *buf, unsigned long n, int level);

/* The level from which on messages are printed up to: options.c sets it
 * from PINCACHE_LOG; until then only errors are printed. */
void pc_log_set_level(int level);

/* Forget how many warnings were printed (the rate limit); for tests. */
void pc_log_reset(void);

#endif
