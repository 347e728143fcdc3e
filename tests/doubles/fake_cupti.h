/* fake_cupti.h - what the fake libcupti.so.13 (fake_cupti.c) offers the
 * tests beyond the CUPTI entry points, under the version node FAKE_1.0. */
#ifndef FAKE_CUPTI_H
#define FAKE_CUPTI_H
#include <stdint.h>

struct fake_call {
    const char *fn;        /* the CUPTI function called */
    int by_pincache;       /* the caller was libpincache */
    long long arg;         /* the activity kind or flush flag, else 0 */
};

/* CUPTI's clock: CLOCK_REALTIME in nanoseconds. */
uint64_t fakeCuptiNow(void);
/* Make a kernel or copy record (times on fakeCuptiNow's clock; memory kinds
 * 1 pageable, 2 pinned, 3 device).  Kept, and delivered at the next flush,
 * only if its kind is enabled then; returns 1 if kept. */
int fakeCuptiKernel(uint64_t start, uint64_t end, uint32_t stream);
int fakeCuptiMemcpy(uint64_t start, uint64_t end, uint64_t bytes, int src_kind, int dst_kind,
                    uint32_t stream);
/* The calls so far, oldest first (at most max); returns how many. */
int fakeCuptiCalls(struct fake_call *out, int max);
/* 1 if req/comp are the buffer callbacks registered last. */
int fakeCuptiOwnsCallbacks(void *req, void *comp);
/* The enabled activity kinds, one bit per kind. */
unsigned long long fakeCuptiEnabled(void);

/* The CUPTI entry points the tests call themselves. */
int cuptiActivityRegisterCallbacks(void (*req)(uint8_t **, size_t *, size_t *),
                                   void (*comp)(void *, uint32_t, uint8_t *, size_t, size_t));
int cuptiActivityEnable(int kind);
int cuptiSubscribe(void **subscriber, void *callback, void *userdata);

#endif
