/* The cluster facts every controller decides from, each defined once (what
 * upstream keeps in pkg/operator/ceohelpers): which member is the bootstrap
 * one, how far the bootstrap has gone, which member runs on which master,
 * whether a node or pod is Ready, and which scaling strategy the cluster
 * was installed with. Pure readers of the caches and the etcd view; a
 * controller that needs one of these asks here and never re-derives it.
 * Quorum arithmetic lives on the etcd view (etcd/view.h). Addresses are
 * compared as canonical IPs (IPv6 included), never as URL strings.
 * This is the one header controllers include; the definitions are split by
 * topic, as upstream splits ceohelpers, each section naming its file. */
#pragma once

#include "common.h"
#include "render/netutil.h"
#include "render/tlsprofile.h"

/* ---- Nodes and pods (facts-nodes.c) ---- */

/* The nodes that run an etcd member: the masters and, on controlPlaneTopology
 * HighlyAvailableArbiter, the arbiter nodes too (label node-role.kubernetes.io/arbiter;
 * upstream's multi-selector lister), sorted by name, each once. A controller calling these
 * declares OP_WATCH_ETCD_NODES (and W_INFRASTRUCTURES, which says the topology). Borrowed
 * objects; free the array with free(). */
#define OP_WATCH_ETCD_NODES OP_WATCH(W_MASTER_NODES), OP_WATCH(W_ARBITER_NODES)
bool topology_has_arbiter(const SyncContext *ctx);
int op_list_etcd_nodes(const SyncContext *ctx, const KubeObject ***ret, size_t *ret_n);
/* The objects of `masters_w` and, on HighlyAvailableArbiter, those of `arbiters_w` not in
 * the first, sorted by name: op_list_etcd_nodes, op_list_etcd_machines. */
int op_list_with_arbiters(const SyncContext *ctx, OperatorWatch masters_w, OperatorWatch arbiters_w,
                          const KubeObject ***ret, size_t *ret_n);
/* The etcd node (as op_list_etcd_nodes counts them) named `name`, NULL when there is none. */
const KubeObject *op_get_etcd_node(const SyncContext *ctx, const char *name);

/* The first InternalIP of a Node as written there, NULL if it has none. */
const char *node_internal_ip(const KubeObject *node);
/* The Node's Ready condition is True. */
bool node_is_ready(const KubeObject *node);
/* The Pod's Ready condition is True (NULL: not ready). */
bool pod_is_ready(const KubeObject *pod);
/* The line of a container's termination message that says why the process ended, cut
 * to fit `out` (n bytes): a Go panic's own line ("panic: ..."), else the last non-empty
 * line without its klog header. */
void termination_line(const char *msg, char *out, size_t n);
/* NODE_<name>_... variable prefix: node name with '-' and '.' as '_'. */
char *node_envvar_name(const char *node);
/* The mirror pod openshift-etcd/etcd-<node>, NULL when not cached. */
const KubeObject *etcd_pod_of_node(const SyncContext *ctx, const char *node);
/* The address master `node`'s etcd is known by in the serving certificate it runs
 * with, when its Node has another one now (the master moved; the certificate for
 * the new address is not on it yet): the first IP SAN of etcd-serving-<node>.crt
 * in `all_certs` (etcd-all-certs-<the revision the node runs>) other than the
 * local ones every such certificate has (127.0.0.1, ::1). 1 with that address in buf; 0 when the certificate
 * names the Node's InternalIP or no other address; -ENOENT without the certificate, -EBADMSG when it does
 * not parse. */
int node_certified_ip(const KubeObject *all_certs, const KubeObject *node, char *buf, size_t n);
/* Where a moved master's etcd is reached, verified as the address its certificate names:
 * node_certified_ip() on the etcd-all-certs-<N> Secret (`get_secret` finds it by name)
 * of the revision N the node runs. 1 and the alias; 0 when none is needed or known. */
int node_address_alias(const KubeObject *etcd_cr, const KubeObject *node,
                       const KubeObject *(*get_secret)(const char *name, void *userdata), void *userdata,
                       EtcdAddressAlias *ret);
/* node_address_alias()'s secret lookup on the SyncContext `ctx`: openshift-etcd/<name>. */
const KubeObject *op_etcd_secret(const char *name, void *ctx);
/* The master whose voting member serves a certificate for an address the master no
 * longer has (node_address_alias: it moved, and a quorum restore brought the member
 * back on the new address), NULL when none. A member joining cannot check that
 * certificate: that node's new revision, with certificates for its address now, comes
 * before any member is added. */
const KubeObject *voter_on_old_certificate(const SyncContext *ctx, const EtcdViewSnapshot *s);
/* Whether revision `rev` was made for `node` at the address its Node has now: its
 * etcd-all-certs-<rev> certifies that address, and its etcd-pod-<rev> is the etcd pod
 * TargetConfigController renders now, which gives the node that address (NODE_<n>_IP). A
 * moved master's etcd restarted at a revision made before the move would certify, or look
 * for, the old one: its pod cannot start (and after a quorum restore, with it the only
 * voter, nothing could fix that). false with `why` said. */
bool revision_fits_node(const SyncContext *ctx, int64_t rev, const KubeObject *node, char *why, size_t n);

/* ---- Static pod revisions and their copies (facts-revisions.c) ---- */

/* The node's status.nodeStatuses[].currentRevision in etcds/cluster, 0 when none. */
int64_t node_current_revision(const KubeObject *etcd_cr, const char *node);
/* The revision a rollout is taking `node` to (its nodeStatuses entry in
 * etcds/cluster has a targetRevision above its currentRevision: the
 * InstallerController records it before its installer pod exists, the
 * NodeStatusController clears it once the node runs it), 0 when none. While
 * it is set, that node's etcd may restart at any moment. */
int64_t node_rollout_target(const KubeObject *etcd_cr, const char *node);
/* The static pod revision is stable: etcds/cluster publishes a
 * latestAvailableRevision and every node in status.nodeStatuses runs it with
 * no rollout pending. When it is not, and `why` is given, says which node is
 * behind (a rollout restarts etcd members at any moment until then). */
bool etcd_revision_stable(const KubeObject *etcd_cr, char *why, size_t n);
/* The node a rollout is taking to a new revision right now (the first
 * nodeStatuses entry with a targetRevision above its currentRevision, see
 * node_rollout_target), NULL when none; its target in `ret_target`. */
const char *etcd_node_rolling_out(const KubeObject *etcd_cr, int64_t *ret_target);

/* What a revision snapshots (RevisionController): the copies <name>-<N> of
 * these objects of openshift-etcd, with revision-status-<N> beside them. */
typedef struct RevisionedObject {
        OperatorWatch w;
        const KubeResource *res;
        const char *kind, *name;
} RevisionedObject;
#define N_REVISIONED_OBJECTS 4
extern const RevisionedObject revisioned_objects[N_REVISIONED_OBJECTS];
#define REVISION_STATUS_NAME "revision-status" /* revision-status-<N> */

/* The revision at `s` (decimal, above 0, no sign or leading zero), up to `end` (which
 * must then follow) or the string's end, else -1. */
int64_t revision_number(const char *s, char end);
/* N when `name` is "<base>-N", else -1. */
int64_t revision_copy_number(const char *name, const char *base);
/* The object a revision's copy `name` (a `res` in `ns`) snapshots, NULL when it is no copy. */
const RevisionedObject *revision_copy_of(const KubeResource *res, const char *ns, const char *name);

/* The informer cache keeps a copy's values whole only where a controller reads
 * them (every certificate of etcd-all-certs-<N>: a moved master's alias; every
 * bundle of etcd-all-bundles-<N>: the CA rollout). Any other value longer than a
 * digest (pod.yaml, private keys) is cached as "sha256:<hex>" of its text: the
 * revision controller only compares those with the current objects, and old
 * revisions' private keys stay out of the operator's memory. The API server
 * keeps the copies whole. Called by the cache transform on every copy. */
#define CACHED_DIGEST_PREFIX "sha256:"
int revision_copy_trim(const RevisionedObject *r, cJSON *copy, cJSON *dropped);
/* Whether a copy's cached map (data or binaryData, possibly trimmed) holds the
 * same as `source`'s: the same keys, each value equal or its digest. An absent map
 * and an empty one are the same (the API drops empty maps). */
bool revision_copy_map_matches(const cJSON *cached, const cJSON *source);

/* ---- Members and the masters they run on (facts-membership.c) ---- */

/* The opt-in for the automatic remedy of a member whose data is damaged (member-removal.c). */
#define REPLACE_DAMAGED_OVERRIDE "replaceDamagedMembers"
#define ETCD_PEER_PORT           2380

/* The host of "https://host:port" or "https://[v6]:port" as an IP; -EINVAL
 * when the URL is malformed or its host is a name. */
int url_host_ip(const char *url, IpAddr *ret);
/* "https://10.0.0.1:2380" or "https://[fd00::1]:2380" for a textual IP;
 * -EINVAL when `ip` is no IP. */
int etcd_peer_url_for_ip(const char *ip, char *buf, size_t n);
/* One of the member's peer URLs has this address. */
bool etcd_member_has_ip(const EtcdMemberState *m, const IpAddr *a);
/* The member that runs on a master: the one named after it, else the one
 * whose peer URL has one of the node's InternalIPs. NULL when none. */
const EtcdMemberState *member_of_node(const EtcdViewSnapshot *s, const KubeObject *node);

/* The member's name, or its ID in hex while it has none (unstarted). */
const char *etcd_member_label(const EtcdMemberState *m, char hex[static 17]);
/* The voter to hand leadership to before the leader goes away or is busy: a
 * started, healthy voter other than the leader that answered its status, the
 * most caught up first; `skip` (NULL: none) rules members out. NULL when none. */
const EtcdMemberState *leader_handover_target(const EtcdViewSnapshot *s,
                                              bool (*skip)(const EtcdMemberState *m));
/* The member's data is damaged, in etcd's own words: it raised the CORRUPT alarm, or its
 * etcd container (in pod etcd-<member name>) has exited at least 3 times and the last
 * exit's output carries one of etcd's or bbolt's messages for damaged data ("failed to
 * open database", "checksum error", ...). Says which in `why`. */
bool member_data_damaged(const SyncContext *ctx, const EtcdViewSnapshot *s, const EtcdMemberState *m,
                         char *why, size_t n);
/* spec.unsupportedConfigOverrides.replaceDamagedMembers of etcds/cluster is true. */
bool replace_damaged_members(const SyncContext *ctx);

/* Where the cluster stands against the etcd minor the release's image carries, from the
 * members' statuses (etcd_downgrade_state). etcd's cluster version is the lowest minor its
 * members run and never goes down by itself: a member of an older minor is refused
 * ("invalid downgrade; server version is lower than determined cluster version") unless
 * etcd's downgrade to that minor is enabled and every member's storage has reached it. */
typedef enum EtcdDowngrade {
        ETCD_DOWNGRADE_NONE,      /* some member runs the image's minor or older: roll it out */
        ETCD_DOWNGRADE_UNKNOWN,   /* no member answered its status */
        ETCD_DOWNGRADE_NEEDED,    /* every member runs a newer minor; no downgrade to ours enabled */
        ETCD_DOWNGRADE_MIGRATING, /* enabled to ours; a member's storage is still newer */
        ETCD_DOWNGRADE_READY,     /* enabled to ours, every storage at it: roll the older etcd out */
        ETCD_DOWNGRADE_STALE,     /* enabled to a minor the image no longer carries: cancel it */
} EtcdDowngrade;

/* The judgement above, and in why[n] the versions it rests on for a person
 * ("members run 3.6.16, 3.6.16, 3.6.16; storage 3.6.0, ..."). */
EtcdDowngrade etcd_downgrade_state(const EtcdViewSnapshot *s, EtcdMinor image, char *why, size_t n);
/* The master a member runs on (member_of_node's inverse), NULL when no master Node has it. */
const KubeObject *node_of_member(const SyncContext *ctx, const EtcdViewSnapshot *s,
                                 const EtcdMemberState *m);

/* The master a member belonged to before that master's address changed: the master
 * Node named as the member, with InternalIPs of which none is in the member's peer
 * URLs, while no master has the member's address. NULL otherwise (unstarted members
 * have no name: NULL). */
const KubeObject *moved_master_of_member(const SyncContext *ctx, const EtcdMemberState *m);

/* The first master Node that runs no member and is not leaving (its Machine is
 * not being deleted): a master waiting to join. NULL when none. */
const KubeObject *master_joining(const SyncContext *ctx, const EtcdViewSnapshot *s);

/* Member `m` of master `node` is down with its etcd pod at revision `rev` and not ready: the
 * node restarted into `rev` and etcd did not come back. */
bool etcd_down_at_revision(const SyncContext *ctx, const KubeObject *node, const EtcdMemberState *m,
                           int64_t rev);
/* A voting member is down because its master's etcd does not come up at revision `latest`:
 * every voter that is not healthy runs on a master whose etcd pod is at `latest` and not
 * ready (a revision that cannot start there, as a release whose etcd image the pod's setup
 * container refuses), and the healthy voters keep quorum. Only a newer revision can bring
 * such a member back. Returns the first such master, NULL when it is not so. */
const KubeObject *voter_down_at_revision(const SyncContext *ctx, const EtcdViewSnapshot *s, int64_t latest);

/* ---- Machines (facts-machines.c) ----
 * machine.openshift.io, where the Machine API runs. The Machines of the etcd nodes:
 * those of role master (machine.openshift.io/cluster-api-machine-role) and, on
 * controlPlaneTopology HighlyAvailableArbiter, those of role arbiter (the installer
 * labels an arbiter's Machine so), as op_list_etcd_nodes counts Nodes. A controller
 * calling these declares OP_WATCH_ETCD_MACHINES and W_INFRASTRUCTURES. */
#define OP_WATCH_ETCD_MACHINES OP_WATCH(W_MASTER_MACHINES), OP_WATCH(W_ARBITER_MACHINES)
/* Those Machines, sorted by name, each once. Borrowed objects; free the array with free(). */
int op_list_etcd_machines(const SyncContext *ctx, const KubeObject ***ret, size_t *ret_n);

/* The pre-drain lifecycle hook the operator keeps on every etcd node's Machine: the
 * Machine API drains (and so stops etcd on) a deleted master or arbiter only once it
 * is lifted, which the operator does when that node's member is gone. */
#define MACHINE_DELETION_HOOK       "EtcdQuorumOperator"
#define MACHINE_DELETION_HOOK_OWNER "clusteroperator/etcd"

/* The Machine API is functional: some etcd node's Machine is in phase Running
 * (upstream's test). Without it no member is removed for a Machine. */
bool machine_api_functional(const SyncContext *ctx);
/* The Machine is being deleted (it has a deletionTimestamp). */
bool machine_pending_deletion(const KubeObject *machine);
/* The Machine carries the operator's pre-drain hook, name and owner both. */
bool machine_has_deletion_hook(const KubeObject *machine);
/* The etcd node's Machine one of whose InternalIP addresses a peer URL of `m`
 * has, NULL when none (the Machine keeps its addresses after its Node is gone). */
const KubeObject *machine_of_member(const SyncContext *ctx, const EtcdMemberState *m);
/* The member (learners and unstarted ones included) with a peer URL on one of
 * the Machine's InternalIPs, NULL when none. */
const EtcdMemberState *member_of_machine(const EtcdViewSnapshot *s, const KubeObject *machine);
/* The etcd node's Machine whose status.nodeRef names `node`, NULL when none. */
const KubeObject *machine_of_node(const SyncContext *ctx, const char *node);

/* ---- Bootstrap (facts-bootstrap.c) ---- */

/* The bootstrap host's IP from the etcd-endpoints annotation, NULL once it is gone. */
const char *bootstrap_ip(const SyncContext *ctx);
/* The same annotation on any object (etcd-endpoints, host-etcd-2); NULL when absent. */
const char *bootstrap_ip_of(const KubeObject *o);
/* The member named etcd-bootstrap, or one on the bootstrap IP that is not
 * named after a master (bootstrap-in-place reuses the host for a master). */
bool is_bootstrap_member(const SyncContext *ctx, const EtcdMemberState *m, const char *bootstrap_ip);
const EtcdMemberState *bootstrap_member(const SyncContext *ctx, const EtcdViewSnapshot *s);

/* The installer has said the bootstrap is complete: kube-system/bootstrap
 * has status "complete", or the Event named bootstrap-finished exists. From then
 * on the bootstrap member may be removed at any moment. The controller must
 * watch W_KUBE_SYSTEM_CONFIGMAPS and W_KUBE_SYSTEM_EVENTS. */
bool bootstrap_reported_complete(const SyncContext *ctx);

typedef enum BootstrapPhase {
        BOOTSTRAP_IN_PROGRESS, /* the installer has not reported completion */
        BOOTSTRAP_REPORTED,    /* reported; the bootstrap member is still listed, or membership is unknown */
        BOOTSTRAP_OVER,        /* reported and the member list has no bootstrap member (upstream's
                                * ceohelpers.IsBootstrapComplete): the cluster runs on its masters */
        _BOOTSTRAP_PHASE_MAX,
        _BOOTSTRAP_PHASE_INVALID = -EINVAL,
} BootstrapPhase;

BootstrapPhase bootstrap_phase(const SyncContext *ctx, const EtcdViewSnapshot *s);
const char *bootstrap_phase_to_string(BootstrapPhase p);

/* ---- Scaling strategy and the control plane's size (facts-scaling.c) ----
 * Upstream's ceohelpers.GetBootstrapScalingStrategy. */

#define UNSAFE_NON_HA_OVERRIDE "useUnsupportedUnsafeNonHANonProductionUnstableEtcd"
/* spec.unsupportedConfigOverrides.useUnsupportedUnsafeNonHANonProductionUnstableEtcd. */
bool etcd_unsafe_non_ha(const SyncContext *ctx);

typedef enum ScalingStrategy {
        SCALING_HA,                 /* the default: three masters, quorum kept at all times */
        SCALING_DELAYED_HA,         /* bootstrap may finish on two masters (assisted installer) */
        SCALING_UNSAFE,             /* the unsafe non-HA override, or controlPlaneTopology SingleReplica */
        SCALING_BOOTSTRAP_IN_PLACE, /* single-node installed in place (install-config bootstrapInPlace) */
        _SCALING_STRATEGY_MAX,
        _SCALING_STRATEGY_INVALID = -EINVAL,
} ScalingStrategy;

/* Reads etcds/cluster, infrastructures/cluster, kube-system/cluster-config-v1
 * and the openshift-etcd namespace (W_ETCD_CR, W_INFRASTRUCTURES,
 * W_KUBE_SYSTEM_CONFIGMAPS, W_NAMESPACES). */
ScalingStrategy scaling_strategy(const SyncContext *ctx);

/* infrastructures/cluster status.controlPlaneTopology (W_INFRASTRUCTURES), NULL when unset. */
const char *control_plane_topology(const SyncContext *ctx);
/* Why this operator does not manage etcd on the cluster's topology, in a phrase: DualReplica
 * (two masters, etcd run by the fencing agent), External (a hosted control plane); NULL for
 * HighlyAvailable, HighlyAvailableArbiter (whose arbiter node's member counts as a master's:
 * op_list_etcd_nodes), SingleReplica or unset. */
const char *topology_unsupported(const SyncContext *ctx);
/* For the controllers that change etcd's pods or membership: true (and the plan waiting,
 * reason UnsupportedControlPlaneTopology) on such a topology, where they do nothing rather
 * than act as on three masters. ControlPlaneTopologyController reports it as Degraded. */
bool topology_holds_back(const SyncContext *ctx, Plan *p);
const char *scaling_strategy_to_string(ScalingStrategy s);
/* Members (the bootstrap one included) that must be healthy voters before
 * the bootstrap member may go: HA 4, delayed HA 3, single member 2. */
size_t scaling_members_before_teardown(ScalingStrategy s);
/* A cluster of one member by design: rollouts cannot keep quorum with one to
 * spare, and no gate asks them to. */
bool scaling_is_single_member(ScalingStrategy s);
/* A control plane of one node by design: controlPlaneTopology SingleReplica, or installed in
 * place (install-config bootstrapInPlace). Not the unsafe non-HA override, which a runbook
 * sets on a cluster of three for a while. */
bool single_node_by_design(const SyncContext *ctx);

/* controlPlane.replicas of the install-config (kube-system/cluster-config-v1,
 * W_KUBE_SYSTEM_CONFIGMAPS), plus arbiter.replicas on controlPlaneTopology
 * HighlyAvailableArbiter (W_INFRASTRUCTURES): the members the cluster is meant to have.
 * 0 when unknown: nothing that needs the number is done then. */
size_t desired_control_plane_replicas(const SyncContext *ctx);

/* ---- etcd's configuration (facts-config.c) ---- */

/* The backend quota the members run with (ETCD_QUOTA_BACKEND_BYTES): etcds/cluster's
 * spec.backendQuotaGiB in bytes, 8 GiB when unset or outside 1..1024. */
uint64_t etcd_backend_quota_bytes(const KubeObject *etcd_cr);

/* etcds/cluster spec.controlPlaneHardwareSpeed is Slower, or is unset on a platform
 * upstream gives slower timings by default: Azure, and IBM Cloud of provider type VPC
 * (W_ETCD_CR, W_INFRASTRUCTURES). */
bool etcd_hardware_slower(const SyncContext *ctx);

/* etcd's cipher suites and minimum TLS version from apiservers/cluster
 * spec.tlsSecurityProfile (render/tlsprofile.h), Intermediate without an APIServer
 * (W_APISERVERS). -EINVAL with `why` naming the field and the fix. */
int etcd_tls_settings(const SyncContext *ctx, EtcdTls *ret, char *why, size_t why_size);

/* ---- Backups to S3-compatible object storage (facts-backup.c) ----
 * The annotations are base/contract.h's. */

#define S3_DEFAULT_GRACE (72 * 3600 * USEC_PER_SEC)

typedef struct BackupStore {
        const char *secret, *bucket, *prefix, *gc_policy; /* point into the object */
        unsigned max_backups;                             /* 0: the caller's default */
        usec_t grace;
} BackupStore;

/* The store the object's annotations name: 0 with *ret set, -ENOENT when it
 * names none (no s3-* annotation), -EINVAL with `why` naming the annotation
 * and the fix when one is wrong (s3-secret, s3-bucket and s3-prefix are
 * required together; the prefix is the cluster's own place in a bucket that
 * many share, so it may not be empty). */
int backup_store_of(const cJSON *obj, BackupStore *ret, char *why, size_t n);
