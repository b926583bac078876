/*
 * rand — a small deterministic PRNG (xoshiro256**, seeded through splitmix64).
 *
 * Randomness is an input: every consumer owns its own state seeded by its caller, so a simulated
 * run replays exactly from a seed. Not for cryptography (libsodium is).
 */
#ifndef JR_UTIL_RAND_H
#define JR_UTIL_RAND_H

#include <stdint.h>

typedef struct jr__rand {
    uint64_t s[4];
} jr__rand;

static inline uint64_t jr__splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static inline void jr__rand_seed(jr__rand *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++) r->s[i] = jr__splitmix64(&seed);
}

static inline uint64_t jr__rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t jr__rand_next(jr__rand *r)
{
    uint64_t *s = r->s;
    uint64_t result = jr__rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = jr__rotl(s[3], 45);
    return result;
}

/* Uniform in [0, n); n > 0. (Lemire's multiply-shift; bias below 2^-32 for n < 2^32.) */
static inline uint64_t jr__rand_below(jr__rand *r, uint64_t n)
{
    __extension__ typedef unsigned __int128 u128;
    return (uint64_t)(((u128)jr__rand_next(r) * n) >> 64);
}

#endif
