/* `cluster-etcd-operator render`: run once by the installer on the
 * bootstrap host. Reads the install inputs, picks (or checks) the bootstrap
 * IP, and writes the bootstrap etcd's static pod, certificates and the
 * cluster manifests (render/bootstrap.h). Bad input: one line naming the
 * file and field, exit 2, output directory untouched. */
#include <getopt.h>
#include <unistd.h>

#include "base/contract.h"
#include "base/log.h"
#include "node.h"
#include "render/bootstrap.h"

/* Where the assisted installer leaves its marker on the bootstrap host (upstream's default). */
#define DEFAULT_DELAYED_HA_MARKER "/assets/assisted-install-bootstrap"

static void help(FILE *out)
{
        (void) fprintf(
                out,
                "Usage: cluster-etcd-operator render [FLAGS]\n"
                "\n"
                "Writes the bootstrap etcd's static pod, its TLS material and the cluster manifests.\n"
                "\n"
                "Required:\n"
                "  --asset-output-dir DIR        where the output tree goes (replaced atomically; mode\n"
                "                                0700, and every file that holds a key 0600)\n"
                "  --etcd-image IMAGE            etcd image for the static pod\n"
                "  --network-config-file FILE    networks.config.openshift.io manifest\n"
                "  --cluster-configmap-file FILE kube-system/cluster-config-v1 ConfigMap (install-config)\n"
                "  --infra-config-file FILE      infrastructures.config.openshift.io manifest\n"
                "Optional:\n"
                "  --bootstrap-ip IP             the bootstrap host's address (default: picked from this\n"
                "                                host's addresses inside a machine network)\n"
                "  --hostname NAME               the bootstrap host's name (default: the system hostname)\n"
                "  --listen-on-node-ip           listen on the node IP instead of 0.0.0.0 (test harness)\n"
                "  --control-plane-hardware-speed Standard|Slower   etcd timings (default Standard)\n"
                "  --key-type rsa|ecdsa          private keys: RSA 2048 (default) or ECDSA P-256\n"
                "  --etcd-image-version 3.5|3.6  the etcd release the etcd image carries (a patch\n"
                "                                release too, as 3.6.16; default 3.5): 3.6 names\n"
                "                                the settings it renamed its way\n"
                "  --delayed-ha-bootstrap-scaling-marker-file FILE   the assisted installer's marker\n"
                "                                (default " DEFAULT_DELAYED_HA_MARKER "): when it exists,\n"
                "                                bootstrap may finish on two masters (namespace\n"
                "                                annotation " DELAYED_BOOTSTRAP_ANNOTATION ")\n"
                "  -v=N                          log verbosity\n"
                "\n"
                "Exit codes: 0 written, 1 runtime failure, 2 bad input (nothing written).\n");
}

typedef struct Flags {
        const char *out, *image, *network, *cluster, *infra, *bootstrap_ip, *hostname, *speed, *key_type,
                *operator_image, *delayed_ha_marker, *etcd_version;
        bool node_ip;
} Flags;

static int parse(int argc, char *argv[], Flags *f)
{
        enum {
                A_OUT = 0x100,
                A_IMAGE,
                A_NET,
                A_CLUSTER,
                A_INFRA,
                A_IP,
                A_HOST,
                A_NODEIP,
                A_SPEED,
                A_KEY,
                A_OPIMG,
                A_DELAYED,
                A_ETCDVER
        };
        static const struct option options[] = {
                {"asset-output-dir", required_argument, NULL, A_OUT},
                {"etcd-image", required_argument, NULL, A_IMAGE},
                {"network-config-file", required_argument, NULL, A_NET},
                {"cluster-configmap-file", required_argument, NULL, A_CLUSTER},
                {"infra-config-file", required_argument, NULL, A_INFRA},
                {"bootstrap-ip", required_argument, NULL, A_IP},
                {"hostname", required_argument, NULL, A_HOST},
                {"listen-on-node-ip", no_argument, NULL, A_NODEIP},
                {"control-plane-hardware-speed", required_argument, NULL, A_SPEED},
                {"key-type", required_argument, NULL, A_KEY},
                {"operator-image", required_argument, NULL, A_OPIMG},
                {"delayed-ha-bootstrap-scaling-marker-file", required_argument, NULL, A_DELAYED},
                {"etcd-image-version", required_argument, NULL, A_ETCDVER},
                {"help", no_argument, NULL, 'h'},
                {},
        };
        int c;

        optind = 0;
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help(stdout);
                        return 1;
                case A_OUT:
                        f->out = optarg;
                        break;
                case A_IMAGE:
                        f->image = optarg;
                        break;
                case A_NET:
                        f->network = optarg;
                        break;
                case A_CLUSTER:
                        f->cluster = optarg;
                        break;
                case A_INFRA:
                        f->infra = optarg;
                        break;
                case A_IP:
                        f->bootstrap_ip = optarg;
                        break;
                case A_HOST:
                        f->hostname = optarg;
                        break;
                case A_NODEIP:
                        f->node_ip = true;
                        break;
                case A_SPEED:
                        f->speed = optarg;
                        break;
                case A_KEY:
                        f->key_type = optarg;
                        break;
                case A_DELAYED:
                        f->delayed_ha_marker = optarg;
                        break;
                case A_OPIMG:
                        f->operator_image = optarg;
                        break;
                case A_ETCDVER:
                        f->etcd_version = optarg;
                        break;
                default:
                        help(stderr);
                        return -EINVAL;
                }
        if (optind < argc) {
                log_error("render: unexpected argument \"%s\"; see --help", argv[optind]);
                return -EINVAL;
        }
        static const struct {
                const char *flag;
                size_t off;
        } required[] = {
                {"--asset-output-dir", offsetof(Flags, out)},
                {"--etcd-image", offsetof(Flags, image)},
                {"--network-config-file", offsetof(Flags, network)},
                {"--cluster-configmap-file", offsetof(Flags, cluster)},
                {"--infra-config-file", offsetof(Flags, infra)},
        };
        for (size_t i = 0; i < ELEMENTSOF(required); i++)
                if (!*(const char **) ((const char *) f + required[i].off)) {
                        log_error("render: %s is required; see --help", required[i].flag);
                        return -EINVAL;
                }
        return 0;
}

static int render_main(int argc, char *argv[])
{
        Flags f = {};
        RenderInputs in = {};
        _cleanup_free_ char *err = NULL;
        _cleanup_free_ IpAddr *addrs = NULL;
        char host[256] = "";
        size_t n = 0;
        int r;

        argc = cmd_take_verbosity(argc, argv);
        r = parse(argc, argv, &f);
        if (r != 0)
                return r > 0 ? EXIT_OK : EXIT_USAGE;

        RenderOptions o = {
                .output_dir = f.out,
                .etcd_image = f.image,
                .operator_image = f.operator_image ? f.operator_image
                                                   : "quay.io/openshift/origin-cluster-etcd-operator:latest",
                .listen_on_node_ip = f.node_ip,
                .key_type = PKI_KEY_RSA_2048,
                .now = now_usec(CLOCK_REALTIME),
                .inputs = &in};
        if (f.key_type) {
                o.key_type = streq(f.key_type, "rsa")     ? PKI_KEY_RSA_2048
                             : streq(f.key_type, "ecdsa") ? PKI_KEY_ECDSA_P256
                                                          : _PKI_KEY_TYPE_INVALID;
                if (o.key_type < 0)
                        return log_error("--key-type: \"%s\" is not rsa or ecdsa", f.key_type), EXIT_USAGE;
        }
        if (f.etcd_version) {
                char why[200];
                if (etcd_minor_parse_why(f.etcd_version, &o.etcd_minor, why, sizeof why) < 0)
                        return log_error("--etcd-image-version: %s", why), EXIT_USAGE;
        }
        if (f.speed && !streq(f.speed, "Standard") && !streq(f.speed, "Slower"))
                return log_error("--control-plane-hardware-speed: \"%s\" is not Standard or Slower",
                                 f.speed),
                       EXIT_USAGE;
        o.slower_hardware = f.speed && streq(f.speed, "Slower");
        if (f.hostname)
                o.hostname = f.hostname;
        else {
                (void) gethostname(host, sizeof host - 1);
                o.hostname = host;
        }

        if ((r = render_read_network(f.network, &in, &err)) < 0 ||
            (r = render_read_infrastructure(f.infra, &in, &err)) < 0 ||
            (r = render_read_cluster_config(f.cluster, &in, &err)) < 0) {
                log_error("%s", err ? err : strerror(-r));
                return EXIT_USAGE;
        }
        if (f.bootstrap_ip) {
                if (ip_parse(f.bootstrap_ip, &o.bootstrap_ip) < 0)
                        return log_error("--bootstrap-ip: \"%s\" is not an IPv4 or IPv6 address",
                                         f.bootstrap_ip),
                               EXIT_USAGE;
                if (render_check_bootstrap_ip(&in, &o.bootstrap_ip, &err) < 0)
                        return log_error("%s", err), EXIT_USAGE;
        } else {
                r = render_host_addresses(&addrs, &n);
                if (r < 0)
                        return log_error_errno(r, "cannot list this host's addresses"), EXIT_RUNTIME;
                if (render_pick_bootstrap_ip(&in, addrs, n, &o.bootstrap_ip, &err) < 0)
                        return log_error("%s", err), EXIT_USAGE;
        }
        /* The assisted installer leaves its marker on the bootstrap host; installed in place
         * there is no second master to wait for. */
        const char *marker = f.delayed_ha_marker ? f.delayed_ha_marker : DEFAULT_DELAYED_HA_MARKER;
        if (access(marker, F_OK) == 0) {
                if (in.bootstrap_in_place)
                        log_warning("render: %s exists but the install-config has bootstrapInPlace: "
                                    "single node, no delayed HA",
                                    marker);
                else {
                        o.delayed_ha = true;
                        log_info("render: %s exists: bootstrap may finish on two masters (delayed HA)",
                                 marker);
                }
        }
        r = render_bootstrap(&o, &err);
        if (r < 0) {
                log_error("%s", err ? err : strerror(-r));
                return r == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
        }
        return EXIT_OK;
}

const Command cmd_render = {
        .name = "render",
        .summary = "write the bootstrap etcd's static pod, certificates and cluster manifests",
        .run = render_main,
};
