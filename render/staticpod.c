/* The per-node etcd static pod shape: see staticpod.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "base/yaml-emit.h"
#include "base/yaml.h"
#include "render/assets.h"
#include "render/staticpod.h"

void env_list_done(EnvList *l)
{
        for (size_t i = 0; i < l->n; i++) {
                free(l->v[i].name);
                free(l->v[i].value);
        }
        free(l->v);
}

int env_list_add(EnvList *l, const char *name, const char *fmt, ...)
{
        va_list ap;
        char *value = NULL;

        if (l->n == l->cap) {
                size_t cap = MAX(l->cap * 2, (size_t) 32);
                EnvVar *v = reallocarray(l->v, cap, sizeof *v);
                if (!v)
                        return -ENOMEM;
                l->v = v;
                l->cap = cap;
        }
        va_start(ap, fmt);
        if (vasprintf(&value, fmt, ap) < 0)
                value = NULL;
        va_end(ap);
        char *n = strdup(name);
        if (!value || !n) {
                free(value);
                free(n);
                return -ENOMEM;
        }
        l->v[l->n++] = (EnvVar){n, value};
        return 0;
}

static int env_cmp(const void *a, const void *b)
{
        return strcmp(((const EnvVar *) a)->name, ((const EnvVar *) b)->name);
}

void env_list_sort(EnvList *l)
{
        if (l->n > 1)
                qsort(l->v, l->n, sizeof *l->v, env_cmp);
}

/* Every container with an `env` list: the generated variables first, then its own. */
static int inject_env(cJSON *pod, const EnvList *env)
{
        static const char *const lists[] = {"spec.initContainers", "spec.containers"};
        for (size_t k = 0; k < ELEMENTSOF(lists); k++) {
                cJSON *c;
                JSON_ARRAY_FOREACH (c, json_get_array(pod, lists[k])) {
                        cJSON *own = cJSON_GetObjectItemCaseSensitive(c, "env");
                        if (!cJSON_IsArray(own))
                                continue;
                        cJSON *list = cJSON_CreateArray();
                        if (!list)
                                return -ENOMEM;
                        for (size_t i = 0; i < env->n; i++) {
                                cJSON *e = cJSON_CreateObject();
                                if (!e || !cJSON_AddStringToObject(e, "name", env->v[i].name) ||
                                    !cJSON_AddStringToObject(e, "value", env->v[i].value)) {
                                        cJSON_Delete(e);
                                        cJSON_Delete(list);
                                        return -ENOMEM;
                                }
                                cJSON_AddItemToArray(list, e);
                        }
                        while (own->child) {
                                cJSON *e = cJSON_DetachItemViaPointer(own, own->child);
                                cJSON_AddItemToArray(list, e);
                        }
                        (void) cJSON_ReplaceItemInObjectCaseSensitive(c, "env", list);
                }
        }
        return 0;
}

/* A scalar that is exactly REVISION becomes a number once the installer
 * substitutes it: keep it quoted (labels and env values must be strings). */
static char *quote_revision(const char *yaml)
{
        static const char word[] = " REVISION";
        const size_t wl = sizeof word - 1;
        Buf b = BUF_INIT(0);
        int r = 0;

        for (const char *line = yaml; *line && r >= 0;) {
                const char *nl = strchr(line, '\n');
                size_t body = nl ? (size_t) (nl - line) : strlen(line);
                bool bare = body > wl && memcmp(line + body - wl, word, wl) == 0 &&
                            (line[body - wl - 1] == ':' || line[body - wl - 1] == '-');
                if (bare) {
                        r = buf_append(&b, line, body - wl + 1);
                        if (r >= 0)
                                r = buf_append(&b, "\"REVISION\"", 10);
                } else
                        r = buf_append(&b, line, body);
                if (r >= 0 && nl)
                        r = buf_append(&b, "\n", 1);
                line += body + (nl ? 1 : 0);
        }
        if (r < 0) {
                buf_free(&b);
                return NULL;
        }
        return buf_steal(&b);
}

/* What a node will read must still be a Pod whose revision label is a string. */
static int check_rendered(const char *name, const char *yaml)
{
        _cleanup_(cJSON_Deletep) cJSON *pod = NULL;
        _cleanup_free_ char *err = NULL, *text = NULL;
        Buf b = BUF_INIT(0);
        int r = 0;

        for (const char *p = yaml; *p && r >= 0;) {
                const char *hit = strstr(p, "REVISION");
                size_t len = hit ? (size_t) (hit - p) : strlen(p);
                r = buf_append(&b, p, len);
                if (r >= 0 && hit)
                        r = buf_append(&b, "7", 1);
                p += len + (hit ? strlen("REVISION") : 0);
        }
        if (r < 0 || !(text = buf_steal(&b))) {
                buf_free(&b);
                return -ENOMEM;
        }
        if (yaml_parse(text, strlen(text), &pod, &err) < 0 ||
            !streq_ptr(json_get_string(pod, "kind"), "Pod") ||
            !streq_ptr(json_get_string(pod, "metadata.labels.revision"), "7"))
                return log_error_errno(-EBADMSG, "internal: %s does not read back as a Pod: %s", name,
                                       strempty(err));
        return 0;
}

int staticpod_render(const char *asset, const TemplateVar *vars, size_t n_vars, const EnvList *env,
                     char **ret)
{
        const Asset *a = asset_find(asset);
        _cleanup_free_ char *text = NULL, *missing = NULL, *err = NULL, *yaml = NULL;
        _cleanup_(cJSON_Deletep) cJSON *pod = NULL;
        int r;

        if (!a)
                return log_error_errno(-ENOENT, "internal: %s is not embedded", asset);
        r = template_render(a->data, vars, n_vars, &text, &missing);
        if (r == -ENOENT)
                return log_error_errno(-EINVAL, "internal: %s: placeholder ${%s} has no value", asset,
                                       missing);
        if (r < 0)
                return r;
        r = yaml_parse(text, strlen(text), &pod, &err);
        if (r < 0)
                return log_error_errno(r, "internal: %s does not parse: %s", asset, strempty(err));
        if ((r = inject_env(pod, env)) < 0)
                return r;
        yaml = yaml_emit_string(pod);
        *ret = yaml ? quote_revision(yaml) : NULL;
        if (!*ret)
                return -ENOMEM;
        r = check_rendered(asset, *ret);
        if (r < 0)
                *ret = mfree(*ret);
        return r;
}
