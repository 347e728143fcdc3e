/* fdsafe.h - the descriptors pincache opens stay out of the program's way.
 *
 * open() and memfd_create() return the lowest free number.  A program that
 * closed its stdin, stdout or stderr (a daemon, `prog <&- 2>&-`) finds the
 * number free again, and its own next open takes it; plainly, its writes
 * to a closed stderr fail.  Had pincache's node file or one of its memfds
 * taken 0, 1 or 2, the program's reads and prints (and pincache's own log
 * lines) would go into that file, and the program's open would get
 * another number.  So every descriptor pincache makes, even for a moment,
 * is moved to 3 or above. */
#ifndef PC_UTIL_FDSAFE_H
#define PC_UTIL_FDSAFE_H
#include <stddef.h>
#include <sys/types.h>

/* fd (just opened by pincache, close-on-exec) as a descriptor of 3 or
 * above, close-on-exec: fd itself, or a copy with fd closed.  -1 (errno
 * set, fd closed) when it cannot be moved; a negative fd is returned as
 * it is. */
int pc_fd_off_stdio(int fd);

/* open(path, flags | O_CLOEXEC, mode) through pc_fd_off_stdio. */
int pc_open(const char *path, int flags, unsigned mode);

/* Close every descriptor of this process that is the memfd named name
 * (memfd_create's name): in a fork() child, those a thread of the parent
 * had open at the fork.  System calls and a stack buffer only. */
void pc_fd_close_memfds(const char *name);

/* Up to n - 1 bytes of a small file (a /sys setting) into buf, NUL
 * terminated; buf is "" when it cannot be read.  No stdio (no allocation,
 * no descriptor below 3). */
void pc_read_small(const char *path, char *buf, size_t n);

#endif
