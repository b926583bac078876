/*
 * posix — the POSIX implementation of jr_vfs (jr_vfs_posix()).
 *
 * Owns: every open/pread/pwrite/fdatasync/rename/unlink/mkdir call of the library.
 *
 * Invariants and guarantees:
 *  - stateless: a jr_file is the file descriptor itself (fd + 1, so that it is never NULL), so
 *    the vfs allocates nothing and needs no allocator;
 *  - every descriptor is opened O_CLOEXEC;
 *  - pread/pwrite loop over EINTR and short transfers: pwrite writes all of buf or fails, pread
 *    returns short only at end of file;
 *  - sync is fdatasync (F_FULLFSYNC on Apple, where fsync does not reach the medium);
 *  - writeback is sync_file_range(SYNC_FILE_RANGE_WRITE) where Linux has it (it starts the
 *    range's writeback and waits for none of it), and does nothing elsewhere;
 *  - the directory is fsynced after a file is created, renamed or removed, and after mkdir
 *    creates a component, so those changes are durable when the call returns;
 *  - errno is mapped to JR_E*: ENOSPC/EDQUOT -> JR_ENOSPC, ENOENT/ENOTDIR -> JR_ENOTFOUND,
 *    EEXIST -> JR_EEXIST, ENOMEM -> JR_ENOMEM, anything else -> JR_EIO.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "jetraft.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif
#ifndef O_DIRECTORY
#define O_DIRECTORY 0
#endif

static int map_errno(int e)
{
    switch (e) {
    case ENOSPC:
#ifdef EDQUOT
    case EDQUOT:
#endif
        return JR_ENOSPC;
    case ENOENT:
    case ENOTDIR:
        return JR_ENOTFOUND;
    case EEXIST:
        return JR_EEXIST;
    case ENOMEM:
        return JR_ENOMEM;
    default:
        return JR_EIO;
    }
}

static int fd_of(jr_file *f)
{
    return (int)((intptr_t)f - 1);
}

static jr_file *file_of(int fd)
{
    return (jr_file *)(intptr_t)(fd + 1);
}

/* Writes the parent directory of path into out ("." if path has no '/'). */
static int parent_of(const char *path, char *out, size_t cap)
{
    const char *slash = strrchr(path, '/');
    size_t n;
    if (!slash) {
        if (cap < 2) return JR_EINVAL;
        memcpy(out, ".", 2);
        return 0;
    }
    n = (size_t)(slash - path);
    if (n == 0) n = 1; /* "/x" -> "/" */
    if (n + 1 > cap) return JR_EINVAL;
    memcpy(out, path, n);
    out[n] = 0;
    return 0;
}

static int fsync_dir_path(const char *dir)
{
    int fd, rc = 0;
    do {
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return map_errno(errno);
    while (fsync(fd) != 0) {
        if (errno == EINTR) continue;
        /* some file systems refuse fsync on a directory; that is not a durability failure */
        if (errno != EINVAL && errno != EBADF) rc = map_errno(errno);
        break;
    }
    close(fd);
    return rc;
}

static int fsync_parent(const char *path)
{
    char dir[PATH_MAX];
    int rc = parent_of(path, dir, sizeof dir);
    return rc ? rc : fsync_dir_path(dir);
}

static int p_open(void *ctx, const char *path, int flags, jr_file **out)
{
    int fd, created = 0;
    (void)ctx;
    *out = NULL;
    if ((flags & JR_O_CREATE) && (flags & JR_O_EXCL)) {
        do {
            fd = open(path, O_RDWR | O_CLOEXEC | O_CREAT | O_EXCL, 0644);
        } while (fd < 0 && errno == EINTR);
        created = fd >= 0;
    } else {
        int tr = (flags & JR_O_TRUNCATE) ? O_TRUNC : 0;
        for (;;) {
            fd = open(path, O_RDWR | O_CLOEXEC | tr);
            if (fd >= 0 || errno == EINTR) {
                if (fd >= 0) break;
                continue;
            }
            if (errno != ENOENT || !(flags & JR_O_CREATE)) break;
            fd = open(path, O_RDWR | O_CLOEXEC | O_CREAT | O_EXCL, 0644);
            if (fd >= 0) {
                created = 1;
                break;
            }
            if (errno != EEXIST && errno != EINTR) break; /* EEXIST: raced, retry plain open */
        }
    }
    if (fd < 0) return map_errno(errno);
    if (created) {
        int rc = fsync_parent(path);
        if (rc) {
            close(fd);
            return rc;
        }
    }
    *out = file_of(fd);
    return 0;
}

static int p_close(void *ctx, jr_file *f)
{
    (void)ctx;
    if (!f) return 0;
    /* close() is not retried on EINTR: on Linux the descriptor is released regardless */
    if (close(fd_of(f)) != 0 && errno != EINTR) return map_errno(errno);
    return 0;
}

static int p_pread(void *ctx, jr_file *f, void *buf, size_t len, uint64_t off, size_t *nread)
{
    size_t done = 0;
    (void)ctx;
    *nread = 0;
    if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off) return JR_EINVAL;
    while (done < len) {
        size_t chunk = len - done;
        if (chunk > ((size_t)1 << 30)) chunk = (size_t)1 << 30;
        ssize_t n = pread(fd_of(f), (char *)buf + done, chunk, (off_t)(off + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return map_errno(errno);
        }
        if (n == 0) break; /* end of file */
        done += (size_t)n;
    }
    *nread = done;
    return 0;
}

static int p_pwrite(void *ctx, jr_file *f, const void *buf, size_t len, uint64_t off)
{
    size_t done = 0;
    (void)ctx;
    if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off) return JR_EINVAL;
    while (done < len) {
        size_t chunk = len - done;
        if (chunk > ((size_t)1 << 30)) chunk = (size_t)1 << 30;
        ssize_t n = pwrite(fd_of(f), (const char *)buf + done, chunk, (off_t)(off + done));
        if (n < 0) {
            if (errno == EINTR) continue;
            return map_errno(errno);
        }
        if (n == 0) return JR_EIO; /* no progress and no error: refuse to spin */
        done += (size_t)n;
    }
    return 0;
}

static int p_sync(void *ctx, jr_file *f)
{
    (void)ctx;
    for (;;) {
#if defined(__APPLE__) && defined(F_FULLFSYNC)
        int r = fcntl(fd_of(f), F_FULLFSYNC);
#else
        int r = fdatasync(fd_of(f));
#endif
        if (r == 0) return 0;
        if (errno == EINTR) continue;
        return map_errno(errno);
    }
}

static int p_writeback(void *ctx, jr_file *f, uint64_t off, uint64_t len)
{
    (void)ctx;
    if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off) return JR_EINVAL;
#ifdef SYNC_FILE_RANGE_WRITE
    while (sync_file_range(fd_of(f), (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE) != 0)
        if (errno != EINTR) return map_errno(errno);
#else
    (void)f;
#endif
    return 0;
}

static int p_size(void *ctx, jr_file *f, uint64_t *out)
{
    struct stat st;
    (void)ctx;
    if (fstat(fd_of(f), &st) != 0) return map_errno(errno);
    *out = (uint64_t)st.st_size;
    return 0;
}

static int p_truncate(void *ctx, jr_file *f, uint64_t size)
{
    (void)ctx;
    if (size > (uint64_t)INT64_MAX) return JR_EINVAL;
    while (ftruncate(fd_of(f), (off_t)size) != 0) {
        if (errno == EINTR) continue;
        return map_errno(errno);
    }
    return 0;
}

static int p_rename(void *ctx, const char *from, const char *to)
{
    char d1[PATH_MAX], d2[PATH_MAX];
    int rc;
    (void)ctx;
    if ((rc = parent_of(from, d1, sizeof d1)) || (rc = parent_of(to, d2, sizeof d2))) return rc;
    if (rename(from, to) != 0) return map_errno(errno);
    rc = fsync_dir_path(d2);
    if (!rc && strcmp(d1, d2) != 0) rc = fsync_dir_path(d1);
    return rc;
}

static int p_remove(void *ctx, const char *path)
{
    (void)ctx;
    if (unlink(path) != 0) {
        if ((errno == EISDIR || errno == EPERM) && rmdir(path) == 0) return fsync_parent(path);
        return map_errno(errno);
    }
    return fsync_parent(path);
}

static int p_mkdir(void *ctx, const char *path)
{
    char buf[PATH_MAX];
    size_t n = strlen(path);
    struct stat st;
    (void)ctx;
    if (n == 0) return JR_EINVAL;
    if (n >= sizeof buf) return JR_EINVAL;
    memcpy(buf, path, n + 1);
    while (n > 1 && buf[n - 1] == '/') buf[--n] = 0;
    /* walk each prefix ending before a '/', then the whole path */
    for (size_t i = 1; i <= n; i++) {
        if (i < n && buf[i] != '/') continue;
        char save = buf[i];
        buf[i] = 0;
        if (mkdir(buf, 0755) == 0) {
            int rc = fsync_parent(buf);
            if (rc) return rc;
        } else if (errno != EEXIST) {
            return map_errno(errno);
        } else if (stat(buf, &st) != 0) {
            return map_errno(errno);
        } else if (!S_ISDIR(st.st_mode)) {
            return JR_EEXIST;
        }
        buf[i] = save;
    }
    return 0;
}

static int p_list(void *ctx, const char *dir, int (*cb)(void *arg, const char *name), void *arg)
{
    DIR *d;
    struct dirent *de;
    int rc = 0;
    (void)ctx;
    d = opendir(dir);
    if (!d) return map_errno(errno);
    for (;;) {
        errno = 0;
        de = readdir(d);
        if (!de) {
            if (errno) rc = map_errno(errno);
            break;
        }
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        rc = cb(arg, de->d_name);
        if (rc) break;
    }
    closedir(d);
    return rc;
}

static int p_sync_dir(void *ctx, const char *dir)
{
    (void)ctx;
    return fsync_dir_path(dir);
}

static jr_vfs posix_vfs = {
    .version = JR_VFS_VERSION,
    .open = p_open,
    .close = p_close,
    .pread = p_pread,
    .pwrite = p_pwrite,
    .sync = p_sync,
    .size = p_size,
    .truncate = p_truncate,
    .rename = p_rename,
    .remove = p_remove,
    .mkdir = p_mkdir,
    .list = p_list,
    .sync_dir = p_sync_dir,
    .writeback = p_writeback,
};

JR_API jr_vfs *jr_vfs_posix(void)
{
    return &posix_vfs;
}
