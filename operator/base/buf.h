/* A growable byte buffer with a hard maximum: everything filled from the
 * network goes through one, so an oversized body is -E2BIG, never an
 * unbounded allocation. Always NUL-terminated for convenience. */
#pragma once

#include "macro.h"

typedef struct Buf {
        char *data;
        size_t len;
        size_t cap;
        size_t max;
} Buf;

#define BUF_INIT(m) ((Buf){.max = (m)})

int buf_append(Buf *b, const void *p, size_t n);
/* Drops the first n bytes (framing: consumed lines). */
void buf_consume(Buf *b, size_t n);
void buf_reset(Buf *b);
void buf_free(Buf *b);
/* Hands the bytes out (NUL-terminated, possibly NULL when empty) and resets. */
char *buf_steal(Buf *b);
