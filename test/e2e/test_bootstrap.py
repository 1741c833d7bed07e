#!/usr/bin/env python3
"""e2e: the whole bootstrap on the simulated control plane. One bootstrap
node and three masters (kubelet-sims), the rendered bootstrap etcd, and the
operator as a process with short leader-election timings. The test plays the
other actors: the installer (render, cluster manifests, kube-system/bootstrap
once EtcdRunningInCluster=True), the cluster-version operator (etcds/cluster
and the config objects) and the kube-apiserver's view of etcd (a new
config-<N> revision whenever etcd-endpoints changes).

Asserted throughout by a watcher: never more than one learner or unstarted
member; no membership change while a member is unhealthy; quorum never lost.
A writer puts a key every 50 ms; at the end every acknowledged write reads
back. Finally members are the three masters, clusteroperator/etcd is
Available, not Progressing, not Degraded, and every node is at
latestAvailableRevision.
Usage: test_bootstrap.py BUILD_DIR"""
import json
import os
import shutil
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import Env, ROOT, log, wait_for  # noqa: E402
from etcdhttp import Etcd  # noqa: E402

MASTERS = ["master-0", "master-1", "master-2"]
TIMEOUT = int(os.environ.get("E2E_BOOTSTRAP_TIMEOUT", "420"))


class Watcher(threading.Thread):
    """Samples etcd membership and health every 200 ms and checks the invariants."""

    def __init__(self, etcd, endpoints):
        super().__init__(daemon=True)
        self.etcd, self.endpoints = etcd, endpoints
        self.stop = threading.Event()
        self.violations, self.history = [], []
        self.last = None
        self.lost_since = None

    def run(self):
        while not self.stop.is_set():
            try:
                members = self.etcd.members(self.endpoints())
            except Exception:
                time.sleep(0.2)
                continue
            pending = [m for m in members if m.get("isLearner") or not m.get("name")]
            if len(pending) > 1:
                self.violations.append("two pending members at once: %s" % pending)
            voters = [m for m in members if not m.get("isLearner") and m.get("clientURLs")]
            healthy = sum(1 for m in voters if self.etcd.healthy(m["clientURLs"][0]))
            # A leader election (e.g. when the bootstrap member, the leader, is removed) makes
            # /health false for a few seconds; quorum is lost only if it stays lost.
            if voters and healthy < len([m for m in members if not m.get("isLearner")]) // 2 + 1:
                self.lost_since = self.lost_since or time.monotonic()
                if time.monotonic() - self.lost_since > 8:
                    self.violations.append("quorum lost for 8 s: %d healthy of %d voters" % (healthy, len(voters)))
            else:
                self.lost_since = None
            shape = sorted((m.get("name") or "(unstarted)", bool(m.get("isLearner"))) for m in members)
            if shape != self.last:
                if self.last is not None:
                    unhealthy = len(voters) - healthy
                    self.history.append((time.time(), shape, unhealthy))
                    log("membership: %s" % ", ".join("%s%s" % (n, " (learner)" if l else "") for n, l in shape))
                self.last = shape
            time.sleep(0.2)


class Writer(threading.Thread):
    def __init__(self, etcd, endpoints):
        super().__init__(daemon=True)
        self.etcd, self.endpoints = etcd, endpoints
        self.stop = threading.Event()
        self.acked, self.failed = [], 0

    def run(self):
        i = 0
        while not self.stop.is_set():
            key = "/e2e-writer/%06d" % i
            try:
                self.etcd.put(self.endpoints(), key, str(i))
                self.acked.append(key)
            except Exception:
                self.failed += 1
            i += 1
            time.sleep(0.05)


class KubeAPIServerView(threading.Thread):
    """Plays the kube-apiserver: bootstrap IP (while annotated) plus every IP in
    etcd-endpoints, a new config-<N> revision whenever that set changes."""

    def __init__(self, env):
        super().__init__(daemon=True)
        self.env, self.stop, self.revision, self.servers = env, threading.Event(), 0, None

    def run(self):
        while not self.stop.is_set():
            cm = self.env.get_json("configmap", "-n", "openshift-etcd", "etcd-endpoints")
            if cm:
                ips = sorted(set((cm.get("data") or {}).values()))
                ann = cm["metadata"].get("annotations", {}).get("alpha.installer.openshift.io/etcd-bootstrap")
                servers = sorted("https://%s:2379" % ip for ip in ips + ([ann] if ann else []))
                if servers != self.servers:
                    self.revision += 1
                    self.publish(servers)
                    self.servers = servers
            time.sleep(1)

    def publish(self, servers):
        n = self.revision
        cfg = json.dumps({"apiServerArguments": {"etcd-servers": servers}})
        self.env.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "config-%d" % n, "namespace": "openshift-kube-apiserver"},
            "data": {"config.yaml": cfg}}))
        kas = self.env.get_json("kubeapiservers.operator.openshift.io", "cluster")
        if not (kas or {}).get("status", {}).get("nodeStatuses"):
            # The CRD forbids setting a revision in the same write that adds a node's entry.
            self.env.kubectl("patch", "kubeapiservers.operator.openshift.io", "cluster", "--subresource=status",
                             "--type=merge", "-p", json.dumps(
                                 {"status": {"nodeStatuses": [{"nodeName": m} for m in MASTERS]}}))
        status = {"latestAvailableRevision": n,
                  "nodeStatuses": [{"nodeName": m, "currentRevision": n} for m in MASTERS]}
        self.env.kubectl("patch", "kubeapiservers.operator.openshift.io", "cluster", "--subresource=status",
                         "--type=merge", "-p", json.dumps({"status": status}))
        log("kube-apiserver revision %d: %s" % (n, ", ".join(servers)))


def cluster_objects(env, bootstrap_ip):
    """What the cluster-version operator and the installer create before the operator runs."""
    for ns in ("openshift-etcd-operator", "openshift-config", "openshift-config-managed", "openshift-kube-apiserver"):
        env.kubectl("create", "namespace", ns, check=False)
    env.kubectl("apply", "-f", os.path.join(ROOT, "manifests", "local-up", "10-cluster-config.yaml"))
    env.kubectl("patch", "etcd", "cluster", "--type=merge", "-p", json.dumps(
        {"spec": {"unsupportedConfigOverrides": {"listenOnNodeIP": True}}}))
    env.kubectl("patch", "infrastructure", "cluster", "--subresource=status", "--type=merge", "-p", json.dumps(
        {"status": {"platformStatus": {"type": "None"}, "infrastructureName": "e2e",
                    "controlPlaneTopology": "HighlyAvailable", "infrastructureTopology": "HighlyAvailable"}}))
    env.kubectl("apply", "-f", os.path.join(ROOT, "test", "data", "render", "cluster-config.yaml"))
    env.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operator.openshift.io/v1", "kind": "KubeAPIServer", "metadata": {"name": "cluster"},
        "spec": {"managementState": "Managed"}}))


def condition(obj, t):
    for c in (obj or {}).get("status", {}).get("conditions", []):
        if c.get("type") == t:
            return c.get("status"), c.get("reason")
    return None, None


def main():
    build = sys.argv[1]
    with Env(build) as env:
        env.start_sim()
        bootstrap_ip = env.ip(5)
        master_ips = {m: env.ip(10 + i) for i, m in enumerate(MASTERS)}
        assets = os.path.join(env.dir, "assets")
        r = env.render(assets, bootstrap_ip, extra=["--key-type", "ecdsa"])
        assert r.returncode == 0, r.stderr
        cluster_objects(env, bootstrap_ip)
        # cluster-bootstrap: namespaces first, then the rest.
        mf = sorted(os.listdir(os.path.join(assets, "manifests")))
        for f in sorted(mf, key=lambda f: 0 if "-ns" in f else 1):
            env.kubectl("create", "-f", os.path.join(assets, "manifests", f), check=False)

        root = os.path.join(env.dir, "nodes", "bootstrap")
        shutil.copytree(os.path.join(assets, "etc-kubernetes"), os.path.join(root, "etc", "kubernetes"))
        env.start_kubelet("bootstrap", bootstrap_ip, master=False)
        for m in MASTERS:
            env.start_kubelet(m, master_ips[m], master=True)

        tls = os.path.join(assets, "tls")
        etcd = Etcd(*(os.path.join(tls, f) for f in ("etcd-ca-bundle.crt", "etcd-client.crt", "etcd-client.key")))
        all_eps = ["https://%s:2379" % ip for ip in [bootstrap_ip] + list(master_ips.values())]
        endpoints = lambda: all_eps  # noqa: E731
        wait_for("the bootstrap etcd", lambda: etcd.healthy(all_eps[0]), 60)

        watcher, writer, kas = Watcher(etcd, endpoints), Writer(etcd, endpoints), KubeAPIServerView(env)
        for t in (watcher, writer, kas):
            t.start()
        env.spawn("operator", [env.binary, "operator", "--kubeconfig", env.kubeconfig, "-v=2",
                               "--listen", env.ip(2) + ":8443", "--leader-elect-lease-duration=6s",
                               "--leader-elect-renew-deadline=4s", "--leader-elect-retry-period=1s",
                               "--etcd-poll-interval=1s", "--listen-on-node-ip",
                               "--operator-image", "quay.io/openshift/cluster-etcd-operator@sha256:e2e",
                               "--etcd-image", "quay.io/openshift/etcd@sha256:0123456789abcdef",
                               "--etcd-ca", os.path.join(tls, "etcd-ca-bundle.crt"),
                               "--etcd-cert", os.path.join(tls, "etcd-client.crt"),
                               "--etcd-key", os.path.join(tls, "etcd-client.key")])
        try:
            # The installer marks bootstrap complete once etcd runs in the cluster.
            wait_for("EtcdRunningInCluster=True", lambda: condition(
                env.get_json("etcd", "cluster"), "EtcdRunningInCluster")[0] == "True", TIMEOUT)
            env.kubectl("apply", "-f", "-", input=json.dumps({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "bootstrap", "namespace": "kube-system"}, "data": {"status": "complete"}}))
            log("bootstrap complete")
            wait_for("the bootstrap member to be removed", lambda: sorted(
                m.get("name") for m in etcd.members(endpoints())) == MASTERS, TIMEOUT)
            wait_for("the bootstrap annotation to go", lambda: "alpha.installer.openshift.io/etcd-bootstrap" not in (
                env.get_json("configmap", "-n", "openshift-etcd", "etcd-endpoints")["metadata"].get(
                    "annotations") or {}), 60)
        finally:
            for t in (watcher, writer, kas):
                t.stop.set()
            for t in (watcher, writer, kas):
                t.join(timeout=10)
        assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
        sizes = [len(shape) for _, shape, _ in watcher.history]
        log("member counts over time: %s" % sizes)
        assert max(sizes) == 4, "expected 1 -> 4 -> 3, saw %s" % sizes
        lost = [k for k in writer.acked if etcd.get(["https://%s:2379" % ip for ip in master_ips.values()], k) is None]
        log("writer: %d acknowledged, %d failed, %d lost" % (len(writer.acked), writer.failed, len(lost)))
        assert not lost, "acknowledged writes lost: %s" % lost[:5]
        co = wait_for("clusteroperator/etcd to settle", lambda: (lambda o: o if (
            condition(o, "Available")[0] == "True" and condition(o, "Progressing")[0] == "False"
            and condition(o, "Degraded")[0] == "False") else None)(env.get_json("co", "etcd")), 120)
        log("clusteroperator/etcd: %s" % [(c["type"], c["status"]) for c in co["status"]["conditions"]])

        # Every node at latestAvailableRevision; the endpoints objects name the three masters.
        def at_latest():
            st = env.get_json("etcd", "cluster")["status"]
            latest = st.get("latestAvailableRevision")
            nodes = st.get("nodeStatuses", [])
            ok = latest and len(nodes) == 3 and all(n.get("currentRevision") == latest for n in nodes)
            return (latest, nodes) if ok else None
        latest, nodes = wait_for("every node at latestAvailableRevision", at_latest, 180)
        log("latestAvailableRevision %d on %s" % (latest, [n["nodeName"] for n in nodes]))
        # A revision may still be rolling (one member restarting at a time): ask until one answers.
        members = wait_for("the member list", lambda: {m["name"]: m for m in etcd.members(endpoints())}, 60)
        cm = env.get_json("configmap", "-n", "openshift-etcd", "etcd-endpoints")
        assert sorted(cm["data"].values()) == sorted(master_ips.values()), cm["data"]
        for name, ip in master_ips.items():
            assert cm["data"].get("%016x" % int(members[name]["ID"])) == ip, (name, cm["data"])
        ep = env.get_json("endpoints", "-n", "openshift-etcd", "host-etcd-2")
        got = sorted((a["ip"], a.get("nodeName")) for a in ep["subsets"][0]["addresses"])
        assert got == sorted((ip, m) for m, ip in master_ips.items()), got
        assert "alpha.installer.openshift.io/etcd-bootstrap" not in (ep["metadata"].get("annotations") or {})
        log("ok")


if __name__ == "__main__":
    main()
