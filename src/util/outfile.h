/* outfile.h - the one way pincache writes a file (the JSON report, the
 * trace).  Runs at exit, possibly as root, into paths a user named: system
 * calls and stack buffers only (no malloc, no stdio, no CUDA). */
#ifndef PC_OUTFILE_H
#define PC_OUTFILE_H
#include <stddef.h>

/* Longest path pc_write_file takes (and a report or trace template gives). */
#define PC_OUTFILE_PATH_MAX 4096

/* Write what emit(fd, arg) writes to path, as the kind of file path is:
 *   missing, or a regular file: whole or not at all.  A new file (mode 0644
 *       less the umask) is created with O_CREAT|O_EXCL|O_NOFOLLOW under an
 *       unpredictable name in path's folder, filled, then renamed to path;
 *   a symbolic link: followed, and the link kept.  Its final target is
 *       written as the kind of file it is; /proc/self/fd/N and /dev/fd/N
 *       (where /dev/stderr and /dev/stdout lead) are the process's own
 *       descriptor N, written where it stands;
 *   a FIFO or a character device: written through, opened
 *       O_WRONLY|O_APPEND|O_NONBLOCK (a FIFO nobody reads fails instead of
 *       hanging the exit; the writes then block as usual);
 *   anything else (a directory, a block device, a socket): refused.
 * Nothing that pincache did not create is truncated or replaced by
 * anything but a rename over a regular file.  A failure gives one warning
 * naming `what` and path.  Returns 0 or -errno. */
int pc_write_file(const char *path, const char *what, int (*emit)(int fd, void *arg), void *arg);

/* n (at most 32) unpredictable characters of [A-Za-z0-9] and a NUL into
 * out (n + 1 bytes), for a temporary file's name: created O_EXCL|O_NOFOLLOW
 * all the same (the name only makes a collision unlikely). */
void pc_random_chars(char *out, size_t n);

#endif
