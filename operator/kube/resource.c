/* The resources this operator reads and writes, and their REST paths. */
#include "resource.h"

#define CORE(p, k, ns)                                                                 \
        {                                                                              \
                .group = "", .version = "v1", .plural = p, .kind = k, .namespaced = ns \
        }
#define GROUP(g, p, k, ns)                                                            \
        {                                                                             \
                .group = g, .version = "v1", .plural = p, .kind = k, .namespaced = ns \
        }

const KubeResource KUBE_NODES = CORE("nodes", "Node", false);
const KubeResource KUBE_PODS = CORE("pods", "Pod", true);
const KubeResource KUBE_CONFIGMAPS = CORE("configmaps", "ConfigMap", true);
const KubeResource KUBE_SECRETS = CORE("secrets", "Secret", true);
const KubeResource KUBE_ENDPOINTS = CORE("endpoints", "Endpoints", true);
const KubeResource KUBE_SERVICES = CORE("services", "Service", true);
const KubeResource KUBE_NAMESPACES = CORE("namespaces", "Namespace", false);
const KubeResource KUBE_EVENTS = CORE("events", "Event", true);
const KubeResource KUBE_SERVICEACCOUNTS = CORE("serviceaccounts", "ServiceAccount", true);
const KubeResource KUBE_LEASES = GROUP("coordination.k8s.io", "leases", "Lease", true);
const KubeResource KUBE_ROLES = GROUP("rbac.authorization.k8s.io", "roles", "Role", true);
const KubeResource KUBE_ROLEBINDINGS =
        GROUP("rbac.authorization.k8s.io", "rolebindings", "RoleBinding", true);
const KubeResource KUBE_CLUSTERROLES =
        GROUP("rbac.authorization.k8s.io", "clusterroles", "ClusterRole", false);
const KubeResource KUBE_CLUSTERROLEBINDINGS =
        GROUP("rbac.authorization.k8s.io", "clusterrolebindings", "ClusterRoleBinding", false);
const KubeResource KUBE_DEPLOYMENTS = GROUP("apps", "deployments", "Deployment", true);
/* Created only, never stored: the operator's delegated auth of /metrics (runtime/delegated-auth.h). */
const KubeResource KUBE_TOKENREVIEWS = GROUP("authentication.k8s.io", "tokenreviews", "TokenReview", false);
const KubeResource KUBE_SUBJECTACCESSREVIEWS =
        GROUP("authorization.k8s.io", "subjectaccessreviews", "SubjectAccessReview", false);
const KubeResource KUBE_PDBS = GROUP("policy", "poddisruptionbudgets", "PodDisruptionBudget", true);
const KubeResource KUBE_NETWORKPOLICIES =
        GROUP("networking.k8s.io", "networkpolicies", "NetworkPolicy", true);
const KubeResource KUBE_CRDS =
        GROUP("apiextensions.k8s.io", "customresourcedefinitions", "CustomResourceDefinition", false);
const KubeResource KUBE_ETCDS = GROUP("operator.openshift.io", "etcds", "Etcd", false);
/* Behind the AutomatedEtcdBackup feature gate upstream: v1alpha1. */
/* TechPreview upstream (feature gate AutomatedEtcdBackup): the CRD may not be installed. */
const KubeResource KUBE_ETCDBACKUPS = {.group = "operator.openshift.io",
                                       .version = "v1alpha1",
                                       .plural = "etcdbackups",
                                       .kind = "EtcdBackup",
                                       .optional = true};
const KubeResource KUBE_JOBS = GROUP("batch", "jobs", "Job", true);
const KubeResource KUBE_CRONJOBS = GROUP("batch", "cronjobs", "CronJob", true);
/* config.openshift.io/v1alpha1 Backup: the same feature gate, the same may-be-absent CRD. */
const KubeResource KUBE_BACKUPS = {.group = "config.openshift.io",
                                   .version = "v1alpha1",
                                   .plural = "backups",
                                   .kind = "Backup",
                                   .optional = true};
/* machine.openshift.io/v1beta1 Machine: served only where the Machine API runs (not on
 * bare-metal UPI or with the MachineAPI capability off). */
const KubeResource KUBE_MACHINES = {.group = "machine.openshift.io",
                                    .version = "v1beta1",
                                    .plural = "machines",
                                    .kind = "Machine",
                                    .namespaced = true,
                                    .optional = true};
const KubeResource KUBE_PVCS = CORE("persistentvolumeclaims", "PersistentVolumeClaim", true);
const KubeResource KUBE_KUBEAPISERVERS =
        GROUP("operator.openshift.io", "kubeapiservers", "KubeAPIServer", false);
const KubeResource KUBE_CLUSTEROPERATORS =
        GROUP("config.openshift.io", "clusteroperators", "ClusterOperator", false);
const KubeResource KUBE_INFRASTRUCTURES =
        GROUP("config.openshift.io", "infrastructures", "Infrastructure", false);
const KubeResource KUBE_NETWORKS = GROUP("config.openshift.io", "networks", "Network", false);
/* config.openshift.io/v1 APIServer: always there on OpenShift; optional so a cluster
 * without the type reads as one without a TLS profile (Intermediate). */
const KubeResource KUBE_APISERVERS = {.group = "config.openshift.io",
                                      .version = "v1",
                                      .plural = "apiservers",
                                      .kind = "APIServer",
                                      .optional = true};

/* OpenShift's monitoring (prometheus-operator's CRD): absent where monitoring is not installed. */
const KubeResource KUBE_SERVICEMONITORS = {.group = "monitoring.coreos.com",
                                           .version = "v1",
                                           .plural = "servicemonitors",
                                           .kind = "ServiceMonitor",
                                           .namespaced = true,
                                           .optional = true};

static const KubeResource *const all[] = {
        &KUBE_NODES,
        &KUBE_PODS,
        &KUBE_CONFIGMAPS,
        &KUBE_SECRETS,
        &KUBE_ENDPOINTS,
        &KUBE_SERVICES,
        &KUBE_NAMESPACES,
        &KUBE_EVENTS,
        &KUBE_SERVICEACCOUNTS,
        &KUBE_LEASES,
        &KUBE_ROLES,
        &KUBE_ROLEBINDINGS,
        &KUBE_CLUSTERROLES,
        &KUBE_CLUSTERROLEBINDINGS,
        &KUBE_DEPLOYMENTS,
        &KUBE_PDBS,
        &KUBE_NETWORKPOLICIES,
        &KUBE_CRDS,
        &KUBE_ETCDS,
        &KUBE_ETCDBACKUPS,
        &KUBE_KUBEAPISERVERS,
        &KUBE_CLUSTEROPERATORS,
        &KUBE_INFRASTRUCTURES,
        &KUBE_NETWORKS,
        &KUBE_APISERVERS,
        &KUBE_JOBS,
        &KUBE_PVCS,
        &KUBE_CRONJOBS,
        &KUBE_BACKUPS,
        &KUBE_MACHINES,
        &KUBE_SERVICEMONITORS,
};

bool kube_name_is_valid(const char *name)
{
        size_t n = name ? strlen(name) : 0;
        if (n == 0 || n > 253)
                return false;
        for (const char *p = name; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' ||
                      *p == ':'))
                        return false;
        return name[0] != '-' && name[0] != '.' && name[n - 1] != '-' && name[n - 1] != '.';
}

char *kube_resource_path(const KubeResource *r, const char *ns, const char *name, const char *sub)
{
        char base[128];

        if (!r || (ns && !kube_name_is_valid(ns)) || (name && !kube_name_is_valid(name)) ||
            (sub && !kube_name_is_valid(sub)) || (sub && !name))
                return NULL;
        if (*r->group)
                (void) snprintf(base, sizeof base, "/apis/%s/%s", r->group, r->version);
        else
                (void) snprintf(base, sizeof base, "/api/%s", r->version);
        return strdup_printf("%s%s%s%s/%s%s%s%s%s", base, ns && r->namespaced ? "/namespaces/" : "",
                             ns && r->namespaced ? ns : "", "", r->plural, name ? "/" : "", name ? name : "",
                             sub ? "/" : "", sub ? sub : "");
}

const char *kube_resource_api_version(const KubeResource *r, char *buf, size_t n)
{
        if (!*r->group)
                return r->version;
        (void) snprintf(buf, n, "%s/%s", r->group, r->version);
        return buf;
}

const KubeResource *kube_resource_by_kind(const char *api_version, const char *kind)
{
        char buf[128];
        for (size_t i = 0; i < ELEMENTSOF(all); i++)
                if (streq_ptr(all[i]->kind, kind) &&
                    streq_ptr(kube_resource_api_version(all[i], buf, sizeof buf), api_version))
                        return all[i];
        return NULL;
}

char *kube_query_escape(const char *s)
{
        static const char hex[] = "0123456789ABCDEF";
        char *out = malloc(strlen(s) * 3 + 1), *o = out;
        if (!out)
                return NULL;
        for (; *s; s++) {
                unsigned char c = (unsigned char) *s;
                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '.' || c == '_' || c == '~')
                        *o++ = (char) c;
                else {
                        *o++ = '%';
                        *o++ = hex[c >> 4];
                        *o++ = hex[c & 15];
                }
        }
        *o = 0;
        return out;
}
