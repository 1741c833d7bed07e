#include "config-file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/macro.h"
#include "base/yaml.h"

#define CONFIG_API_VERSION "operator.openshift.io/v1alpha1"
#define CONFIG_KIND        "GenericOperatorConfig"

/* FIELD of OBJ as a string: 0 and *ret NULL when absent, -EINVAL (and the message) when it is
 * there but not a non-empty string. */
static int take_string(const char *path, const cJSON *obj, const char *section, const char *field,
                       const char *example, char **ret, char **ret_error)
{
        const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, field) : NULL;

        *ret = NULL;
        if (!v || cJSON_IsNull(v))
                return 0;
        if (!cJSON_IsString(v) || !*v->valuestring)
                return set_error(ret_error, -EINVAL, "%s: %s.%s must be a non-empty string such as %s", path,
                                 section, field, example);
        *ret = strdup(v->valuestring);
        return *ret ? 0 : -ENOMEM;
}

static int take_duration(const char *path, const cJSON *obj, const char *field, usec_t *ret,
                         char **ret_error)
{
        const cJSON *v = obj ? cJSON_GetObjectItemCaseSensitive(obj, field) : NULL;

        *ret = 0;
        if (!v || cJSON_IsNull(v))
                return 0;
        if (!cJSON_IsString(v) || parse_duration(v->valuestring, ret) < 0 || *ret == 0)
                return set_error(ret_error, -EINVAL,
                                 "%s: leaderElection.%s must be a duration such as \"137s\" or \"2m\"", path,
                                 field);
        return 0;
}

/* A section: absent, null or an object. */
static int take_section(const char *path, const cJSON *root, const char *name, const cJSON **ret,
                        char **ret_error)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, name);

        *ret = NULL;
        if (!v || cJSON_IsNull(v))
                return 0;
        if (!cJSON_IsObject(v))
                return set_error(ret_error, -EINVAL, "%s: %s must be a mapping", path, name);
        *ret = v;
        return 0;
}

int operator_file_config_load(const char *path, OperatorFileConfig *ret, char **ret_error)
{
        _cleanup_(cJSON_Deletep) cJSON *root = NULL;
        _cleanup_free_ char *err = NULL;
        const cJSON *serving, *le;
        OperatorFileConfig c = {};
        int r;

        assert_return(path && ret, -EINVAL);
        r = yaml_parse_file(path, &root, &err);
        if (r < 0)
                return set_error(ret_error, r, "%s: %s", path, err ?: strerror(-r));
        if (!cJSON_IsObject(root))
                return set_error(ret_error, -EINVAL,
                                 "%s: not a mapping; want a " CONFIG_KIND " (apiVersion " CONFIG_API_VERSION
                                 ")",
                                 path);
        const char *av = json_get_string(root, "apiVersion"), *kind = json_get_string(root, "kind");
        if (!streq_ptr(kind, CONFIG_KIND))
                return set_error(ret_error, -EINVAL, "%s: kind is \"%s\"; want " CONFIG_KIND, path,
                                 strempty(kind));
        if (!streq_ptr(av, CONFIG_API_VERSION))
                return set_error(ret_error, -EINVAL, "%s: apiVersion is \"%s\"; want " CONFIG_API_VERSION,
                                 path, strempty(av));

        if ((r = take_section(path, root, "servingInfo", &serving, ret_error)) < 0 ||
            (r = take_section(path, root, "leaderElection", &le, ret_error)) < 0)
                return r;
        if ((r = take_string(path, serving, "servingInfo", "bindAddress", "\"0.0.0.0:8443\"",
                             &c.bind_address, ret_error)) < 0 ||
            (r = take_string(path, serving, "servingInfo", "certFile",
                             "/var/run/secrets/serving-cert/tls.crt", &c.cert_file, ret_error)) < 0 ||
            (r = take_string(path, serving, "servingInfo", "keyFile",
                             "/var/run/secrets/serving-cert/tls.key", &c.key_file, ret_error)) < 0)
                goto fail;
        if (!c.cert_file != !c.key_file) {
                r = set_error(ret_error, -EINVAL,
                              "%s: servingInfo.%s is set without servingInfo.%s: set both or neither", path,
                              c.cert_file ? "certFile" : "keyFile", c.cert_file ? "keyFile" : "certFile");
                goto fail;
        }
        const cJSON *disable = le ? cJSON_GetObjectItemCaseSensitive(le, "disable") : NULL;
        if (disable && !cJSON_IsNull(disable)) {
                if (!cJSON_IsBool(disable)) {
                        r = set_error(ret_error, -EINVAL, "%s: leaderElection.disable must be true or false",
                                      path);
                        goto fail;
                }
                c.has_leader_elect = true;
                c.leader_elect = !cJSON_IsTrue(disable);
        }
        if ((r = take_duration(path, le, "leaseDuration", &c.lease_duration, ret_error)) < 0 ||
            (r = take_duration(path, le, "renewDeadline", &c.renew_deadline, ret_error)) < 0 ||
            (r = take_duration(path, le, "retryPeriod", &c.retry_period, ret_error)) < 0)
                goto fail;
        *ret = c;
        return 0;
fail:
        operator_file_config_done(&c);
        return r;
}

void operator_file_config_done(OperatorFileConfig *c)
{
        if (!c)
                return;
        free(c->bind_address);
        free(c->cert_file);
        free(c->key_file);
        *c = (OperatorFileConfig){};
}
