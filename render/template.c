/* Template rendering and input validation. */
#include <ctype.h>

#include "base/buf.h"
#include "template.h"

int template_render(const char *tmpl, const TemplateVar *vars, size_t n_vars, char **ret, char **ret_missing)
{
        Buf out = BUF_INIT(0);
        const char *p = tmpl;
        int r = 0;

        assert_return(tmpl && ret, -EINVAL);
        while (r >= 0 && *p) {
                const char *open = strstr(p, "${");
                if (!open) {
                        r = buf_append(&out, p, strlen(p));
                        break;
                }
                const char *close = strchr(open + 2, '}');
                r = buf_append(&out, p, (size_t) (open - p));
                if (r < 0)
                        break;
                if (!close) {
                        r = -EBADMSG;
                        break;
                }
                size_t len = (size_t) (close - open - 2);
                const TemplateVar *v = NULL;
                for (size_t i = 0; i < n_vars; i++)
                        if (strlen(vars[i].name) == len && memcmp(vars[i].name, open + 2, len) == 0)
                                v = &vars[i];
                if (!v || !v->value) {
                        if (ret_missing)
                                *ret_missing = strndup(open + 2, len);
                        r = -ENOENT;
                        break;
                }
                r = buf_append(&out, v->value, strlen(v->value));
                p = close + 1;
        }
        if (r < 0) {
                buf_free(&out);
                return r;
        }
        *ret = out.data ? buf_steal(&out) : strdup("");
        return *ret ? 0 : -ENOMEM;
}

bool template_is_image_ref(const char *s)
{
        size_t n = s ? strlen(s) : 0;
        if (n == 0 || n > 512 || !isalnum((unsigned char) s[0]))
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char) s[i];
                if (!(isalnum(c) || strchr("._-/:@", c)))
                        return false;
        }
        return true;
}
