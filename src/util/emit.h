/* emit.h - one emitter, two renderings (after jemalloc's emitter): the same
 * sequence of calls writes either a text report or JSON, so the two cannot
 * drift apart.
 *
 *   kv     a data point: JSON "key": value; text: a table row (only when
 *          `detail` is set; the short summary is made of lines)
 *   dict   JSON: a nested object; text: a titled block of rows (detail)
 *   array  JSON: an array of strings; text: nothing of its own
 *   line   a sentence: JSON a string in the current array; text a line
 *          "pincache[pid]: title: sentence" on its own
 *
 * Writes with write(2) from a buffer inside the struct: no malloc, no stdio,
 * safe at exit after the CUDA runtime is gone. */
#ifndef PC_EMIT_H
#define PC_EMIT_H
#include <stdint.h>

enum pc_emit_format { PC_EMIT_TEXT = 0, PC_EMIT_JSON = 1 };

/* What `value` points to.  A NULL value is written as null / "n/a". */
enum pc_emit_type {
    PC_EMIT_COUNT,  /* const uint64_t *  1,234 */
    PC_EMIT_BYTES,  /* const uint64_t *  1.5 GiB */
    PC_EMIT_NSEC,   /* const uint64_t *  12.3 ms */
    PC_EMIT_INT,    /* const int64_t *   an identifier: 4242, no separators */
    PC_EMIT_BOOL,   /* const int *       yes/no, true/false */
    PC_EMIT_RATIO,  /* const double *    0..1; text as a percentage */
    PC_EMIT_PCT,    /* const double *    already a percentage */
    PC_EMIT_STR,    /* const char *      the string itself */
    PC_EMIT_FLOAT,  /* const double *    a plain number: 12.35 */
};
/* Or'ed into COUNT/BYTES/NSEC: the value is an int64_t (gauges). */
#define PC_EMIT_SIGNED 0x100

#define PC_EMIT_BUF 4096
#define PC_EMIT_DEPTH 8

struct pc_emitter {
    int fd;
    int format;               /* PC_EMIT_TEXT or PC_EMIT_JSON */
    int pid;                  /* for the text prefix */
    int detail;               /* text: also print kvs as a table */
    int err;                  /* first write error (-errno), sticky */
    int depth;                /* JSON nesting */
    unsigned char items[PC_EMIT_DEPTH]; /* members written at each depth */
    char closer[PC_EMIT_DEPTH];          /* '}' or ']' for each open level */
    const char *title;        /* text title of the current array's lines */
    unsigned long len;
    char buf[PC_EMIT_BUF];
};

void pc_emit_init(struct pc_emitter *e, int fd, int format, int pid, int detail);
void pc_emit_begin(struct pc_emitter *e, const char *title);
/* Close everything and flush.  Returns 0 or the first write error. */
int pc_emit_end(struct pc_emitter *e);

void pc_emit_dict_begin(struct pc_emitter *e, const char *key, const char *title);
void pc_emit_dict_end(struct pc_emitter *e);
void pc_emit_array_begin(struct pc_emitter *e, const char *key, const char *title);
void pc_emit_array_end(struct pc_emitter *e);

void pc_emit_kv(struct pc_emitter *e, const char *key, const char *help, int type,
                const void *value);
/* JSON only: "key": [[a0, b0], [a1, b1], ...] on one line, or with b NULL
 * "key": [a0, a1, ...] (text: nothing). */
void pc_emit_pairs(struct pc_emitter *e, const char *key, const uint64_t *a, const uint64_t *b,
                   unsigned n);
void pc_emit_line(struct pc_emitter *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The text rendering of one value (also used to build summary sentences). */
int pc_emit_human(char *buf, unsigned long n, int type, const void *value);

#endif
