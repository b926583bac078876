/*
 * link_test — helpers of the secure-link tests: a cluster's keys and certificates, a pair of
 * links joined by in-memory byte pipes, and an allocator that counts calls and checks that
 * every block is zeroed before it is freed.
 */
#ifndef JR_TEST_LINK_H
#define JR_TEST_LINK_H

#include <stddef.h>
#include <stdint.h>

#include "jetraft.h"

#define T_NAMES 4

/* An authority and identities with certificates for names[i] in `cluster`. */
typedef struct t_keys {
    const char *cluster;
    jr_link_key *authority;
    jr_link_key *id[T_NAMES];
    uint8_t cert[T_NAMES][JR_LINK_CERT_MAX];
    size_t cert_len[T_NAMES];
} t_keys;

/* Makes keys for n (<= T_NAMES) names. */
void t_keys_make(t_keys *k, const char *cluster, const char *const *names, size_t n);
void t_keys_free(t_keys *k);

/* A growable byte buffer: what one side wrote and the other has not read yet. */
typedef struct t_bytes {
    uint8_t *data;
    size_t len, cap;
} t_bytes;
void t_bytes_put(t_bytes *b, const void *p, size_t n);
void t_bytes_drop(t_bytes *b, size_t n); /* drops the first n bytes */
void t_bytes_free(t_bytes *b);

/* Fills cfg for a link of `role` holding keys->id[self] and its certificate. */
void t_link_config(jr_link_config *cfg, const t_keys *keys, int role, size_t self,
                   const char *expect);

/* Moves a link's pending handshake output into b. */
void t_take_out(jr_link *l, t_bytes *b);

/* Feeds all of b into l, in pieces of at most `piece` bytes (0: all at once), collecting the
 * frames it opens (concatenated into frames, their count into *nframes, if not NULL). Returns
 * the first error (0 if none); the bytes fed are dropped from b. */
int t_feed(jr_link *l, t_bytes *b, size_t piece, t_bytes *frames, int *nframes);

/* Runs the handshake between d (dialer) and a (acceptor) by moving bytes both ways until
 * neither has anything to write. Returns the dialer's error, else the acceptor's. */
int t_handshake(jr_link *d, jr_link *a);

/* Seals one contiguous frame into b. */
int t_seal(jr_link *l, const void *frame, size_t len, t_bytes *b);

/* A counting allocator that keeps each block's size, so that free can check the block holds
 * only zero bytes (`zeroed` counts blocks freed all-zero, `dirty` the others). */
typedef struct t_alloc {
    jr_allocator a;
    uint64_t calls;
    int64_t live;
    uint64_t zeroed, dirty;
} t_alloc;
void t_alloc_init(t_alloc *t);

#endif
