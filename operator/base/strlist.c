/* Comma-separated lists into a StrList (base/strlist.h). */
#include <ctype.h>

#include "macro.h"
#include "strlist.h"

int strlist_add_csv(StrList *l, const char *csv)
{
        assert_return(l && csv, -EINVAL);
        for (const char *p = csv; *p;) {
                const char *comma = strchr(p, ',');
                const char *end = comma ? comma : p + strlen(p);
                const char *a = p, *z = end;
                while (a < z && isspace((unsigned char) *a))
                        a++;
                while (z > a && isspace((unsigned char) z[-1]))
                        z--;
                if (z > a) {
                        char **v = realloc(l->v, (l->n + 2) * sizeof *v);
                        if (!v)
                                return -ENOMEM;
                        l->v = v;
                        if (!(v[l->n] = strndup(a, (size_t) (z - a))))
                                return -ENOMEM;
                        v[++l->n] = NULL;
                }
                p = comma ? comma + 1 : end;
        }
        return 0;
}

bool strlist_contains(const StrList *l, const char *s)
{
        for (size_t i = 0; l && i < l->n; i++)
                if (streq(l->v[i], s))
                        return true;
        return false;
}

void strlist_done(StrList *l)
{
        for (size_t i = 0; i < l->n; i++)
                free(l->v[i]);
        free(l->v);
        *l = (StrList){};
}
