/* kubeconfig and in-cluster configuration. Files are YAML read into cJSON;
 * relative paths inside a kubeconfig are relative to that file. */
#include <libgen.h>
#include <stdarg.h>

#include "base/base64.h"
#include "base/fileio.h"
#include "base/json.h"
#include "base/log.h"
#include "base/yaml.h"
#include "config.h"

#define MAX_FILE_SIZE (4u << 20)

KubeConfig *kube_config_free(KubeConfig *c)
{
        if (!c)
                return NULL;
        free(c->server);
        free(c->tls.ca_pem);
        free(c->tls.cert_pem);
        if (c->tls.key_pem)
                explicit_bzero(c->tls.key_pem, strlen(c->tls.key_pem));
        free(c->tls.key_pem);
        free(c->tls.server_name);
        erase_and_free(c->token);
        free(c->token_file);
        free(c->namespace);
        free(c->source);
        return mfree(c);
}

typedef struct Doc {
        char *path;
        cJSON *json;
} Doc;

/* Finds entry `name` in list `key` ("clusters", "users", "contexts") across
 * the files in order; returns the inner object (`cluster`, `user`, `context`). */
static cJSON *find_named(Doc *docs, size_t n, const char *key, const char *inner, const char *name,
                         const Doc **ret_doc, int *ret_index)
{
        for (size_t i = 0; i < n; i++) {
                cJSON *item;
                int idx = 0;
                JSON_ARRAY_FOREACH (item, json_get_array(docs[i].json, key)) {
                        if (streq_ptr(json_get_string(item, "name"), name)) {
                                *ret_doc = &docs[i];
                                *ret_index = idx;
                                return json_get_object(item, inner);
                        }
                        idx++;
                }
        }
        return NULL;
}

static char *resolve_path(const Doc *d, const char *p)
{
        if (p[0] == '/')
                return strdup(p);
        _cleanup_free_ char *copy = strdup(d->path);
        if (!copy)
                return NULL;
        return strdup_printf("%s/%s", dirname(copy), p);
}

/* Loads PEM material either inline (`<field>-data`, base64) or from a file
 * (`<field>`), reporting the exact field on any problem. */
static int load_pem(const Doc *d, cJSON *obj, const char *where, const char *field, const char *marker,
                    char **ret, char **ret_error)
{
        _cleanup_free_ char *data_key = strdup_printf("%s-data", field);
        const char *data, *file;
        _cleanup_free_ char *pem = NULL;
        size_t len = 0;
        int r;

        if (!data_key)
                return -ENOMEM;
        data = json_get_string(obj, data_key);
        file = json_get_string(obj, field);
        if (json_get(obj, data_key) && !data)
                return set_error(ret_error, -EINVAL, "kubeconfig %s: %s.%s: must be a string of base64 PEM",
                                 d->path, where, data_key);
        if (json_get(obj, field) && !file)
                return set_error(ret_error, -EINVAL, "kubeconfig %s: %s.%s: must be a file path string",
                                 d->path, where, field);
        if (data) {
                r = base64_decode(data, &pem, &len);
                if (r < 0)
                        return set_error(ret_error, -EINVAL,
                                         "kubeconfig %s: %s.%s: not valid base64; encode the PEM file with "
                                         "'base64 -w0'",
                                         d->path, where, data_key);
        } else if (file) {
                _cleanup_free_ char *p = resolve_path(d, file);
                if (!p)
                        return -ENOMEM;
                r = read_full_file(p, MAX_FILE_SIZE, &pem, &len);
                if (r < 0)
                        return set_error(ret_error, r,
                                         "kubeconfig %s: %s.%s: cannot read %s: %s; fix the path", d->path,
                                         where, field, p, strerror(-r));
        } else
                return 0;
        if (!strstr(pem, "-----BEGIN ") || !strstr(pem, marker))
                return set_error(ret_error, -EINVAL, "kubeconfig %s: %s.%s: does not contain a PEM %s block",
                                 d->path, where, data ? data_key : field, marker);
        *ret = TAKE_PTR(pem);
        return 0;
}

static int read_token_file(const char *path, char **ret)
{
        _cleanup_free_ char *t = NULL;
        int r = read_full_file(path, 64u << 10, &t, NULL);
        if (r < 0)
                return r;
        t[strcspn(t, "\r\n")] = 0;
        if (!*t)
                return -ENODATA;
        *ret = TAKE_PTR(t);
        return 0;
}

static int config_from_docs(Doc *docs, size_t n, const char *context, KubeConfig **ret, char **ret_error)
{
        _cleanup_(kube_config_freep) KubeConfig *c = calloc(1, sizeof *c);
        const Doc *cd = NULL, *ud = NULL, *xd = NULL;
        char where[128];
        int ci = 0, ui = 0, xi = 0, r;

        if (!c)
                return -ENOMEM;
        if (!context)
                for (size_t i = 0; i < n && !context; i++) {
                        context = json_get_string(docs[i].json, "current-context");
                        if (context && !*context)
                                context = NULL;
                }
        if (!context)
                return set_error(ret_error, -EINVAL,
                                 "kubeconfig %s: current-context: not set; set it or pass --context",
                                 docs[0].path);
        cJSON *ctx = find_named(docs, n, "contexts", "context", context, &xd, &xi);
        if (!ctx)
                return set_error(
                        ret_error, -EINVAL,
                        "kubeconfig %s: contexts: no context named \"%s\"; add it or fix current-context",
                        docs[0].path, context);
        const char *cluster_name = json_get_string(ctx, "cluster");
        const char *user_name = json_get_string(ctx, "user");
        if (!cluster_name)
                return set_error(ret_error, -EINVAL,
                                 "kubeconfig %s: contexts[%d].context.cluster: missing; name a cluster",
                                 xd->path, xi);
        cJSON *cluster = find_named(docs, n, "clusters", "cluster", cluster_name, &cd, &ci);
        if (!cluster)
                return set_error(ret_error, -EINVAL,
                                 "kubeconfig %s: clusters: no cluster named \"%s\" (used by context \"%s\")",
                                 docs[0].path, cluster_name, context);
        (void) snprintf(where, sizeof where, "clusters[%d].cluster", ci);
        const char *server = json_get_string(cluster, "server");
        if (!server || !*server)
                return set_error(ret_error, -EINVAL,
                                 "kubeconfig %s: %s.server: missing; set it to https://HOST:PORT", cd->path,
                                 where);
        if (!startswith(server, "https://") && !startswith(server, "http://"))
                return set_error(
                        ret_error, -EINVAL,
                        "kubeconfig %s: %s.server: \"%s\" is not an http(s) URL; use https://HOST:PORT",
                        cd->path, where, server);
        c->server = strdup(server);
        if (!c->server)
                return -ENOMEM;
        size_t sl = strlen(c->server);
        while (sl > 0 && c->server[sl - 1] == '/')
                c->server[--sl] = 0;
        cJSON *insecure = json_get(cluster, "insecure-skip-tls-verify");
        if (insecure && !cJSON_IsBool(insecure))
                return set_error(ret_error, -EINVAL,
                                 "kubeconfig %s: %s.insecure-skip-tls-verify: must be true or false",
                                 cd->path, where);
        c->tls.insecure_skip_verify = cJSON_IsTrue(insecure);
        const char *sn = json_get_string(cluster, "tls-server-name");
        if (sn && !(c->tls.server_name = strdup(sn)))
                return -ENOMEM;
        r = load_pem(cd, cluster, where, "certificate-authority", "CERTIFICATE", &c->tls.ca_pem, ret_error);
        if (r < 0)
                return r;

        if (user_name) {
                cJSON *user = find_named(docs, n, "users", "user", user_name, &ud, &ui);
                if (!user)
                        return set_error(
                                ret_error, -EINVAL,
                                "kubeconfig %s: users: no user named \"%s\" (used by context \"%s\")",
                                docs[0].path, user_name, context);
                (void) snprintf(where, sizeof where, "users[%d].user", ui);
                r = load_pem(ud, user, where, "client-certificate", "CERTIFICATE", &c->tls.cert_pem,
                             ret_error);
                if (r < 0)
                        return r;
                r = load_pem(ud, user, where, "client-key", "PRIVATE KEY", &c->tls.key_pem, ret_error);
                if (r < 0)
                        return r;
                if (!!c->tls.cert_pem != !!c->tls.key_pem)
                        return set_error(
                                ret_error, -EINVAL,
                                "kubeconfig %s: %s: client-certificate and client-key must be given "
                                "together",
                                ud->path, where);
                const char *token = json_get_string(user, "token");
                const char *token_file = json_get_string(user, "tokenFile");
                if (json_get(user, "token") && !token)
                        return set_error(ret_error, -EINVAL, "kubeconfig %s: %s.token: must be a string",
                                         ud->path, where);
                if (token && !(c->token = strdup(token)))
                        return -ENOMEM;
                if (!token && token_file) {
                        c->token_file = resolve_path(ud, token_file);
                        if (!c->token_file)
                                return -ENOMEM;
                        r = read_token_file(c->token_file, &c->token);
                        if (r < 0)
                                return set_error(ret_error, r,
                                                 "kubeconfig %s: %s.tokenFile: cannot read %s: %s", ud->path,
                                                 where, c->token_file, strerror(-r));
                        c->token_read_at = now_usec(CLOCK_MONOTONIC);
                }
        }
        const char *ns = json_get_string(ctx, "namespace");
        c->namespace = strdup(ns && *ns ? ns : "default");
        c->source = strdup(docs[0].path);
        if (!c->namespace || !c->source)
                return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

typedef struct DocList {
        Doc docs[16];
        size_t n;
} DocList;

static void doc_list_done(DocList *l)
{
        for (size_t i = 0; i < l->n; i++) {
                free(l->docs[i].path);
                cJSON_Delete(l->docs[i].json);
        }
}

int kube_config_from_files(const char *paths, const char *context, KubeConfig **ret, char **ret_error)
{
        _cleanup_(doc_list_done) DocList l = {};
        _cleanup_free_ char *copy = NULL;
        int r;

        assert_return(paths && ret, -EINVAL);
        copy = strdup(paths);
        if (!copy)
                return -ENOMEM;
        for (char *save = NULL, *p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save)) {
                _cleanup_free_ char *err = NULL;
                Doc *d = &l.docs[l.n];
                if (l.n >= ELEMENTSOF(l.docs))
                        return set_error(ret_error, -E2BIG, "KUBECONFIG: more than %zu files",
                                         ELEMENTSOF(l.docs));
                r = yaml_parse_file(p, &d->json, &err);
                if (r < 0 && err)
                        return set_error(ret_error, r, "kubeconfig %s: not valid YAML: %s", p, err);
                if (r < 0)
                        return set_error(ret_error, r, "kubeconfig %s: cannot read: %s", p, strerror(-r));
                l.n++;
                d->path = strdup(p);
                if (!d->path)
                        return -ENOMEM;
                if (!cJSON_IsObject(d->json))
                        return set_error(
                                ret_error, -EINVAL,
                                "kubeconfig %s: top level must be a mapping (apiVersion: v1, kind: Config)",
                                p);
        }
        if (l.n == 0)
                return set_error(ret_error, -EINVAL, "KUBECONFIG: empty path list");
        return config_from_docs(l.docs, l.n, context, ret, ret_error);
}

int kube_config_in_cluster(const char *root, KubeConfig **ret, char **ret_error)
{
        _cleanup_(kube_config_freep) KubeConfig *c = calloc(1, sizeof *c);
        const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
        const char *sa = "/var/run/secrets/kubernetes.io/serviceaccount";
        _cleanup_free_ char *dir = NULL, *ca_path = NULL, *ns_path = NULL;
        int r;

        if (!c)
                return -ENOMEM;
        if (!host || !*host || !port || !*port)
                return set_error(
                        ret_error, -ENOENT,
                        "in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be "
                        "set; "
                        "outside a pod pass --kubeconfig");
        dir = strdup_printf("%s%s", root ? root : "", sa);
        if (!dir)
                return -ENOMEM;
        c->server = strchr(host, ':') ? strdup_printf("https://[%s]:%s", host, port)
                                      : strdup_printf("https://%s:%s", host, port);
        c->token_file = strdup_printf("%s/token", dir);
        ca_path = strdup_printf("%s/ca.crt", dir);
        ns_path = strdup_printf("%s/namespace", dir);
        c->source = strdup("in-cluster");
        if (!c->server || !c->token_file || !ca_path || !ns_path || !c->source)
                return -ENOMEM;
        r = read_token_file(c->token_file, &c->token);
        if (r < 0)
                return set_error(ret_error, r,
                                 "in-cluster config: %s: cannot read the service account token: %s",
                                 c->token_file, strerror(-r));
        c->token_read_at = now_usec(CLOCK_MONOTONIC);
        r = read_full_file(ca_path, MAX_FILE_SIZE, &c->tls.ca_pem, NULL);
        if (r < 0)
                return set_error(ret_error, r, "in-cluster config: %s: cannot read the cluster CA: %s",
                                 ca_path, strerror(-r));
        if (read_full_file(ns_path, 4096, &c->namespace, NULL) < 0)
                c->namespace = strdup("default");
        else
                c->namespace[strcspn(c->namespace, "\r\n")] = 0;
        if (!c->namespace)
                return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

int kube_config_load(const char *flag_path, const char *context, KubeConfig **ret, char **ret_error)
{
        const char *env = getenv("KUBECONFIG");

        if (flag_path && *flag_path)
                return kube_config_from_files(flag_path, context, ret, ret_error);
        if (env && *env)
                return kube_config_from_files(env, context, ret, ret_error);
        if (getenv("KUBERNETES_SERVICE_HOST"))
                return kube_config_in_cluster(NULL, ret, ret_error);
        const char *home = getenv("HOME");
        _cleanup_free_ char *p = strdup_printf("%s/.kube/config", home ? home : "");
        if (!p)
                return -ENOMEM;
        if (access(p, R_OK) < 0)
                return set_error(
                        ret_error, -ENOENT,
                        "no Kubernetes configuration: pass --kubeconfig, set $KUBECONFIG, or run in a pod");
        return kube_config_from_files(p, context, ret, ret_error);
}

const char *kube_config_get_token(KubeConfig *c, usec_t now)
{
        if (c->token_file && now >= c->token_read_at + 60 * USEC_PER_SEC) {
                char *t = NULL;
                if (read_token_file(c->token_file, &t) >= 0) {
                        erase_and_free(c->token); /* review L6 */
                        c->token = t;
                } else
                        log_debug("cannot re-read token file %s, keeping the old token", c->token_file);
                c->token_read_at = now;
        }
        return c->token;
}
