/* The installer pod (installerpod.h). */
#include "installerpod.h"
#include "assets.h"
#include "base/yaml.h"
#include "template.h"

#define INSTALLER_POD_ASSET "etcd-pod/installer-pod.yaml"

int installer_pod_render(const char *name, const char *node, int64_t revision, const char *image,
                         cJSON **ret)
{
        _cleanup_free_ char *text = NULL, *missing = NULL;
        char rev[24];
        int r;

        assert_return(ret, -EINVAL);
        if (!template_is_dns1123_subdomain(name) || !template_is_dns1123_subdomain(node) ||
            !template_is_image_ref(image) || revision < 1)
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
        return yaml_parse(text, strlen(text), ret, NULL);
}
