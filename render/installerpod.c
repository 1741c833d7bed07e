/* The installer and pruner pods (installerpod.h). */
#include "installerpod.h"
#include "assets.h"
#include "base/json.h"
#include "base/names.h"
#include "base/yaml.h"
#include "template.h"

#define INSTALLER_POD_ASSET "etcd-pod/installer-pod.yaml"
#define PRUNER_POD_ASSET    "etcd-pod/pruner-pod.yaml"

bool installer_pod_endpoint_is_valid(const char *e)
{
        return e && startswith(e, "https://") && strlen(e) > 8 && strlen(e) < 256 &&
               !strpbrk(e, ", \t\r\n\"");
}

/* Appends --etcd-endpoints=A,B to the installer container's command. */
static int add_endpoints(cJSON *pod, char *const *eps, size_t n)
{
        cJSON *cmd =
                json_get_array(cJSON_GetArrayItem(json_get_array(pod, "spec.containers"), 0), "command");
        size_t len = sizeof "--etcd-endpoints=";
        _cleanup_free_ char *arg = NULL;
        cJSON *s;
        if (!cmd)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                len += strlen(eps[i]) + 1;
        if (!(arg = malloc(len)))
                return -ENOMEM;
        char *p = stpcpy(arg, "--etcd-endpoints=");
        for (size_t i = 0; i < n; i++)
                p = stpcpy(i ? stpcpy(p, ",") : p, eps[i]);
        if (!(s = cJSON_CreateString(arg)))
                return -ENOMEM;
        cJSON_AddItemToArray(cmd, s);
        return 0;
}

/* The manifest `asset` with `vars` filled in, as JSON. */
static int pod_render(const char *asset, const TemplateVar *vars, size_t n, cJSON **ret)
{
        _cleanup_free_ char *text = NULL, *missing = NULL;
        const Asset *a = asset_find(asset);
        if (!a)
                return -ENOENT;
        int r = template_render(a->data, vars, n, &text, &missing);
        if (r < 0)
                return r == -ENOENT ? -EINVAL : r;
        return yaml_parse(text, strlen(text), ret, NULL);
}

int installer_pod_render(const char *name, const char *node, int64_t revision, const char *image,
                         char *const *etcd_endpoints, size_t n, cJSON **ret)
{
        char rev[24];
        int r;

        assert_return(ret, -EINVAL);
        if (!dns1123_subdomain_is_valid(name) || !dns1123_subdomain_is_valid(node) ||
            !template_is_image_ref(image) || revision < 1)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!installer_pod_endpoint_is_valid(etcd_endpoints[i]))
                        return -EINVAL;
        (void) snprintf(rev, sizeof rev, "%lld", (long long) revision);
        const TemplateVar vars[] = {
                {"NAME", name}, {"NODE_NAME", node}, {"IMAGE", image}, {"REVISION", rev}};
        _cleanup_(cJSON_Deletep) cJSON *pod = NULL;
        r = pod_render(INSTALLER_POD_ASSET, vars, ELEMENTSOF(vars), &pod);
        if (r < 0)
                return r;
        if (n > 0 && (r = add_endpoints(pod, etcd_endpoints, n)) < 0)
                return r;
        *ret = TAKE_PTR(pod);
        return 0;
}

int installer_pod_add_aliases(cJSON *pod, const EtcdAddressAlias *a, size_t n)
{
        cJSON *cmd =
                json_get_array(cJSON_GetArrayItem(json_get_array(pod, "spec.containers"), 0), "command");
        if (!cmd)
                return -EINVAL;
        for (size_t i = 0; i < n; i++) {
                if (!etcd_address_alias_is_valid(&a[i]))
                        return -EINVAL;
                _cleanup_free_ char *arg =
                        strdup_printf("--etcd-address-alias=%s=%s", a[i].serves_on, a[i].named);
                cJSON *s = arg ? cJSON_CreateString(arg) : NULL;
                if (!s)
                        return -ENOMEM;
                cJSON_AddItemToArray(cmd, s);
        }
        return 0;
}

int installer_pod_allow_sole_voter_restart(cJSON *pod)
{
        cJSON *cmd =
                json_get_array(cJSON_GetArrayItem(json_get_array(pod, "spec.containers"), 0), "command");
        cJSON *s = cmd ? cJSON_CreateString("--etcd-sole-voter-may-restart") : NULL;
        if (!cmd)
                return -EINVAL;
        if (!s)
                return -ENOMEM;
        cJSON_AddItemToArray(cmd, s);
        return 0;
}

int pruner_pod_render(const char *name, const char *node, const char *image, int64_t max_eligible,
                      const int64_t *protected_revisions, size_t n, cJSON **ret)
{
        _cleanup_free_ char *list = NULL;
        char max[24];

        assert_return(ret, -EINVAL);
        if (!dns1123_subdomain_is_valid(name) || !dns1123_subdomain_is_valid(node) ||
            !template_is_image_ref(image) || max_eligible < 1 || n > 64)
                return -EINVAL;
        if (!(list = calloc(n + 1, 24)))
                return -ENOMEM;
        char *p = list;
        for (size_t i = 0; i < n; i++) {
                if (protected_revisions[i] < 1)
                        return -EINVAL;
                p += sprintf(p, "%s%lld", i ? "," : "", (long long) protected_revisions[i]);
        }
        (void) snprintf(max, sizeof max, "%lld", (long long) max_eligible);
        const TemplateVar vars[] = {{"NAME", name},
                                    {"NODE_NAME", node},
                                    {"IMAGE", image},
                                    {"MAX_ELIGIBLE_REVISION", max},
                                    {"PROTECTED_REVISIONS", list}};
        return pod_render(PRUNER_POD_ASSET, vars, ELEMENTSOF(vars), ret);
}
