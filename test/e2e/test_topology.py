#!/usr/bin/env python3
"""e2e/local-up and e2e/topology-sno, -arbiter and -delayed-ha: the demo (hack/local-up.sh
[--topology T]) as a user runs it, on the test's build tree, in a scratch directory on loopback addresses of its own,
with the 50 ms writer and the invariant watcher (scenario.py) on etcd from the moment the
bootstrap member serves until the cluster has settled; its summary printed, kube-apiserver
having refused no request of the operator's or the pods'. Then:

  ha       the README's command, no --topology: three voters, master-0 to master-2, a guard and
           the latest revision on each. Then a split brain (split_brain): an etcd restored alone
           answers on master-2's address; the operator names both sides and changes nothing
           until one cluster is left (docs/runbooks/split-brain.md).

  sno      on etcd 3.6 (local-up.sh --etcd 3.6: the release's etcd image carries the etcd
           hack/build-etcd.sh builds; e2e/dr restores on 3.5): one voter, master-0, the only
           member ever listed (the member the bootstrap ran on the node is the master's:
           nothing added, nothing removed, through the node's reboot and the operator's first
           revision); its pod at an operator revision; the member reports etcd 3.6.
           Then the restore runbook's single-node form, word for word (runbook.py): a backup
           (backup.md), an object created after it, restore-after-quorum-loss.md from its
           second command block (no other master to stop), the restore pod running the
           image's etcdutl: one voter again, on 3.6, the object gone, every write
           acknowledged before the backup there, the old data dir moved aside.
  arbiter  three voters: master-0, master-1 and arbiter-0; an etcd pod at the latest revision
           and a quorum guard on each of the three (the arbiter included); the arbiter node
           tainted, and no pod there but etcd's own (its static pod, installer, guard,
           pruner). Then the arbiter replaced through the Machine API as
           docs/runbooks/replace-master.md says (replace_arbiter): arbiter-1 joins, arbiter-0's
           Machine is deleted, its member goes only after arbiter-1 votes, the hook is lifted
           only once it is gone (3 -> 4 -> 3), under the writer and the watcher.
  delayed-ha  openshift-etcd annotated openshift.io/delayed-bootstrap by render (the assisted
           installer's marker); the bootstrap member removed while master-0 and master-1 were
           the only members (the cluster ran on those two), then master-2 added: three voters.
  all      clusteroperator/etcd Available, not Progressing, not Degraded; the per-member view
           (openshift-etcd-operator/etcd-members) as each member's own status says;
           ControlPlaneTopologyDegraded False; no acknowledged write lost; no invariant broken
           (membership changed only with every voter healthy, never two pending members, quorum
           never lost longer than an election, except for the restarts of a single member);
           `local-up.sh --down` stops every process it started.

Usage: test_topology.py BUILD_DIR ha|sno|arbiter|delayed-ha"""
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import ROOT, keep_test_dirs, log, wait_for  # noqa: E402
from etcdhttp import Etcd  # noqa: E402
from runbook import Runbook  # noqa: E402
from scenario import ELECTION_TIMEOUT_S, Watcher, Writer  # noqa: E402

# hack/local-up.sh renders and runs etcd with controlPlaneHardwareSpeed Slower.
LOCAL_UP_ELECTION_TIMEOUT = ELECTION_TIMEOUT_S["Slower"]

# The scenarios whose release carries etcd 3.6 (the others run Debian's 3.5).
ETCD_FLAGS = {"sno": ["--etcd", "3.6"]}
ETCD_MINOR = {"sno": "3.6."}


def member_versions(etcd, eps):
    """{member name: the etcd version it reports} of every member that answers."""
    out = {}
    for ep in eps:
        try:
            _, st = etcd.first([ep], "/v3/maintenance/status", {})
        except OSError:  # a member that does not answer is left out
            continue
        name = next((m.get("name") for m in etcd.members([ep]) if str(m.get("ID")) == str(
            (st.get("header") or {}).get("member_id"))), ep)
        out[name] = st.get("version")
    return out


def check_etcd_minor(etcd, eps, topology, when):
    want = ETCD_MINOR.get(topology, "3.5.")
    got = member_versions(etcd, eps)
    assert got and all(str(v).startswith(want) for v in got.values()), \
        "%s: members report %s, not etcd %sx" % (when, got, want)
    log("%s: every member runs etcd %s" % (when, ", ".join(sorted(set(got.values())))))


SHAPES = {
    "ha": {"masters": ["master-0", "master-1", "master-2"], "arbiters": [], "bootstrap": 5},
    "sno": {"masters": ["master-0"], "arbiters": [], "bootstrap": 10},
    "arbiter": {"masters": ["master-0", "master-1"], "arbiters": ["arbiter-0"], "bootstrap": 5},
    "delayed-ha": {"masters": ["master-0", "master-1", "master-2"], "arbiters": [], "bootstrap": 5},
}


class Admin:
    """What runbook.py needs of a scenario: the admin's kubeconfig."""

    def __init__(self, kubeconfig):
        self.kubeconfig = kubeconfig


def restore_single_node(state, files, eps, kubectl):
    """backup.md, then restore-after-quorum-loss.md on the one master, under the writer and
    a watcher of a single-member cluster."""
    node_root = os.path.join(state, "nodes", "master-0")
    roots = {"master-0": node_root}
    # <other-host>: none on a single node (its block runs for each, so not at all); the
    # store's placeholders belong to steps not run here.
    hosts = {"<backup-host>": "master-0", "<recovery-host>": "master-0", "<other-host>": [],
             "<bucket>": "unused", "<prefix>": "unused"}
    admin = Admin(os.path.join(state, "kube", "kubeconfig"))
    etcd = Etcd(*files)
    watcher = Watcher(Etcd(*files), lambda: eps, single_member=True, election_timeout=LOCAL_UP_ELECTION_TIMEOUT)
    writer = Writer(Etcd(*files), lambda: eps)
    watcher.start()
    writer.start()
    try:
        wait_for("writes before the backup", lambda: len(writer.acked) >= 20, 60)
        acked_before = list(writer.acked)
        Runbook(admin, "backup.md", hosts, roots).run(last=2)  # the check, the backup on the master
        backup = os.path.join(node_root, "home/core/assets/backup")
        names = sorted(os.listdir(backup))
        assert [f.split("_")[0] for f in names] == ["checksums", "snapshot", "static"], names
        kubectl("create", "configmap", "-n", "default", "made-after-the-backup")
        book = Runbook(admin, "restore-after-quorum-loss.md", hosts, roots)
        t0 = time.monotonic()
        book.run(first=2)  # step 1 fetches from a store; step 2 has no other master
        log("restore runbook on the single node: %.0f s" % (time.monotonic() - t0))
    finally:
        writer.stop.set()
        watcher.stop.set()
        writer.join()
        watcher.join()
    members = etcd.members(eps)
    got = sorted((m.get("name"), bool(m.get("isLearner"))) for m in members)
    assert got == [("master-0", False)], "members after the restore: %s" % got
    r = subprocess.run(["kubectl", "--kubeconfig", admin.kubeconfig, "get", "configmap", "-n", "default",
                        "made-after-the-backup"], capture_output=True, text=True)
    assert r.returncode != 0 and "NotFound" in r.stderr, "the object made after the backup: %s" % (r.stdout + r.stderr)
    lost = [k for k in acked_before if etcd.get(eps, k) is None]
    assert not lost, "writes acknowledged before the backup lost: %s" % lost[:5]
    moved = os.path.join(node_root, "var/lib/etcd-backup")
    assert os.path.isdir(moved) and os.listdir(moved), "the old data dir was not moved aside to %s" % moved
    assert not watcher.violations, "invariants broken during the restore: %s" % watcher.violations[:5]
    log("restored: one voter, the later object gone, %d writes from before the backup there, the old data "
        "in /var/lib/etcd-backup" % len(acked_before))


# docs/runbooks/replace-master.md's commands (runbook.py numbers them from 1): those of the
# master's steps 2 to 4, then the arbiter's check ("An arbiter", step 1).
RB_WAIT_VOTER, RB_DELETE_OLD, RB_WATCH, RB_ARBITER_CHECK = 2, 3, 4, 7
IMAGE_FLAGS = ["quay.io/openshift/etcd[@:]*=%s/etcd", "quay.io/openshift/*cluster-etcd-operator[@:]*=%s/operator",
               "quay.io/openshift/*:sim=%s/base"]


def start_kubelet(state, build, env, node, ip, master):
    """A node's kubelet as hack/local-up.sh starts one (start_node_kubelet), its PID where
    `local-up.sh --down` finds it."""
    kubeconfig = subprocess.run(["python3", os.path.join(ROOT, "test", "kube", "control-plane"),
                                 "node-kubeconfig", os.path.join(state, "kube"), node],
                                env=env, capture_output=True, text=True, check=True).stdout.strip()
    images = os.path.join(build, "images")
    os.makedirs(os.path.join(state, "nodes", node), exist_ok=True)
    argv = [os.path.join(ROOT, "test", "sim", "kubelet-sim"), "--node-name", node, "--node-ip", ip,
            "--root", os.path.join(state, "nodes", node), "--kubeconfig", kubeconfig,
            "--operator-binary", os.path.join(build, "cluster-etcd-operator")]
    argv += ["--master", "--no-role-labels"] if master else []
    argv += ["--backoff-base", "0.5", "--backoff-max", "5", "--startup-probe-step", "0.5"]
    for flag in IMAGE_FLAGS:
        argv += ["--image", flag % images]
    with open(os.path.join(state, "logs", "kubelet-%s.log" % node), "a") as log_f:
        kubelet = subprocess.Popen(argv, env=env, stdout=log_f, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
    with open(os.path.join(state, "pids", "kubelet-%s.pid" % node), "w") as f:
        f.write("%d\n" % kubelet.pid)
    return kubelet


def stop_kubelet(state, node):
    """SIGTERM to the node's kubelet (started by local-up or start_kubelet): it stops its
    containers and exits, the host going down with its pods."""
    pid_file = os.path.join(state, "pids", "kubelet-%s.pid" % node)
    pid = int(open(pid_file).read())
    os.kill(pid, signal.SIGTERM)
    wait_for("%s's kubelet to stop its pods and exit" % node,
             lambda: subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True,
                                    text=True).stdout.strip()[:1] in ("", "Z"), 60)
    os.unlink(pid_file)


MACHINE_NS = "openshift-machine-api"
MACHINE_ROLE = "machine.openshift.io/cluster-api-machine-role"
HOOK = {"name": "EtcdQuorumOperator", "owner": "clusteroperator/etcd"}


def replace_arbiter(state, net, build, env, files, eps, kubectl):
    """Issue 36: the arbiter replaced through the Machine API, as docs/runbooks/replace-master.md's
    "An arbiter" says, under the writer and the watcher. The test plays the Machine API (as
    machines.py does for masters): a Machine per etcd node, the arbiter's of role arbiter; the
    operator puts its pre-drain hook on all three. arbiter-1's host comes up with its Machine;
    its member joins (four voters); arbiter-0's Machine is deleted; the operator removes its
    member and only then lifts the hook; the drain goes through the guard budget; the host goes.
    Then master-0, master-1 and arbiter-1 vote, arbiter-1 at the latest revision with its guard."""
    def kubectl_in(doc, *args):
        r = subprocess.run(["kubectl", "--kubeconfig", os.path.join(state, "kube", "kubeconfig")] + list(args),
                           input=json.dumps(doc), env=env, capture_output=True, text=True)
        assert r.returncode == 0, "kubectl %s: %s" % (" ".join(args), r.stderr)

    def get_machine(name):
        r = subprocess.run(["kubectl", "--kubeconfig", os.path.join(state, "kube", "kubeconfig"), "get",
                            "machine", "-n", MACHINE_NS, name, "-o", "json", "--ignore-not-found"],
                           env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout) if r.stdout.strip() else None

    def hooks(m):
        return (((m or {}).get("spec") or {}).get("lifecycleHooks") or {}).get("preDrain") or []

    def create_machine(node, ip, role):
        name = "e2e-" + node
        kubectl_in({"apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
                    "metadata": {"name": name, "namespace": MACHINE_NS, "finalizers": ["machine.openshift.io"],
                                 "labels": {MACHINE_ROLE: role, "machine.openshift.io/cluster-api-machine-type": role}},
                    "spec": {"providerSpec": {}}}, "apply", "-f", "-")
        kubectl("patch", "machine", "-n", MACHINE_NS, name, "--subresource=status", "--type=merge", "-p",
                json.dumps({"status": {"phase": "Running", "nodeRef": {"kind": "Node", "name": node},
                                       "addresses": [{"type": "InternalIP", "address": ip},
                                                     {"type": "Hostname", "address": node}]}}))

    etcd = Etcd(*files)

    def voters():
        return sorted((m.get("name"), bool(m.get("isLearner"))) for m in etcd.members(eps))

    kubectl("create", "namespace", MACHINE_NS)
    nodes = {"master-0": ("%s.10" % net, "master"), "master-1": ("%s.11" % net, "master"),
             "arbiter-0": ("%s.12" % net, "arbiter")}
    for node, (ip, role) in nodes.items():
        create_machine(node, ip, role)
    wait_for("the EtcdQuorumOperator hook on the masters' and the arbiter's Machines",
             lambda: all(HOOK in hooks(get_machine("e2e-" + n)) for n in nodes), 60)
    log("the operator put its pre-drain hook on e2e-master-0, e2e-master-1 and e2e-arbiter-0 (role arbiter)")

    admin = Admin(os.path.join(state, "kube", "kubeconfig"))
    book = Runbook(admin, "replace-master.md", {"<old-machine>": "e2e-arbiter-0", "<dead-machine>": "unused"}, {})
    watcher = Watcher(Etcd(*files), lambda: eps, election_timeout=LOCAL_UP_ELECTION_TIMEOUT)
    writer = Writer(Etcd(*files), lambda: eps)
    watcher.start()
    writer.start()
    t0 = time.monotonic()
    try:
        out = book.run(RB_ARBITER_CHECK, RB_ARBITER_CHECK)[0]
        assert "EtcdMembersAvailable=True" in out and "e2e-arbiter-0" in out and "e2e-master-0" not in out, out
        # The new arbiter's host (as local-up starts a node's kubelet), its Node labelled and tainted
        # as the installer's arbiter pool has it, then its Machine.
        new_ip = "%s.13" % net
        eps.append("https://%s:2379" % new_ip)
        start_kubelet(state, build, env, "arbiter-1", new_ip, master=False)

        def labelled():
            r = subprocess.run(["kubectl", "--kubeconfig", admin.kubeconfig, "label", "--overwrite", "node",
                                "arbiter-1", "node-role.kubernetes.io/arbiter="], env=env, capture_output=True)
            return r.returncode == 0
        wait_for("arbiter-1's Node", labelled, 60)
        kubectl("taint", "--overwrite", "node", "arbiter-1", "node-role.kubernetes.io/arbiter=:NoSchedule")
        create_machine("arbiter-1", new_ip, "arbiter")
        wait_for("the hook on e2e-arbiter-1", lambda: HOOK in hooks(get_machine("e2e-arbiter-1")), 60)

        def voter_joined():
            out = book.run(RB_WAIT_VOTER, RB_WAIT_VOTER)[0]
            return "4 members are available" in out and "EtcdMembersDegraded=False" in out and \
                "EtcdMembersProgressing=False" in out
        wait_for("the runbook's step 2 to say done (four members)", voter_joined, 300, interval=3)
        assert ("arbiter-1", False) in voters(), voters()
        log("four voters: %s" % ", ".join(n for n, _ in voters()))

        # The old arbiter's Machine is deleted: the finalizer holds it, the hook holds its drain.
        book.run(RB_DELETE_OLD, RB_DELETE_OLD)
        m = wait_for("the hook lifted from e2e-arbiter-0",
                     lambda: (lambda m: m if m and not hooks(m) else None)(get_machine("e2e-arbiter-0")), 300)
        assert m["metadata"].get("deletionTimestamp"), m["metadata"]
        names = [n for n, _ in voters()]
        assert "arbiter-0" not in names, "hook lifted while arbiter-0 was still a member: %s" % names
        out = book.run_until(RB_WATCH, lambda o: "arbiter-0" in o and "ScaleDown" in o, "ScaleDown of arbiter-0")
        assert "EtcdQuorumOperator" not in out, "the runbook's step 4 still shows the hook: %s" % out
        # The machine controller: the drain (the guard through its budget), then the host goes.
        kubectl("drain", "arbiter-0", "--ignore-daemonsets", "--force", "--delete-emptydir-data",
                "--timeout", "120s")
        stop_kubelet(state, "arbiter-0")
        kubectl("delete", "node", "arbiter-0", "--wait=false")
        kubectl("delete", "pods", "-n", "openshift-etcd", "--field-selector", "spec.nodeName=arbiter-0",
                "--grace-period=0", "--force", "--wait=false")
        kubectl("patch", "machine", "-n", MACHINE_NS, "e2e-arbiter-0", "--type=json", "-p",
                json.dumps([{"op": "remove", "path": "/metadata/finalizers"}]))
        wait_for("e2e-arbiter-0 gone", lambda: get_machine("e2e-arbiter-0") is None, 60)
        eps.remove("https://%s.12:2379" % net)
        final = [("arbiter-1", False), ("master-0", False), ("master-1", False)]
        wait_for("the watcher to see master-0, master-1 and arbiter-1 as voters", lambda: watcher.last == final, 60)

        def settled():
            cr = kubectl("get", "etcd", "cluster", "-o", "json")
            latest = cr["status"]["latestAvailableRevision"]
            st = {s["nodeName"]: s.get("currentRevision") for s in cr["status"].get("nodeStatuses", [])}
            pods = {p["metadata"]["name"] for p in kubectl("get", "pods", "-n", "openshift-etcd", "-o",
                                                              "json")["items"]}
            return sorted(st) == ["arbiter-1", "master-0", "master-1"] and \
                all(v == latest for v in st.values()) and "etcd-guard-arbiter-1" in pods
        wait_for("arbiter-1 at the latest revision with its guard, arbiter-0's status gone", settled, 300, interval=3)
    finally:
        writer.stop.set()
        watcher.stop.set()
        writer.join()
        watcher.join()
    lost = [k for k in writer.acked if etcd.get(eps, k) is None]
    assert not lost, "acknowledged writes lost during the arbiter's replacement: %s" % lost[:5]
    assert not watcher.violations, "invariants broken during the arbiter's replacement: %s" % watcher.violations[:5]
    sizes = [len(shape) for _, shape, _ in watcher.history]
    assert max(sizes) == 4 and sizes[-1] == 3, sizes
    for _, shape, _ in watcher.history:
        names = dict(shape)
        assert "arbiter-0" in names or names.get("arbiter-1") is False, \
            "arbiter-0 removed before arbiter-1 voted: %s" % shape
    log("arbiter replaced in %.0f s: members %s; writer %d acknowledged, 0 lost; %d membership changes"
        % (time.monotonic() - t0, " -> ".join("+".join(n for n, _ in sh) for _, sh, _ in watcher.history),
           len(writer.acked), watcher.changes))


# docs/runbooks/split-brain.md's ```sh blocks: step 1 (read the condition) and step 3 (check it again).
RB_SPLIT_READ, RB_SPLIT_CHECK = 1, 2
# The operator's log lines of an etcd change begun (runtime/executor.c: "<what>: starting").
ETCD_CHANGES = (": etcd add learner", ": etcd promote", ": etcd remove", ": etcd update member",
                ": etcd defragment", ": etcd compact", ": etcd disarm", ": etcd move leader")


def etcd_changes_begun(op_log):
    return [line for line in open(op_log, errors="replace")
            if line.rstrip().endswith(": starting") and any(c in line for c in ETCD_CHANGES)]


def split_brain(state, net, build, env, files, kubectl):
    """Issue 37, point 4: a member restored alone beside the running cluster. master-2's host
    goes down; an etcd restored from a snapshot of the cluster, alone (a cluster of its own,
    another cluster ID), then answers on master-2's address with master-2's certificates (its
    HTTP listener on 2381, where the operator and the test read; its gRPC on a side port, so
    that this test's kube-apiserver keeps to master-0 and master-1 and the test can read what
    the operator says). The operator must name both sides in EtcdMembersDegraded/SplitBrain
    (docs/runbooks/split-brain.md step 1, word for word) and, for 40 s, change nothing: no
    etcd change carried out (its log), no member added to either side, etcd-endpoints as it
    was; the writer and the watcher on master-0 and master-1 see no write lost and no
    membership change. Then the test plays step 2 (that etcd stopped, master-2's own etcd
    back, its data intact) and step 3 says one cluster is left."""
    ip = "%s.12" % net
    good = ["https://%s.10:2379" % net, "https://%s.11:2379" % net]
    etcd = Etcd(*files)
    ca, cert, key = files
    admin = Admin(os.path.join(state, "kube", "kubeconfig"))
    book = Runbook(admin, "split-brain.md", {}, {})
    d = os.path.join(state, "split-brain")
    os.makedirs(d)
    snap = os.path.join(d, "snapshot.db")
    r = subprocess.run(["etcdctl", "--endpoints", good[0], "--cacert", ca, "--cert", cert, "--key", key,
                        "snapshot", "save", snap], capture_output=True, text=True)
    assert r.returncode == 0, "etcdctl snapshot save: %s" % r.stderr[-500:]

    watcher = Watcher(Etcd(*files), lambda: good, election_timeout=LOCAL_UP_ELECTION_TIMEOUT)
    writer = Writer(Etcd(*files), lambda: good)
    watcher.start()
    writer.start()
    rogue = None
    try:
        wait_for("writes before the split", lambda: len(writer.acked) >= 20, 60)
        stop_kubelet(state, "master-2")
        r = subprocess.run(["etcdutl", "snapshot", "restore", snap, "--name", "master-2", "--data-dir",
                            os.path.join(d, "data"), "--initial-cluster", "master-2=https://%s:2380" % ip,
                            "--initial-advertise-peer-urls", "https://%s:2380" % ip,
                            "--initial-cluster-token", "split-brain"], capture_output=True, text=True)
        assert r.returncode == 0, "etcdutl snapshot restore: %s" % r.stderr[-500:]
        certs = os.path.join(state, "nodes", "master-2", "etc", "kubernetes", "static-pod-resources", "etcd-certs")
        leaf = os.path.join(certs, "secrets", "etcd-all-certs")
        bundle = os.path.join(certs, "configmaps", "etcd-all-bundles", "server-ca-bundle.crt")
        assert os.path.exists(bundle), "no CA bundle at %s" % bundle
        rogue_log = open(os.path.join(state, "logs", "split-brain-etcd.log"), "w")
        rogue = subprocess.Popen(
            ["etcd", "--name", "master-2", "--data-dir", os.path.join(d, "data"),
             "--listen-client-urls", "https://%s:12379" % ip, "--advertise-client-urls", "https://%s:2379" % ip,
             "--listen-client-http-urls", "https://%s:2381" % ip,
             "--listen-peer-urls", "https://%s:2380" % ip, "--initial-advertise-peer-urls", "https://%s:2380" % ip,
             "--cert-file", os.path.join(leaf, "etcd-serving-master-2.crt"),
             "--key-file", os.path.join(leaf, "etcd-serving-master-2.key"),
             "--trusted-ca-file", bundle, "--client-cert-auth",
             "--peer-cert-file", os.path.join(leaf, "etcd-peer-master-2.crt"),
             "--peer-key-file", os.path.join(leaf, "etcd-peer-master-2.key"),
             "--peer-trusted-ca-file", bundle, "--peer-client-cert-auth"],
            stdout=rogue_log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        rogue_log.close()
        with open(os.path.join(state, "pids", "split-brain-etcd.pid"), "w") as f:
            f.write("%d\n" % rogue.pid)  # local-up.sh --down stops it if the test does not
        wait_for("the etcd restored alone to serve", lambda: etcd.healthy("https://%s:2379" % ip), 60)
        rogue_members = etcd.members(["https://%s:2379" % ip])
        assert [m.get("name") for m in rogue_members] == ["master-2"], rogue_members

        def says_split():
            out = book.run(RB_SPLIT_READ, RB_SPLIT_READ)[0]
            return out if out.startswith("SplitBrain: ") else None
        out = wait_for("EtcdMembersDegraded/SplitBrain (split-brain.md step 1)", says_split, 120, interval=2)
        log("the operator says: %s" % out.strip())
        assert "members report 2 cluster IDs" in out and "(the member list's)" in out, out
        assert "master-2" in out and ("master-0" in out or "%s.10" % net in out), \
            "both sides not named: %s" % out

        # 40 s of split brain: the operator changes nothing, on either side.
        op_log = os.path.join(state, "logs", "operator.log")
        changes_before = len(etcd_changes_begun(op_log))
        endpoints_before = kubectl("get", "configmap", "-n", "openshift-etcd", "etcd-endpoints", "-o", "json")
        changes_seen = watcher.changes
        time.sleep(40)
        lines = etcd_changes_begun(op_log)
        assert len(lines) == changes_before, "etcd changed during the split brain: %s" % lines[changes_before:]
        endpoints_after = kubectl("get", "configmap", "-n", "openshift-etcd", "etcd-endpoints", "-o", "json")
        assert endpoints_after["data"] == endpoints_before["data"], \
            "etcd-endpoints changed: %s -> %s" % (endpoints_before["data"], endpoints_after["data"])
        assert watcher.changes == changes_seen, "the cluster's membership changed: %s" % watcher.history[-3:]
        rogue_after = etcd.members(["https://%s:2379" % ip])
        assert [m.get("name") for m in rogue_after] == ["master-2"], "the other side changed: %s" % rogue_after
        refused = sum(1 for line in open(op_log, errors="replace") if "split brain" in line)
        log("40 s split: no etcd change, etcd-endpoints kept (%s), both memberships as they were; the "
            "operator's log names the split brain %d times" % (sorted(endpoints_after["data"].values()), refused))

        # Step 2, played: that etcd stopped; master-2's own etcd (its data intact) comes back.
        rogue.terminate()
        rogue.wait(timeout=30)
        os.unlink(os.path.join(state, "pids", "split-brain-etcd.pid"))
        rogue = None
        start_kubelet(state, build, env, "master-2", ip, master=True)

        def one_cluster():
            out = book.run(RB_SPLIT_CHECK, RB_SPLIT_CHECK)[0]
            return out if out.startswith("AsExpected") else None
        out = wait_for("one cluster again (split-brain.md step 3)", one_cluster, 180, interval=3)
        log("split-brain.md step 3: %s" % out.strip())
        all_eps = good + ["https://%s:2379" % ip]
        wait_for("three healthy voters", lambda: sorted(
            (m.get("name"), bool(m.get("isLearner"))) for m in etcd.members(all_eps)) == [
            ("master-0", False), ("master-1", False), ("master-2", False)] and all(
            etcd.healthy(e) for e in all_eps), 120)
    finally:
        writer.stop.set()
        watcher.stop.set()
        writer.join()
        watcher.join()
        if rogue is not None:
            rogue.kill()
            rogue.wait()
    lost = [k for k in writer.acked if etcd.get(good, k) is None]
    assert not lost, "acknowledged writes lost: %s" % lost[:5]
    assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
    assert watcher.changes == 0, "membership changed: %s" % watcher.history
    log("split brain: %d writes acknowledged by the cluster, none lost; no membership change" % len(writer.acked))


def check_member_view(etcd, eps, kubectl):
    """The per-member view (issue 37, point 5), read as docs/monitoring.md tells an admin to,
    against what each member's own status says: names, IDs, the leader, learners, version,
    database sizes (the view is refreshed within a minute, at most every 30 s: sizes within
    what the writer adds meanwhile)."""
    def matches():
        cm = kubectl("get", "configmap", "-n", "openshift-etcd-operator", "etcd-members", "-o", "json")
        view = {m["name"]: m for m in json.loads(cm["data"]["members.json"])}
        members = etcd.members(eps)
        if sorted(view) != sorted(m.get("name") for m in members):
            return None
        for m in members:
            st, status = etcd.call(m["clientURLs"][0], "/v3/maintenance/status")
            v = view[m["name"]]
            if st != 200 or v["id"] != "%016x" % int(m["ID"]) or v["learner"] != bool(m.get("isLearner")):
                return None
            if v["leader"] != (status.get("leader") == m["ID"]) or v["version"] != status.get("version"):
                return None
            db = int(status.get("dbSize", "0")) / 2**20
            if not (db * 0.75 - 2 <= v["dbSizeMiB"] <= db + 1):
                return None
        return cm["data"]["members"]
    table = wait_for("the etcd-members view to match the members' own status", matches, 90, interval=3)
    log("kubectl get configmap -n openshift-etcd-operator etcd-members -o jsonpath='{.data.members}':\n%s" % table)


def main():
    # ctest's timeout, or a user's ^C: the finally below still stops the cluster.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    build, topology = os.path.abspath(sys.argv[1]), sys.argv[2]
    shape = SHAPES[topology]
    nodes = shape["masters"] + shape["arbiters"]
    d = tempfile.mkdtemp(prefix="ceo-topology-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    net = "127.%d.%d" % (random.randint(20, 219), random.randint(1, 250))
    env = dict(os.environ, LOCAL_UP_DIR=os.path.join(d, "state"), LOCAL_UP_NET=net, LOCAL_UP_BUILD=build)
    kube_bin = subprocess.run(["bash", os.path.join(ROOT, "hack", "build-kube.sh"), "--bin-dir"],
                              capture_output=True, text=True, check=True).stdout.strip()
    env["PATH"] = kube_bin + ":" + env["PATH"]
    os.environ["PATH"] = env["PATH"]  # the runbooks' kubectl (runbook.py runs with this process's)
    local_up = os.path.join(ROOT, "hack", "local-up.sh")
    state = env["LOCAL_UP_DIR"]
    out = open(os.path.join(d, "out.log"), "w")
    ok = False
    watcher = writer = None
    # ha is the default: run as the README has it, without the flag.
    argv = ["bash", local_up] + ([] if topology == "ha" else ["--topology", topology]) + ETCD_FLAGS.get(topology, [])
    proc = subprocess.Popen(argv, env=env, stdout=out,
                            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        tls = os.path.join(state, "assets", "tls")
        ips = ["%s.%d" % (net, shape["bootstrap"])] + ["%s.%d" % (net, 10 + i) for i in range(len(nodes))]
        eps = sorted(set("https://%s:2379" % ip for ip in ips))
        wait_for("render's client certificate", lambda: os.path.exists(os.path.join(tls, "etcd-client.key")), 120)
        files = [os.path.join(tls, f) for f in ("etcd-ca-bundle.crt", "etcd-client.crt", "etcd-client.key")]
        etcd = Etcd(*files)
        bootstrap_ep = "https://%s.%d:2379" % (net, shape["bootstrap"])
        wait_for("the bootstrap etcd", lambda: proc.poll() is None and etcd.healthy(bootstrap_ep), 180)
        watcher = Watcher(Etcd(*files), lambda: eps, single_member=topology == "sno",
                          election_timeout=LOCAL_UP_ELECTION_TIMEOUT)
        writer = Writer(Etcd(*files), lambda: eps)
        watcher.start()
        writer.start()
        t0 = time.monotonic()
        try:
            rc = proc.wait(timeout=660)
        except subprocess.TimeoutExpired:
            raise AssertionError("%s did not return in 11 minutes" % " ".join(argv[1:]))
        assert rc == 0, "%s failed (exit %d)" % (" ".join(argv[1:]), rc)
        log("local-up --topology %s settled %.0f s after the bootstrap etcd served" % (topology, time.monotonic() - t0))
        text = open(os.path.join(d, "out.log")).read()
        assert "The control plane is up: kube-apiserver v1." in text, "no summary"
        assert "refused no request of theirs" in text, "RBAC denied requests"
        time.sleep(3)  # a few more samples of the settled cluster
        writer.stop.set()
        watcher.stop.set()
        writer.join()
        watcher.join()

        kubeconfig = os.path.join(state, "kube", "kubeconfig")

        def kubectl(*args):
            r = subprocess.run(["kubectl", "--kubeconfig", kubeconfig] + list(args), env=env,
                               capture_output=True, text=True)
            assert r.returncode == 0, "kubectl %s: %s" % (" ".join(args), r.stderr)
            return json.loads(r.stdout) if "-o" in args and "json" in args else r.stdout

        def conditions(obj):
            return {c["type"]: c for c in (obj.get("status") or {}).get("conditions", [])}

        # etcd's own view: the members, all voters, named as the nodes.
        members = etcd.members(eps)
        got = sorted((m.get("name"), bool(m.get("isLearner"))) for m in members)
        want = sorted((n, False) for n in nodes)
        assert got == want, "members %s, wanted %s" % (got, want)
        log("members: %s" % ", ".join(n for n, _ in got))
        if topology == "sno":
            assert len(watcher.member_ids) == 1, \
                "members ever listed: %d (the node's own member alone was expected)" % len(watcher.member_ids)

        co = conditions(kubectl("get", "co", "etcd", "-o", "json"))
        for t, want_status in (("Available", "True"), ("Progressing", "False"), ("Degraded", "False")):
            assert co[t]["status"] == want_status, "clusteroperator/etcd %s=%s: %s" % (
                t, co[t]["status"], co[t].get("message"))
        cr = kubectl("get", "etcd", "cluster", "-o", "json")
        cc = conditions(cr)
        assert cc["ControlPlaneTopologyDegraded"]["status"] == "False", cc["ControlPlaneTopologyDegraded"]
        latest = cr["status"]["latestAvailableRevision"]
        statuses = {s["nodeName"]: s.get("currentRevision") for s in cr["status"].get("nodeStatuses", [])}
        assert sorted(statuses) == sorted(nodes), "nodeStatuses %s, wanted %s" % (statuses, nodes)
        pods = kubectl("get", "pods", "-n", "openshift-etcd", "-o", "json")["items"]
        by_name = {p["metadata"]["name"]: p for p in pods}
        for n in nodes:
            assert statuses[n] == latest, "node %s at revision %s, latest %s" % (n, statuses[n], latest)
            pod = by_name.get("etcd-" + n)
            assert pod, "no etcd pod on %s" % n
            assert pod["metadata"].get("labels", {}).get("revision") == str(latest), \
                "etcd-%s runs revision %s, latest %s" % (n, pod["metadata"].get("labels", {}).get("revision"), latest)
        log("revision %d on %s" % (latest, ", ".join(nodes)))
        if topology != "sno":  # one member has no quorum to guard
            for n in nodes:
                assert "etcd-guard-" + n in by_name, "no quorum guard on %s" % n
        if topology == "arbiter":
            node = kubectl("get", "node", "arbiter-0", "-o", "json")
            taints = [t["key"] for t in node["spec"].get("taints") or []]
            assert "node-role.kubernetes.io/arbiter" in taints, "arbiter-0 taints: %s" % taints
            on_arbiter = [p["metadata"]["namespace"] + "/" + p["metadata"]["name"]
                          for p in kubectl("get", "pods", "-A", "-o", "json")["items"]
                          if p["spec"].get("nodeName") == "arbiter-0"]
            strays = [p for p in on_arbiter if not p.startswith("openshift-etcd/")]
            assert not strays, "pods on the arbiter besides etcd's: %s" % strays
            log("arbiter-0: tainted, its pods %s" % ", ".join(sorted(on_arbiter)))

        check_member_view(etcd, eps, kubectl)
        lost = [k for k in writer.acked if etcd.get(eps, k) is None]
        log("writer: %d acknowledged, %d failed, %d lost" % (len(writer.acked), writer.failed, len(lost)))
        assert writer.acked, "the writer never succeeded"
        assert not lost, "acknowledged writes lost: %s" % lost[:5]
        assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
        log("watcher: %d membership changes, no invariant broken" % watcher.changes)

        if topology == "delayed-ha":
            ns = kubectl("get", "namespace", "openshift-etcd", "-o", "json")
            assert "openshift.io/delayed-bootstrap" in (ns["metadata"].get("annotations") or {}), \
                "openshift-etcd annotations: %s" % ns["metadata"].get("annotations")
            shapes = [shape for _, shape, _ in watcher.history]
            two = [("master-0", False), ("master-1", False)]
            assert two in shapes, "the cluster never ran on master-0 and master-1 alone: %s" % shapes
            assert shapes.index(two) < len(shapes) - 1, "nothing joined after the bootstrap: %s" % shapes
            log("the bootstrap ended on two masters; master-2 joined after: %s" % " -> ".join(
                "+".join(n for n, _ in sh) for sh in shapes))
        if topology == "ha":
            split_brain(state, net, build, env, files, kubectl)
            co = conditions(kubectl("get", "co", "etcd", "-o", "json"))
            assert co["Available"]["status"] == "True", co["Available"]
        if topology == "arbiter":
            replace_arbiter(state, net, build, env, files, eps, kubectl)
            co = conditions(kubectl("get", "co", "etcd", "-o", "json"))
            assert co["Available"]["status"] == "True", co["Available"]
        check_etcd_minor(etcd, eps, topology, "settled")
        if topology == "sno":
            restore_single_node(state, files, eps, kubectl)
            check_etcd_minor(etcd, eps, topology, "restored")
            co = conditions(kubectl("get", "co", "etcd", "-o", "json"))
            assert co["Available"]["status"] == "True", co["Available"]

        pids = []
        for sub in ("pids", "kube"):
            p = os.path.join(state, sub)
            for f in os.listdir(p) if os.path.isdir(p) else []:
                if f.endswith(".pid"):
                    try:
                        pids.append(int(open(os.path.join(p, f)).read()))
                    except (OSError, ValueError):
                        pass
        subprocess.run(["bash", local_up, "--down"], env=env, check=True, capture_output=True)
        for pid in pids:
            r = subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True, text=True)
            if r.returncode == 0 and not r.stdout.strip().startswith("Z"):
                raise AssertionError("pid %d still runs after --down" % pid)
        log("ok: --topology %s settled as it should; --down stopped %d processes" % (topology, len(pids)))
        ok = True
    finally:
        if writer:
            writer.stop.set()
        if watcher:
            watcher.stop.set()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        subprocess.run(["bash", local_up, "--down"], env=env, capture_output=True)
        out.close()
        if not ok:
            try:
                print("".join(open(os.path.join(d, "out.log")).readlines()[-40:]))
            except OSError:
                pass
            logs = os.path.join(state, "logs")
            for f in sorted(os.listdir(logs)) if os.path.isdir(logs) else []:
                print("---- %s" % f)
                print("".join(open(os.path.join(logs, f), errors="replace").readlines()[-15:]))
        if keep_test_dirs():
            print("kept %s" % d)
        else:
            shutil.rmtree(d, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
