/* The facts of etcd's configuration (facts.h) from the cluster's objects: the
 * backend quota, the slower hardware timings and the TLS settings. */
#include "facts.h"

#include "base/json.h"
#include "render/etcdenv.h"

uint64_t etcd_backend_quota_bytes(const KubeObject *etcd_cr)
{
        int64_t gib = 0;
        if (!etcd_cr || json_get_int64(etcd_cr->json, "spec.backendQuotaGiB", &gib) < 0 || gib < 1 ||
            gib > 1024)
                gib = ETCD_DEFAULT_QUOTA_GIB;
        return (uint64_t) gib * 1024ULL * 1024ULL * 1024ULL;
}

bool etcd_hardware_slower(const SyncContext *ctx)
{
        const KubeObject *cr = op_etcd_cr(ctx);
        const char *speed = cr ? json_get_string(cr->json, "spec.controlPlaneHardwareSpeed") : NULL;
        if (speed && *speed)
                return streq(speed, "Slower");
        const KubeObject *infra = op_get(ctx, W_INFRASTRUCTURES, NULL, "cluster");
        const cJSON *ps = infra ? json_get_object(infra->json, "status.platformStatus") : NULL;
        return json_get_object(ps, "azure") ||
               streq_ptr(json_get_string(ps, "ibmcloud.providerType"), "VPC");
}

int etcd_tls_settings(const SyncContext *ctx, EtcdTls *ret, char *why, size_t why_size)
{
        const KubeObject *api = op_get(ctx, W_APISERVERS, NULL, "cluster");
        return etcd_tls_from_profile(api ? json_get_object(api->json, "spec.tlsSecurityProfile") : NULL, ret,
                                     why, why_size);
}
