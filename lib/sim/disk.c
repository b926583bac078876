/*
 * disk — the fixture's disk faults (contract in include/jetraft/sim.h, "Disk faults"): each
 * node's memfs is damaged through lib/vfs/memfs.h, only while the node is down, so that a
 * running node never has its files changed under its open handles.
 */
#include "sim/sim_int.h"
#include "vfs/memfs.h"

/* The disk of crashed node i, or NULL (i out of range or node i running). */
static jr_vfs *down_disk(jr_sim *s, unsigned i)
{
    return s && i < s->n && !s->nodes[i].node ? s->nodes[i].vfs : NULL;
}

int jr_sim_files(jr_sim *s, unsigned i, int (*cb)(void *arg, const char *path, uint64_t size),
                 void *arg)
{
    if (!s || i >= s->n || !cb) return JR_EINVAL;
    return jr__memfs_walk(s->nodes[i].vfs, NULL, cb, arg);
}

int jr_sim_cut_tail(jr_sim *s, unsigned i, const char *path, uint64_t n)
{
    jr_vfs *v = down_disk(s, i);
    if (!v || !path) return JR_EINVAL;
    uint64_t len;
    int rc = jr__memfs_file_size(v, path, &len);
    if (rc) return rc;
    return jr__memfs_truncate(v, path, n < len ? len - n : 0);
}

int jr_sim_flip_bits(jr_sim *s, unsigned i, const char *path, uint64_t off, uint64_t len,
                     unsigned nbits)
{
    jr_vfs *v = down_disk(s, i);
    if (!v || !path) return JR_EINVAL;
    return jr__memfs_flip_bits(v, path, off, len, nbits);
}

int jr_sim_zero(jr_sim *s, unsigned i, const char *path, uint64_t off, uint64_t len)
{
    jr_vfs *v = down_disk(s, i);
    if (!v || !path) return JR_EINVAL;
    return jr__memfs_zero(v, path, off, len);
}

int jr_sim_remove_file(jr_sim *s, unsigned i, const char *path)
{
    jr_vfs *v = down_disk(s, i);
    if (!v || !path) return JR_EINVAL;
    return jr__memfs_delete(v, path);
}

int jr_sim_disk_save(jr_sim *s, unsigned i, jr_sim_disk **out)
{
    if (!out) return JR_EINVAL;
    *out = NULL;
    if (!s || i >= s->n) return JR_EINVAL;
    jr__memfs_copy *c;
    int rc = jr__memfs_save(s->nodes[i].vfs, NULL, &c);
    if (rc == 0) *out = (jr_sim_disk *)(void *)c;
    return rc;
}

int jr_sim_disk_restore(jr_sim *s, unsigned i, const jr_sim_disk *disk)
{
    jr_vfs *v = down_disk(s, i);
    if (!v || !disk) return JR_EINVAL;
    return jr__memfs_restore(v, NULL, (const jr__memfs_copy *)(const void *)disk);
}

void jr_sim_disk_free(jr_sim_disk *disk)
{
    jr__memfs_copy_free((jr__memfs_copy *)(void *)disk);
}
