/* Certificate profiles (certs.h). */
#include "certs.h"
#include "netutil.h"

const char *const cert_signer_secrets[_CERT_SIGNER_MAX] = {
        [CERT_SIGNER_ETCD] = "etcd-signer",
        [CERT_SIGNER_METRIC] = "etcd-metric-signer",
};

const CertProfile cert_client_profiles[2] = {
        {"etcd-client", "etcd-client", "system:etcd", CERT_SIGNER_ETCD, PKI_PROFILE_CLIENT, false},
        {"etcd-metric-client", "etcd-metric", "system:etcd", CERT_SIGNER_METRIC, PKI_PROFILE_CLIENT, false},
};

const CertProfile cert_node_profiles[3] = {
        {"etcd-peer-", "system:etcd-peer:", "system:etcd-peers", CERT_SIGNER_ETCD, PKI_PROFILE_SERVER_CLIENT,
         true},
        {"etcd-serving-", "system:etcd-server:", "system:etcd-servers", CERT_SIGNER_ETCD,
         PKI_PROFILE_SERVER_CLIENT, true},
        {"etcd-serving-metrics-", "system:etcd-metric:", "system:etcd-metrics", CERT_SIGNER_METRIC,
         PKI_PROFILE_SERVER_CLIENT, true},
};

int cert_profile_names(const CertProfile *p, const char *node, char *ret_secret, size_t secret_size,
                       char *ret_cn, size_t cn_size)
{
        assert_return(p && ret_secret && ret_cn, -EINVAL);
        assert_return(p->per_node == !!node, -EINVAL);
        if (snprintf(ret_secret, secret_size, "%s%s", p->secret, strempty(node)) >= (int) secret_size ||
            snprintf(ret_cn, cn_size, "%s%s", p->cn, strempty(node)) >= (int) cn_size)
                return -ENAMETOOLONG;
        return 0;
}

void cert_node_sans(const char *const *node_ips, size_t n_node_ips, const char **dns, const char **ips)
{
        static const char *const names[CERT_NODE_DNS_NAMES] = {
                "localhost", "etcd.kube-system.svc", "etcd.kube-system.svc.cluster.local",
                "etcd.openshift-etcd.svc", "etcd.openshift-etcd.svc.cluster.local"};
        size_t n = 0;

        for (size_t k = 0; k < CERT_NODE_DNS_NAMES; k++)
                dns[k] = names[k];
        dns[CERT_NODE_DNS_NAMES] = NULL;
        ips[n++] = "127.0.0.1";
        ips[n++] = "::1";
        for (size_t i = 0; i < n_node_ips; i++) {
                bool dup = false;
                for (size_t k = 0; k < n; k++)
                        dup |= ip_text_equal(ips[k], node_ips[i]);
                if (!dup)
                        ips[n++] = node_ips[i];
        }
        ips[n] = NULL;
}
