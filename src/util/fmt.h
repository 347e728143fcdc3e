/* fmt.h - the allocation-free formatter (fmt.c): the logger, the report and
 * the trace format with it, never with stdio, which may allocate. */
#ifndef PC_FMT_H
#define PC_FMT_H

/* Format into buf (size n) like snprintf, async-signal-safe subset:
 * %s %d %u %ld %lu %lld %llu %zu %x %lx %p %c %% and %.Nf for doubles.
 * Used by the logger and the report writer, which must not call malloc. */
int pc_vfmt(char *buf, unsigned long n, const char *fmt, __builtin_va_list ap);
int pc_fmt(char *buf, unsigned long n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The formatter also knows the ' flag (%'llu -> 1,234,567), width, '-', '0',
 * '+', ' ', '*' and %X/%i; %f precision is capped at 9 digits. */

/* a equals b, ignoring the case of ASCII letters (locale-free: the program
 * may have called setlocale).  The one case-insensitive compare of src/. */
int pc_strieq(const char *a, const char *b);

#endif
