/* Small macros every file uses: scope-bound cleanup, ownership transfer and
 * argument checks on public entry points, in the style of systemd. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f)   __attribute__((cleanup(f)))
#define _unused_       __attribute__((unused))
#define _noreturn_     __attribute__((noreturn))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _warn_unused_  __attribute__((warn_unused_result))
#define _likely_(x)    __builtin_expect(!!(x), 1)
#define _unlikely_(x)  __builtin_expect(!!(x), 0)

#define ELEMENTSOF(a)    (sizeof(a) / sizeof((a)[0]))
#define MIN(a, b)        ((a) < (b) ? (a) : (b))
#define MAX(a, b)        ((a) > (b) ? (a) : (b))
#define CLAMP(x, lo, hi) MIN(MAX((x), (lo)), (hi))

/* Give away ownership of a pointer held by a _cleanup_ variable. */
#define TAKE_PTR(p)                      \
        ({                               \
                __typeof__(p) _p_ = (p); \
                (p) = NULL;              \
                _p_;                     \
        })

#define TAKE_FD(fd)              \
        ({                       \
                int _fd_ = (fd); \
                (fd) = -EBADF;   \
                _fd_;            \
        })

/* Public entry points reject bad arguments instead of crashing. */
#define assert_return(expr, r)           \
        do {                             \
                if (_unlikely_(!(expr))) \
                        return (r);      \
        } while (false)

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func) \
        static inline void func##p(type *p)     \
        {                                       \
                if (*p)                         \
                        func(*p);               \
        }

#define _cleanup_free_ _cleanup_(freep)

static inline void freep(void *p)
{
        free(*(void **) p);
}

static inline void closep(int *fd)
{
        if (*fd >= 0)
                (void) close(*fd);
}

static inline void fclosep(FILE **f)
{
        if (*f)
                (void) fclose(*f);
}

static inline void *mfree(void *p)
{
        free(p);
        return NULL;
}

/* free() of a string that held a secret (a token, a key, a Secret's JSON): zeroed first,
 * so freed memory keeps no copy. NULL is fine. Returns NULL. */
static inline void *erase_and_free(char *s)
{
        if (s)
                explicit_bzero(s, strlen(s));
        free(s);
        return NULL;
}

static inline bool streq_ptr(const char *a, const char *b)
{
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}

#define streq(a, b) (strcmp((a), (b)) == 0)

static inline bool startswith(const char *s, const char *prefix)
{
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

static inline bool endswith(const char *s, const char *suffix)
{
        size_t n = strlen(s), k = strlen(suffix);
        return n >= k && strcmp(s + n - k, suffix) == 0;
}

static inline const char *strempty(const char *s)
{
        return s ? s : "";
}

/* Duplicate or abort: used only where a NULL return cannot be handled any
 * better than by dying (argument parsing at startup). Elsewhere use strdup. */
char *xstrdup(const char *s);
char *strdup_printf(const char *fmt, ...) _printf_(1, 2);
/* For functions that explain a failure in words: stores the formatted
 * message in *ret_error (if ret_error is set) and returns r. */
int set_error(char **ret_error, int r, const char *fmt, ...) _printf_(3, 4);
