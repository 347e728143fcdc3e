/* sizeclass.h - the cache's size classes (DESIGN.md "Size policy"): page
 * granularity up to 64 KiB, then 8 classes per power of two, so a class
 * wastes at most 12.5%. */
#ifndef PC_SIZECLASS_H
#define PC_SIZECLASS_H
#include <stddef.h>

#define PC_CLASS_PAGE     4096u
#define PC_CLASS_SMALL    (64u * 1024u)
#define PC_CLASS_MAXSHIFT 48         /* larger requests are not cached */
#define PC_NCLASS (16 + (PC_CLASS_MAXSHIFT - 16) * 8)

/* Class size for a request of n > 0 bytes, and its index; 0 when n is too
 * large to be cached. */
size_t pc_size_class(size_t n, unsigned *idx);

#endif
