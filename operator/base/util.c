/* Tiny string helpers shared by every module. */
#include <stdarg.h>

#include "macro.h"

char *xstrdup(const char *s)
{
        char *r = strdup(s);
        if (!r)
                abort();
        return r;
}

char *strdup_printf(const char *fmt, ...)
{
        va_list ap;
        char *r = NULL;

        va_start(ap, fmt);
        int n = vasprintf(&r, fmt, ap);
        va_end(ap);
        return n < 0 ? NULL : r;
}

int set_error(char **ret_error, int r, const char *fmt, ...)
{
        va_list ap;
        char *m = NULL;

        va_start(ap, fmt);
        if (vasprintf(&m, fmt, ap) < 0)
                m = NULL;
        va_end(ap);
        if (ret_error)
                *ret_error = m;
        else
                free(m);
        return r;
}
