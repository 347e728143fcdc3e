/* parse.h - option values as a user writes them (parse.c): options.c
 * parses PINCACHE_* with these, the report writes sizes back with them. */
#ifndef PC_PARSE_H
#define PC_PARSE_H
#include <stddef.h>

/* Each returns 0, or -EINVAL with *out untouched. */
/* 1/true/yes/on and 0/false/no/off, in any case. */
int pc_parse_bool(const char *s, int *out);
/* Digits and an optional unit: B, K/KB/KiB, M.., G.., T.. (1024-based, any case). */
int pc_parse_size(const char *s, size_t *out);
/* One of the '|'-separated choices, in any case; *out is its index. */
int pc_parse_enum(const char *s, const char *choices, int *out);
/* Decimal long with an optional sign; rejects overflow and trailing junk. */
int pc_parse_int(const char *s, long *out);

/* How many numbers a Linux list names ("0", "0-1", "0-3,8-11\n": the
 * format of /sys/devices/system/node/online); 0 for an empty or bad one. */
int pc_parse_count_list(const char *s);

/* A size as PINCACHE_MAX_CACHED would take it, in the largest unit that is
 * exact ("4G", "1536M", "1000").  snprintf-like return. */
int pc_format_size(char *buf, unsigned long n, size_t v);

#endif
