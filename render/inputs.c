/* Reading render's inputs. */
#include <ifaddrs.h>
#include <inttypes.h>
#include <stdarg.h>

#include "base/json.h"
#include "base/yaml.h"
#include "inputs.h"

static int load(const char *path, const char *what, cJSON **ret, char **ret_error)
{
        _cleanup_free_ char *err = NULL;
        int r = yaml_parse_file(path, ret, &err);
        if (r == -EBADMSG)
                return set_error(ret_error, -EINVAL, "%s: not valid YAML (%s); pass the %s manifest", path,
                                 strempty(err), what);
        if (r < 0) {
                (void) set_error(ret_error, -EINVAL, "%s: cannot read: %s", path, strerror(-r));
                return r;
        }
        if (!cJSON_IsObject(*ret)) {
                cJSON_Delete(TAKE_PTR(*ret));
                return set_error(ret_error, -EINVAL, "%s: expected a %s object at the top level", path,
                                 what);
        }
        return 0;
}

static int check_kind(const char *path, const cJSON *j, const char *kind, char **ret_error)
{
        const char *k = json_get_string(j, "kind");
        if (!streq_ptr(k, kind))
                return set_error(ret_error, -EINVAL, "%s: kind: expected \"%s\", found \"%s\"", path, kind,
                                 strempty(k));
        return 0;
}

int render_read_network(const char *path, RenderInputs *in, char **ret_error)
{
        _cleanup_(cJSON_Deletep) cJSON *j = NULL;
        int r;

        if ((r = load(path, "networks.config.openshift.io", &j, ret_error)) < 0 ||
            (r = check_kind(path, j, "Network", ret_error)) < 0)
                return r;
        /* spec first (what the installer asked for), then status. */
        cJSON *sn = json_get_array(j, "spec.serviceNetwork");
        const char *field = "spec.serviceNetwork";
        if (!sn || cJSON_GetArraySize(sn) == 0) {
                sn = json_get_array(j, "status.serviceNetwork");
                field = "status.serviceNetwork";
        }
        if (!sn || cJSON_GetArraySize(sn) == 0)
                return set_error(ret_error, -EINVAL,
                                 "%s: spec.serviceNetwork: expected a list of CIDRs such as [172.30.0.0/16]",
                                 path);
        cJSON *first = cJSON_GetArrayItem(sn, 0);
        Cidr c;
        if (!cJSON_IsString(first) || cidr_parse(first->valuestring, &c) < 0)
                return set_error(ret_error, -EINVAL, "%s: %s[0]: expected a CIDR such as 172.30.0.0/16",
                                 path, field);
        in->prefer_ipv6 = c.addr.family == AF_INET6;
        return 0;
}

int render_read_infrastructure(const char *path, RenderInputs *in, char **ret_error)
{
        _cleanup_(cJSON_Deletep) cJSON *j = NULL;
        int r;

        if ((r = load(path, "infrastructures.config.openshift.io", &j, ret_error)) < 0 ||
            (r = check_kind(path, j, "Infrastructure", ret_error)) < 0)
                return r;
        const char *type = json_get_string(j, "status.platformStatus.type");
        if (!type)
                type = json_get_string(j, "spec.platformSpec.type");
        if (!type || !*type || strlen(type) >= sizeof in->platform)
                return set_error(
                        ret_error, -EINVAL,
                        "%s: status.platformStatus.type: expected a platform such as None or BareMetal",
                        path);
        (void) snprintf(in->platform, sizeof in->platform, "%s", type);
        return 0;
}

/* VIPs may be given singly (apiVIP) or as lists (apiVIPs), per platform. */
static int add_vips(const char *path, const cJSON *platform, const char *pname, RenderInputs *in,
                    char **ret_error)
{
        static const char *const singles[] = {"apiVIP", "ingressVIP", "dnsVIP"};
        static const char *const lists[] = {"apiVIPs", "ingressVIPs"};
        cJSON *v;

        for (size_t i = 0; i < ELEMENTSOF(singles); i++) {
                const char *s = json_get_string(platform, singles[i]);
                if (!s)
                        continue;
                if (in->n_vips >= RENDER_MAX_NETWORKS || ip_parse(s, &in->vips[in->n_vips]) < 0)
                        return set_error(ret_error, -EINVAL,
                                         "%s: data.install-config: platform.%s.%s: expected an IP address",
                                         path, pname, singles[i]);
                in->n_vips++;
        }
        for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
                int k = 0;
                JSON_ARRAY_FOREACH (v, json_get_array(platform, lists[i])) {
                        if (!cJSON_IsString(v) || in->n_vips >= RENDER_MAX_NETWORKS ||
                            ip_parse(v->valuestring, &in->vips[in->n_vips]) < 0)
                                return set_error(
                                        ret_error, -EINVAL,
                                        "%s: data.install-config: platform.%s.%s[%d]: expected an IP "
                                        "address",
                                        path, pname, lists[i], k);
                        in->n_vips++;
                        k++;
                }
        }
        return 0;
}

int render_read_cluster_config(const char *path, RenderInputs *in, char **ret_error)
{
        _cleanup_(cJSON_Deletep) cJSON *j = NULL, *ic = NULL;
        _cleanup_free_ char *err = NULL;
        cJSON *v;
        int r, k = 0;

        if ((r = load(path, "kube-system/cluster-config-v1 ConfigMap", &j, ret_error)) < 0 ||
            (r = check_kind(path, j, "ConfigMap", ret_error)) < 0)
                return r;
        const char *text = json_get_string(j, "data.install-config");
        if (!text)
                return set_error(
                        ret_error, -EINVAL,
                        "%s: data.install-config: missing; expected the install-config YAML as a string",
                        path);
        if (yaml_parse(text, strlen(text), &ic, &err) < 0 || !cJSON_IsObject(ic))
                return set_error(ret_error, -EINVAL, "%s: data.install-config: not valid YAML (%s)", path,
                                 err ? err : "not a mapping");
        cJSON *mn = json_get_array(ic, "networking.machineNetwork");
        if (!mn || cJSON_GetArraySize(mn) == 0)
                return set_error(
                        ret_error, -EINVAL,
                        "%s: data.install-config: networking.machineNetwork: expected a list of {cidr: ...}",
                        path);
        JSON_ARRAY_FOREACH (v, mn) {
                const char *cidr = json_get_string(v, "cidr");
                if (!cidr || in->n_machine_networks >= RENDER_MAX_NETWORKS ||
                    cidr_parse(cidr, &in->machine_networks[in->n_machine_networks]) < 0)
                        return set_error(
                                ret_error, -EINVAL,
                                "%s: data.install-config: networking.machineNetwork[%d].cidr: expected "
                                "a CIDR such "
                                "as 10.0.0.0/16",
                                path, k);
                in->n_machine_networks++;
                k++;
        }
        int64_t replicas = 3;
        r = json_get_int64(ic, "controlPlane.replicas", &replicas);
        if (r == -EINVAL || replicas < 1 || replicas > 7)
                return set_error(
                        ret_error, -EINVAL,
                        "%s: data.install-config: controlPlane.replicas: expected a number from 1 to 7",
                        path);
        in->control_plane_replicas = (unsigned) replicas;
        in->bootstrap_in_place = json_get_object(ic, "bootstrapInPlace") != NULL;
        /* The node installed in place is the cluster's master: there is no other host to run a
         * bootstrap member beside it, nor to scale out to at install time. */
        if (in->bootstrap_in_place && replicas != 1)
                return set_error(ret_error, -EINVAL,
                                 "%s: data.install-config: bootstrapInPlace needs controlPlane.replicas: 1 "
                                 "(it has %" PRId64 "): a node installed in place is the single master; "
                                 "remove bootstrapInPlace to install %" PRId64
                                 " masters from a bootstrap host",
                                 path, replicas, replicas);
        cJSON *platform = json_get_object(ic, "platform");
        JSON_ARRAY_FOREACH (v, platform) {
                if (cJSON_IsObject(v) && (r = add_vips(path, v, v->string, in, ret_error)) < 0)
                        return r;
        }
        return 0;
}

static bool qualifies(const RenderInputs *in, const IpAddr *a, const char **why)
{
        bool inside = false;
        for (size_t i = 0; i < in->n_machine_networks; i++)
                inside |= cidr_contains(&in->machine_networks[i], a);
        if (!inside) {
                *why = "is not inside any networking.machineNetwork CIDR";
                return false;
        }
        for (size_t i = 0; i < in->n_vips; i++)
                if (ip_equal(&in->vips[i], a)) {
                        *why = "is a VIP of the install-config";
                        return false;
                }
        if (ip_is_documentation(a)) {
                *why = "is in a documentation range";
                return false;
        }
        return true;
}

int render_check_bootstrap_ip(const RenderInputs *in, const IpAddr *ip, char **ret_error)
{
        char t[INET6_ADDRSTRLEN];
        const char *why = NULL;
        if (!qualifies(in, ip, &why))
                return set_error(
                        ret_error, -EINVAL,
                        "--bootstrap-ip: %s %s; pass an address of the bootstrap host on a machine network",
                        ip_to_string(ip, t, sizeof t), why);
        return 0;
}

int render_pick_bootstrap_ip(const RenderInputs *in, const IpAddr *candidates, size_t n, IpAddr *ret,
                             char **ret_error)
{
        const IpAddr *other = NULL;
        const char *why = NULL;

        for (size_t i = 0; i < n; i++) {
                if (!qualifies(in, &candidates[i], &why))
                        continue;
                if ((candidates[i].family == AF_INET6) == in->prefer_ipv6) {
                        *ret = candidates[i];
                        return 0;
                }
                if (!other)
                        other = &candidates[i];
        }
        if (other) {
                *ret = *other;
                return 0;
        }
        (void) set_error(
                ret_error, -EINVAL,
                "no address of this host is inside a machine network (and not a VIP or a documentation "
                "address); pass --bootstrap-ip");
        return -ENOENT;
}

int render_host_addresses(IpAddr **ret, size_t *ret_n)
{
        struct ifaddrs *ifa = NULL;
        size_t n = 0;

        if (getifaddrs(&ifa) < 0)
                return -errno;
        size_t cap = 0;
        for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
                cap++;
        IpAddr *v = calloc(cap + 1, sizeof *v);
        if (!v) {
                freeifaddrs(ifa);
                return -ENOMEM;
        }
        for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
                if (!i->ifa_addr)
                        continue;
                if (i->ifa_addr->sa_family == AF_INET) {
                        v[n].family = AF_INET;
                        memcpy(v[n++].bytes, &((struct sockaddr_in *) i->ifa_addr)->sin_addr, 4);
                } else if (i->ifa_addr->sa_family == AF_INET6) {
                        v[n].family = AF_INET6;
                        memcpy(v[n++].bytes, &((struct sockaddr_in6 *) i->ifa_addr)->sin6_addr, 16);
                }
        }
        freeifaddrs(ifa);
        *ret = v;
        *ret_n = n;
        return 0;
}
