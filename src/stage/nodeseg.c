/* nodeseg.c - the node's shared file: find or make it, check it before
 * trusting it, lock it, remove it (nodeseg.h; node.h says why).
 *
 * pincache may run as root, and the file's name is predictable, in a folder
 * every user may write (/dev/shm): nothing here follows a link, replaces a
 * file it did not make, or writes into a file before the checks passed.
 * System calls and stack buffers only. */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>      /* rename flags only: no stdio streams here */
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "stage/nodeseg.h"
#include "util/fdsafe.h"
#include "util/fmt.h"
#include "util/outfile.h"
#include "util/sigguard.h"

#ifndef RENAME_NOREPLACE
#define RENAME_NOREPLACE (1 << 0)
#endif

#define PC_NODESEG_TRIES 8           /* opens before giving up on a name that keeps changing */

int pc_nodeseg_lock(const struct pc_nodeseg *s, short type, off_t start, off_t len)
{
    struct flock l;

    memset(&l, 0, sizeof l);         /* l_pid must be 0 for an OFD lock */
    l.l_type = type;
    l.l_whence = SEEK_SET;
    l.l_start = start;
    l.l_len = len;
    if (fcntl(s->fd, F_OFD_SETLK, &l) == 0)
        return 0;
    return errno == EACCES ? -EAGAIN : -errno;
}

int pc_nodeseg_held(const struct pc_nodeseg *s, off_t at)
{
    struct flock l;

    memset(&l, 0, sizeof l);
    l.l_type = F_WRLCK;
    l.l_whence = SEEK_SET;
    l.l_start = at;
    l.l_len = 1;
    if (fcntl(s->fd, F_OFD_GETLK, &l) != 0)
        return -1;
    return l.l_type != F_UNLCK;
}

static void pc_nodeseg_pause(void)
{
    struct timespec ms = { 0, 1000000 };
    nanosleep(&ms, NULL);
}

/* Does the name still lead to the file open on fd (dev, ino)? */
static int pc_nodeseg_same(const char *path, dev_t dev, ino_t ino)
{
    struct stat st;
    return fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == dev && st.st_ino == ino;
}

/* Make the file whole under a temporary name, then rename it into place,
 * never over anything.  Written with pwrite, not through a mapping: a full
 * tmpfs (/dev/shm filled by a program's own shared memory) then fails the
 * write with ENOSPC instead of killing the process with SIGBUS, and the
 * file's pages exist before anyone maps it.  0, -EEXIST (someone else's is
 * there now: open that), or another -errno. */
static int pc_nodeseg_create(const char *dir, const char *path)
{
    /* 8 KiB, off the stack of the program's thread that makes the first
     * staged copy (it may be small): once per process, under the staging
     * lock (node.c). */
    static struct pc_node_file f;
    static char tmp[4096];
    char rnd[16];
    int fd, err = 0;

    pc_random_chars(rnd, 12);
    if ((size_t)pc_fmt(tmp, sizeof tmp, "%s/.pincache-node-v%u-%u.%s", dir, PC_NODE_VERSION,
                       (unsigned)geteuid(), rnd) >= sizeof tmp)
        return -ENAMETOOLONG;
    fd = pc_open(tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY, 0600);
    if (fd < 0)
        return -errno;
    memset(&f, 0, sizeof f);
    f.magic = PC_NODE_MAGIC;
    f.version = PC_NODE_VERSION;
    f.nslots = PC_NODE_SLOTS;
    f.size = sizeof f;
    f.uid = (uint64_t)geteuid();
    f.gen = 1;
    /* 0600 whatever the umask. */
    if (fchmod(fd, 0600) != 0) {
        err = -errno;
    } else {
        struct pc_sigguard g;     /* under `ulimit -f`: EFBIG, not SIGXFSZ */
        ssize_t w;

        pc_sigguard_begin(&g);
        w = pwrite(fd, &f, sizeof f, 0);
        if (w != (ssize_t)sizeof f)
            err = w < 0 ? -errno : -ENOSPC;
        pc_sigguard_end(&g, -err);
    }
    if (!err && syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) != 0)
        err = -errno;
    if (err)
        unlink(tmp);         /* ours (O_EXCL); a link put in its place is removed, not followed */
    close(fd);
    return err;
}

/* The checks before anything is written: 0, or why not. */
static const char *pc_nodeseg_check_stat(const struct stat *st)
{
    if (!S_ISREG(st->st_mode))
        return "not a regular file";
    if (st->st_uid != geteuid())
        return "owned by another user";
    if ((st->st_mode & 07777) != 0600)
        return "its mode is not 0600";
    if (st->st_nlink != 1)
        return "it has other links";
    if (st->st_size != (off_t)sizeof(struct pc_node_file))
        return "not the expected size";
    return NULL;
}

static const char *pc_nodeseg_check_header(const struct pc_node_file *f)
{
    if (__atomic_load_n(&f->magic, __ATOMIC_ACQUIRE) != PC_NODE_MAGIC || f->version != PC_NODE_VERSION ||
        f->nslots != PC_NODE_SLOTS || f->size != sizeof *f || f->uid != (uint64_t)geteuid())
        return "its header is not pincache's";
    return NULL;
}

static void pc_nodeseg_drop(struct pc_nodeseg *s)
{
    if (s->map)
        munmap(s->map, sizeof *s->map);
    if (s->fd >= 0)
        close(s->fd);
    s->map = NULL;
    s->fd = -1;
}

int pc_nodeseg_open(const char *dir, struct pc_nodeseg *s, const char **why)
{
    struct stat st;
    int r;

    s->fd = -1;
    s->map = NULL;
    *why = "the file kept changing";
    if (!dir || dir[0] != '/') {
        *why = "the folder is not an absolute path";
        return PC_NODE_UNAVAILABLE;
    }
    if ((size_t)pc_fmt(s->path, sizeof s->path, "%s/pincache-node-v%u-%u", dir, PC_NODE_VERSION,
                       (unsigned)geteuid()) >= sizeof s->path - 32) {
        *why = "the folder's name is too long";
        return PC_NODE_UNAVAILABLE;
    }
    for (int attempt = 0; attempt < PC_NODESEG_TRIES; attempt++) {
        /* O_NONBLOCK: a FIFO planted at the name must not hang the open. */
        s->fd = pc_open(s->path, O_RDWR | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK, 0);
        if (s->fd < 0) {
            if (errno == ELOOP) {
                *why = "a symbolic link";
                return PC_NODE_REFUSED;
            }
            if (errno == EMFILE || errno == ENFILE) {
                *why = "no file descriptor free";
                return PC_NODE_UNAVAILABLE;
            }
            if (errno != ENOENT) {
                /* Something is there that we may not or cannot open (another
                 * user's, a directory, a socket): not ours.  Or the folder
                 * itself is missing or closed to us. */
                int there = fstatat(AT_FDCWD, s->path, &st, AT_SYMLINK_NOFOLLOW) == 0;
                *why = there ? "not a file pincache can open" : "the folder cannot be used";
                return there ? PC_NODE_REFUSED : PC_NODE_UNAVAILABLE;
            }
            r = pc_nodeseg_create(dir, s->path);
            if (r != 0 && r != -EEXIST) {
                *why = r == -EINVAL || r == -ENOSYS ? "the folder cannot rename without replacing"
                                                    : "it cannot be made";
                return PC_NODE_UNAVAILABLE;
            }
            continue;        /* open what is there now */
        }
        if (fstat(s->fd, &st) != 0) {
            pc_nodeseg_drop(s);
            *why = "it cannot be examined";
            return PC_NODE_UNAVAILABLE;
        }
        if ((*why = pc_nodeseg_check_stat(&st)) != NULL) {
            pc_nodeseg_drop(s);
            return PC_NODE_REFUSED;
        }
        /* A member from now on; a leaver that holds the write lock is about
         * to remove the name: wait, then open again. */
        r = pc_nodeseg_lock(s, F_RDLCK, PC_NODE_LOCK_PRESENT, 1);
        if (r != 0) {
            pc_nodeseg_drop(s);
            if (r != -EAGAIN) {
                *why = "no open-file-description locks here";
                return PC_NODE_UNAVAILABLE;
            }
            pc_nodeseg_pause();
            *why = "the file kept changing";
            continue;
        }
        if (!pc_nodeseg_same(s->path, st.st_dev, st.st_ino)) {
            pc_nodeseg_drop(s);      /* removed or replaced meanwhile */
            continue;
        }
        s->map = mmap(NULL, sizeof *s->map, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
        if (s->map == MAP_FAILED) {
            s->map = NULL;
            pc_nodeseg_drop(s);
            *why = "it cannot be mapped";
            return PC_NODE_UNAVAILABLE;
        }
        if ((*why = pc_nodeseg_check_header(s->map)) != NULL) {
            pc_nodeseg_drop(s);
            return PC_NODE_REFUSED;
        }
        s->dev = st.st_dev;
        s->ino = st.st_ino;
        *why = NULL;
        return PC_NODE_JOINED;
    }
    pc_nodeseg_drop(s);
    return PC_NODE_UNAVAILABLE;
}

void pc_nodeseg_leave(struct pc_nodeseg *s)
{
    struct stat st;

    if (s->fd < 0)
        return;
    /* A program that closed our descriptor may have its own file under that
     * number now: neither unlocked, locked nor closed by us.  Our locks stay
     * (our mapping keeps their open file description) until the process
     * ends; the name stays too, for the next process to reuse. */
    if (fstat(s->fd, &st) != 0 || st.st_dev != s->dev || st.st_ino != s->ino) {
        s->fd = -1;
        return;
    }
    /* Ours dropped first: of members leaving together, the last to try
     * finds nobody's lock and removes the name (had each tried holding its
     * own read lock, each could have seen the other's, and none removed it).
     * A joiner holds its read lock before it trusts the name (open): either
     * it is seen here, or it finds the name gone and makes a new file. */
    pc_nodeseg_lock(s, F_UNLCK, 0, PC_NODE_LOCK_ALL);
    if (pc_nodeseg_lock(s, F_WRLCK, 0, PC_NODE_LOCK_ALL) == 0 && pc_nodeseg_same(s->path, s->dev, s->ino))
        unlink(s->path);
    close(s->fd);
    s->fd = -1;
}
