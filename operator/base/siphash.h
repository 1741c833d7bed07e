/* SipHash-2-4 (Aumasson and Bernstein): a keyed 64-bit hash of short
 * strings. Keyed with a secret, it makes hash flooding (names chosen so that
 * they share one bucket) a guess instead of a computation. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define SIPHASH_KEY_SIZE 16

uint64_t siphash24(const uint8_t key[SIPHASH_KEY_SIZE], const void *data, size_t len);
