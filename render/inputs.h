/* The installer's inputs to `render`, read and checked: the Network and
 * Infrastructure config objects and the cluster-config-v1 ConfigMap whose
 * install-config holds the machine networks, VIPs and control-plane size.
 * Every problem is one line naming the file, the field path and what was
 * expected. */
#pragma once

#include "netutil.h"

#define RENDER_MAX_NETWORKS 16

typedef struct RenderInputs {
        Cidr machine_networks[RENDER_MAX_NETWORKS];
        size_t n_machine_networks;
        IpAddr vips[RENDER_MAX_NETWORKS];
        size_t n_vips;
        bool prefer_ipv6; /* the first service network is IPv6 */
        unsigned control_plane_replicas;
        bool bootstrap_in_place;
        char platform[64];
} RenderInputs;

/* Each returns -EINVAL with *ret_error set on bad input, -errno when a file
 * cannot be read. */
int render_read_network(const char *path, RenderInputs *in, char **ret_error);
int render_read_infrastructure(const char *path, RenderInputs *in, char **ret_error);
int render_read_cluster_config(const char *path, RenderInputs *in, char **ret_error);

/* Picks the bootstrap IP among `candidates` (the host's addresses): inside a
 * machine network, not a VIP, not a documentation range, preferring the
 * service network's family; ties go to the first candidate. -ENOENT with a
 * message when none qualifies. */
int render_pick_bootstrap_ip(const RenderInputs *in, const IpAddr *candidates, size_t n, IpAddr *ret,
                             char **ret_error);
/* Checks an explicit --bootstrap-ip against the same rules. */
int render_check_bootstrap_ip(const RenderInputs *in, const IpAddr *ip, char **ret_error);
/* The host's interface addresses (getifaddrs), loopback included: tests
 * and the harness use 127.0.0.0/8 machine networks. */
int render_host_addresses(IpAddr **ret, size_t *ret_n);
