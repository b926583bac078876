#include "checksum.h"

#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>

uint64_t jr__xxh3(const void *data, size_t len)
{
    return XXH3_64bits(data, len);
}

uint64_t jr__xxh3_2(const void *a, size_t alen, const void *b, size_t blen)
{
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, a, alen);
    XXH3_64bits_update(&st, b, blen);
    return XXH3_64bits_digest(&st);
}
