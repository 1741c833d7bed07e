/* The installer pod (installerpod.h). */
#include "installerpod.h"
#include "assets.h"
#include "base/json.h"
#include "base/yaml.h"
#include "template.h"

#define INSTALLER_POD_ASSET "etcd-pod/installer-pod.yaml"

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

int installer_pod_render(const char *name, const char *node, int64_t revision, const char *image,
                         char *const *etcd_endpoints, size_t n, cJSON **ret)
{
        _cleanup_free_ char *text = NULL, *missing = NULL;
        char rev[24];
        int r;

        assert_return(ret, -EINVAL);
        if (!template_is_dns1123_subdomain(name) || !template_is_dns1123_subdomain(node) ||
            !template_is_image_ref(image) || revision < 1)
                return -EINVAL;
        for (size_t i = 0; i < n; i++)
                if (!installer_pod_endpoint_is_valid(etcd_endpoints[i]))
                        return -EINVAL;
        (void) snprintf(rev, sizeof rev, "%lld", (long long) revision);
        const TemplateVar vars[] = {
                {"NAME", name}, {"NODE_NAME", node}, {"IMAGE", image}, {"REVISION", rev}};
        const Asset *a = asset_find(INSTALLER_POD_ASSET);
        if (!a)
                return -ENOENT;
        r = template_render(a->data, vars, ELEMENTSOF(vars), &text, &missing);
        if (r < 0)
                return r == -ENOENT ? -EINVAL : r;
        _cleanup_(cJSON_Deletep) cJSON *pod = NULL;
        r = yaml_parse(text, strlen(text), &pod, NULL);
        if (r < 0)
                return r;
        if (n > 0 && (r = add_endpoints(pod, etcd_endpoints, n)) < 0)
                return r;
        *ret = TAKE_PTR(pod);
        return 0;
}
