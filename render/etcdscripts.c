#include "render/etcdscripts.h"

#include "base/buf.h"
#include "base/json.h"
#include "base/log.h"
#include "render/assets.h"

const char *const etcd_scripts_keys[] = {
        "cluster-backup.sh",
        "cluster-restore.sh",
        "disable-etcd.sh",
        "etcd-common-tools",
        "etcd-member-remove.sh",
        "quorum-restore.sh",
        NULL,
};

static bool shell_identifier(const char *s)
{
        if (!s || !*s || (*s >= '0' && *s <= '9'))
                return false;
        for (; *s; s++)
                if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
                      *s == '_'))
                        return false;
        return true;
}

static int cmp_env(const void *a, const void *b)
{
        return strcmp((*(const EnvVar *const *) a)->name, (*(const EnvVar *const *) b)->name);
}

int etcd_scripts_env(const EnvList *env, char **ret)
{
        _cleanup_free_ const EnvVar **sorted = NULL;
        Buf b = BUF_INIT(0);
        int r = 0;

        assert_return(env && ret, -EINVAL);
        if (env->n && !(sorted = calloc(env->n, sizeof *sorted)))
                return -ENOMEM;
        for (size_t i = 0; i < env->n; i++) {
                if (!shell_identifier(env->v[i].name))
                        return log_error_errno(-EINVAL, "etcd.env: \"%s\" is not a shell variable name",
                                               strempty(env->v[i].name));
                sorted[i] = &env->v[i];
        }
        if (env->n)
                qsort(sorted, env->n, sizeof *sorted, cmp_env);
        for (size_t i = 0; r >= 0 && i < env->n; i++) {
                _cleanup_free_ char *head = strdup_printf("export %s=\"", sorted[i]->name);
                r = head ? buf_append(&b, head, strlen(head)) : -ENOMEM;
                for (const char *c = strempty(sorted[i]->value); r >= 0 && *c; c++) {
                        if (*c == '"' || *c == '\\' || *c == '$' || *c == '`')
                                r = buf_append(&b, "\\", 1);
                        if (r >= 0)
                                r = buf_append(&b, c, 1);
                }
                if (r >= 0)
                        r = buf_append(&b, "\"\n", 2);
        }
        if (r < 0) {
                buf_free(&b);
                return r;
        }
        *ret = b.data ? buf_steal(&b) : strdup("");
        return *ret ? 0 : -ENOMEM;
}

int etcd_scripts_data(const EnvList *env, cJSON **ret)
{
        _cleanup_(cJSON_Deletep) cJSON *data = cJSON_CreateObject();
        _cleanup_free_ char *envfile = NULL;
        int r;

        assert_return(env && ret, -EINVAL);
        if (!data)
                return -ENOMEM;
        if ((r = etcd_scripts_env(env, &envfile)) < 0)
                return r;
        if (!cJSON_AddStringToObject(data, "etcd.env", envfile))
                return -ENOMEM;
        for (size_t i = 0; etcd_scripts_keys[i]; i++) {
                _cleanup_free_ char *path = strdup_printf("etcd-scripts/%s", etcd_scripts_keys[i]);
                const Asset *a = path ? asset_find(path) : NULL;
                if (!path)
                        return -ENOMEM;
                if (!a)
                        return log_error_errno(-ENOENT, "asset %s is not embedded", path);
                if (!cJSON_AddStringToObject(data, etcd_scripts_keys[i], a->data))
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(data);
        return 0;
}
