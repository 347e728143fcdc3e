/* cupti_load.h - finding libcupti, the functions pincache calls in it, and
 * the tools that use it (cupti_load.c); what is done with them: cupti.c. */
#ifndef PC_CUPTI_LOAD_H
#define PC_CUPTI_LOAD_H
#include <stddef.h>
#include <stdint.h>

typedef void (*pc_buf_request_fn)(uint8_t **buf, size_t *size, size_t *max_records);
typedef void (*pc_buf_complete_fn)(void *ctx, uint32_t stream, uint8_t *buf, size_t size, size_t valid);

/* The real CUPTI functions pincache calls itself. */
struct pc_cupti_fns {
    int (*register_callbacks)(pc_buf_request_fn, pc_buf_complete_fn);
    int (*enable)(int kind);
    int (*disable)(int kind);
    int (*flush_all)(uint32_t flag);
    int (*next_record)(uint8_t *buf, size_t valid, void **record);
    int (*dropped)(void *ctx, uint32_t stream, size_t *dropped);
    int (*timestamp)(uint64_t *ts);
};

/* The libcupti to use: the one the process loaded (any libcupti.so*), else
 * the one PINCACHE_CUPTI_LIB names, else the CUDA install next to the loaded
 * libcudart, else the default search path; NULL if none loads. */
void *pc_cupti_open(void);

/* Every function of fn from h, none of them pincache's own wrappers;
 * 1 if all were found, else 0. */
int pc_cupti_resolve(void *h, struct pc_cupti_fns *fn);

/* name from h, the libcupti in use, else past pincache (RTLD_NEXT); with no h
 * (the wrappers, before pincache loaded one), from the libcupti the caller
 * loaded, whose handle is kept in *callers (atomic).  Never one of pincache's
 * own wrappers; NULL if none. */
void *pc_cupti_lookup(void *h, void **callers, const char *name);

/* A loaded object that shows a tool using CUPTI (its name), or NULL. */
const char *pc_cupti_tool_loaded(void);

#endif
