/*
 * fuzz_released — libFuzzer target for the released-replica file's decoder
 * (lib/node/released.c, jr__released_decode: wal_dir/released).
 *
 * The input is the file's bytes, decoded as given and with a valid checksum appended (so the
 * fuzzer reaches the parser behind the checksum on every run). Every record handed out must lie
 * within the input, name a non-zero group and carry a configuration jr__conf_decode accepts. A file
 * that decodes with each group once is encoded again from the records and must decode to the same
 * records (the encoder writes them in its map's order, so the bytes may differ). Any violation
 * traps.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "node/node.h"
#include "util/checksum.h"
#include "util/map.h"

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) __builtin_trap();                                                                \
    } while (0)

typedef struct fctx {
    const uint8_t *data;
    size_t size;
    jr__map m;
    int dup;
    size_t n;
} fctx;

static int each(void *arg, const jr__released_item *it)
{
    fctx *c = arg;
    CHECK(it->group != 0);
    CHECK(it->conf_len <= JR__RELEASED_CONF_MAX);
    if (c->data) CHECK(it->conf >= c->data && it->conf + it->conf_len <= c->data + c->size);
    jr__conf conf;
    CHECK(jr__conf_decode(&conf, it->conf, it->conf_len) == 0);
    c->n++;
    if (jr__map_get(&c->m, it->group)) {
        c->dup = 1;
        return 0;
    }
    jr__released *r = malloc(sizeof *r + it->conf_len);
    CHECK(r != NULL);
    r->commit = it->commit;
    r->conf_index = it->conf_index;
    r->conf_len = it->conf_len;
    memcpy(r->conf, it->conf, it->conf_len);
    CHECK(jr__map_put(&c->m, it->group, r) == 0);
    return 0;
}

/* The second decoding: every record must be the first one's. */
static int again(void *arg, const jr__released_item *it)
{
    fctx *c = arg;
    const jr__released *r = jr__map_get(&c->m, it->group);
    CHECK(r != NULL);
    CHECK(r->commit == it->commit && r->conf_index == it->conf_index);
    CHECK(r->conf_len == it->conf_len && memcmp(r->conf, it->conf, it->conf_len) == 0);
    c->n++;
    return 0;
}

static void one(const uint8_t *data, size_t size)
{
    fctx c = {data, size, {0}, 0, 0};
    jr__map_init(&c.m, NULL);
    int rc = jr__released_decode(data, size, each, &c);
    CHECK(rc == 0 || rc == JR_ECORRUPT);
    if (rc == 0 && !c.dup) {
        jr__buf b;
        jr__buf_init(&b, NULL);
        CHECK(jr__released_encode(&c.m, &b) == 0);
        size_t first = c.n;
        c.n = 0;
        c.data = NULL;
        CHECK(jr__released_decode(b.data, b.len, again, &c) == 0);
        CHECK(c.n == first);
        jr__buf_free(&b);
    }
    for (size_t i = 0; i < c.m.cap; i++)
        if (c.m.slots[i].key) free(c.m.slots[i].val);
    jr__map_free(&c.m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    one(data, size);
    uint8_t *sum = malloc(size + 8);
    CHECK(sum != NULL);
    memcpy(sum, data, size);
    jr__put_u64(sum + size, jr__xxh3(data, size));
    one(sum, size + 8);
    free(sum);
    return 0;
}
