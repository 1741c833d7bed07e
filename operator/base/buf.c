/* Bounded buffers. */
#include "buf.h"

int buf_append(Buf *b, const void *p, size_t n)
{
        assert_return(b, -EINVAL);
        if (n == 0)
                return 0;
        if (b->max && (b->len + n > b->max || b->len + n < b->len))
                return -E2BIG;
        if (b->len + n + 1 > b->cap) {
                size_t cap = MAX(b->cap * 2, b->len + n + 1);
                cap = MAX(cap, (size_t) 256);
                if (b->max)
                        cap = MIN(cap, b->max + 1);
                char *d = realloc(b->data, cap);
                if (!d)
                        return -ENOMEM;
                b->data = d;
                b->cap = cap;
        }
        memcpy(b->data + b->len, p, n);
        b->len += n;
        b->data[b->len] = 0;
        return 0;
}

void buf_consume(Buf *b, size_t n)
{
        if (n >= b->len) {
                b->len = 0;
                if (b->data)
                        b->data[0] = 0;
                return;
        }
        memmove(b->data, b->data + n, b->len - n);
        b->len -= n;
        b->data[b->len] = 0;
}

void buf_reset(Buf *b)
{
        b->len = 0;
        if (b->data)
                b->data[0] = 0;
}

void buf_free(Buf *b)
{
        b->data = mfree(b->data);
        b->len = b->cap = 0;
}

char *buf_steal(Buf *b)
{
        char *d = b->data;
        b->data = NULL;
        b->len = b->cap = 0;
        return d;
}
