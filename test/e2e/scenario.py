"""The bootstrap world shared by the whole-cluster e2e scenarios
(test_bootstrap.py, test_operator_restarts.py, test_redeploy.py): the actors
the test plays (installer, cluster-version operator), the invariant watcher,
the 50 ms writer, and the checks every scenario ends with.

Kubernetes' own kube-apiserver (test/kube/control-plane) runs on the managed
etcd itself: it starts on the bootstrap member, follows the etcd-endpoints
ConfigMap the operator publishes, and the control plane publishes its
revisions (openshift-kube-apiserver/config-<N>, kubeapiservers/cluster
status) for the masters, as the kube-apiserver operator does. Python 3 stdlib only."""
import base64
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time

from e2e import ROOT, log, wait_for
from etcdhttp import Etcd
import service_ca

MASTERS = ["master-0", "master-1", "master-2"]
BOOTSTRAP_MEMBER = "etcd-bootstrap"
BOOTSTRAP_ANNOTATION = "alpha.installer.openshift.io/etcd-bootstrap"


# etcd's timings in the scenarios' clusters (etcds/cluster spec.controlPlaneHardwareSpeed and
# render's --control-plane-hardware-speed): Standard, the default of most platforms, unless
# E2E_HARDWARE_SPEED=Slower. An etcd member with clients' watch streams open takes up to its
# request timeout (5 s plus two election timeouts) to stop, at each of the scenarios' many
# rolling restarts: 7 s on Standard, 10 s on Slower. hack/local-up.sh keeps Slower (a demo on
# a busy laptop).
HARDWARE_SPEED = os.environ.get("E2E_HARDWARE_SPEED", "Standard")
ELECTION_TIMEOUT_S = {"Standard": 1.0, "Slower": 2.5}
assert HARDWARE_SPEED in ELECTION_TIMEOUT_S, "E2E_HARDWARE_SPEED: Standard or Slower, not %r" % HARDWARE_SPEED


class Watcher(threading.Thread):
    """Samples etcd membership and health every 200 ms and checks the invariants."""

    # An election after the leader goes waits 1 to 2 election timeouts (HARDWARE_SPEED's, or
    # the caller's); /health adds up to 1 s and the samples 0.2 s. A longer loss of quorum is
    # not an election.
    # A health reading held this long, then healthy: the voter did not answer for part of
    # the sample (it was frozen), so a change seen next may have come after it recovered.
    JUDGE_READING = 1.0
    # A voter resumed after a freeze may answer its first readings with a broken connection (a
    # CI run saw RemoteDisconnected within a second of SIGCONT, while the operator's own reading
    # found it healthy and promoted a learner): readings begun before RESUME_SETTLE after the
    # resume are no evidence either way.
    RESUME_SETTLE = 2.0

    def __init__(self, etcd, endpoints, two_voter_restarts=False, single_member=False, election_timeout=None):
        """two_voter_restarts: a voter of two may stop (the disaster-recovery runbooks'
        unsafe override allows the rollout to restart one); otherwise that is a violation,
        as quorum is lost for as long as the restart lasts. single_member: a cluster of one
        member by design (a single node installed in place): its restarts cost quorum and are
        not judged, while a second member ever listed is a violation."""
        super().__init__(daemon=True)
        self.etcd, self.endpoints = etcd, endpoints
        self.election_timeout = election_timeout or ELECTION_TIMEOUT_S[HARDWARE_SPEED]
        self.quorum_loss_max = 2 * self.election_timeout + 1.5
        self.two_voter_restarts = two_voter_restarts
        self.single_member = single_member
        self.stop = threading.Event()
        self.violations, self.history = [], []
        self.last = None
        self.lost_since = None
        self.member_ids = set()  # every member ID ever listed
        self.min_healthy = None  # fewest healthy voters seen once there were three or more voters
        self.membership = None   # (ID, learner) pairs: what the operator changes (a name appearing is etcd's)
        self.recent = []         # (time, {unhealthy voter: why}, held readings) of the last samples, newest last
        self.sick = {}           # the last sample's unhealthy voters
        self.changes = 0         # membership changes seen
        self.first_shape = None  # the first membership seen, as (name, learner) pairs
        self.names = {}          # member ID -> name (peer URL until it starts), of the last list
        self.resumed_at = {}     # voter name -> when a test resumed it after a freeze (monotonic)

    def _evidence(self, t_sample, sick):
        """The unhealthy readings of a sample begun at t_sample that count: not those of a voter a
        test froze, taken before it resumed or within RESUME_SETTLE of it (resumed_at)."""
        return {n: why for n, why in sick.items()
                if t_sample >= self.resumed_at.get(n, float("-inf")) + self.RESUME_SETTLE}

    def run(self):
        voters = None  # of the last list
        while not self.stop.is_set():
            # Health first, of the voters of the last list, then the list: a reading taken
            # before list k-1 is known to precede a change that list k shows.
            t_sample = time.monotonic()
            sick = {}  # voter name -> why /health said no
            slowest = 0.0  # the longest reading: a voter that did not answer for a while
            held = set()   # voters whose reading was held (frozen): unhealthy only at its start
            # Held readings the voter itself ended (an answer or a broken connection, not the
            # client's timeout): it runs again by the end of the reading, before the list below.
            resumed = set()
            for m in voters or []:
                t_read = time.monotonic()
                why = self.etcd.health(m["clientURLs"][0])
                took = time.monotonic() - t_read
                slowest = max(slowest, took)
                if why is not None:
                    sick[m.get("name") or m["clientURLs"][0]] = why
                    if took > self.JUDGE_READING:
                        held.add(m.get("name") or m["clientURLs"][0])
                        if not why.startswith("TimeoutError"):
                            resumed.add(m.get("name") or m["clientURLs"][0])
            answered = set()  # endpoints whose status came back while the list was read
            try:
                members = self.etcd.members(self.endpoints(), answered)
            except Exception:
                time.sleep(0.2)
                continue
            # A voter unhealthy in its reading that answered while the list was read had
            # resumed by then (it was frozen when read, not while listed): a change this list
            # shows may have come after it recovered.
            resumed |= {m.get("name") or m["clientURLs"][0] for m in voters or []
                        if (m.get("name") or m["clientURLs"][0]) in sick and m["clientURLs"][0] in answered}
            if voters is None:  # the first list: no health readings yet
                voters = [m for m in members if not m.get("isLearner") and m.get("clientURLs")]
                self.membership = sorted((m.get("ID"), bool(m.get("isLearner"))) for m in members)
                self.names = {m.get("ID"): m.get("name") or (m.get("peerURLs") or ["(no URL)"])[0] for m in members}
                continue
            healthy = len(voters) - len(sick)
            if sorted(sick) != sorted(self.sick):
                log("unhealthy voters: %s" % ("; ".join("%s (%s)" % kv for kv in sorted(sick.items())) or "none"))
            self.sick = sick
            self.member_ids.update(m["ID"] for m in members if m.get("ID"))
            pending = [m for m in members if m.get("isLearner") or not m.get("name")]
            if self.single_member and len(members) > 1:
                self.violations.append("a second member on a single-member cluster: %s" % members)
            if len(pending) > 1:
                self.violations.append("two pending members at once: %s" % pending)
            if len(voters) >= 3:
                self.min_healthy = healthy if self.min_healthy is None else min(self.min_healthy, healthy)
            # A leader election (e.g. when the bootstrap member, the leader, is removed) makes
            # /health false for a few seconds; quorum is lost only if it stays lost.
            if len(voters) == 2 and not self.two_voter_restarts:
                stopped = [n for n, why in sick.items() if why.startswith("ConnectionRefused")]
                if stopped:
                    self.violations.append("voter %s of two stopped (quorum lost while it restarts)" % stopped[0])
            if voters and healthy < len(voters) // 2 + 1 and not (self.single_member and len(voters) == 1):
                self.lost_since = self.lost_since or time.monotonic()
                if time.monotonic() - self.lost_since > self.quorum_loss_max:
                    self.violations.append("quorum lost for %.1f s (more than an election): %d healthy of %d "
                                           "voters" % (self.quorum_loss_max, healthy, len(voters)))
            else:
                self.lost_since = None
            # No membership change while a member is unhealthy. etcd's /health is briefly
            # false around leader elections, and the operator acts on a view up to one poll
            # (1 s) old: a change is a violation when both samples whose readings were taken
            # before the last list that did not show it saw an unhealthy voter.
            membership = sorted((m.get("ID"), bool(m.get("isLearner"))) for m in members)
            names = {m.get("ID"): m.get("name") or (m.get("peerURLs") or ["(no URL)"])[0] for m in members}
            if self.membership is not None and membership != self.membership:
                self.changes += 1
                # Removing the unhealthy voters themselves (and nothing else) costs no quorum:
                # the single-member runbook does it, and so does replacing a dead master.
                gone = {self.names.get(i) for i, _ in self.membership} - set(names.values())
                added = set(membership) - set(self.membership)
                only_removal = set(membership) < set(self.membership)
                # The same removal followed within one sample by a learner's add (the damaged-data
                # remedy re-adds the member at once): a learner has no vote, and which came first
                # is not observable here (the add needs every member healthy: unit-tested).
                removal_then_learner = bool(added) and all(learner for _, learner in added) and \
                    set(membership) - added < set(self.membership)
                sick_now = set().union(*(r[1] for r in self.recent[-2:])) if self.recent else set()
                if (only_removal or removal_then_learner) and sick_now and sick_now <= gone:
                    log("the unhealthy voter(s) %s removed%s" % (", ".join(sorted(gone)),
                                                                " and a learner added" if added else ""))
                elif len(self.recent) >= 2 and all(r[1] for r in self.recent[-2:]) and \
                        not all(self._evidence(*r[:2]) for r in self.recent[-2:]):
                    # The unhealthy readings are of a voter a test froze, taken before it resumed
                    # or while it settled (RESUME_SETTLE): they say nothing of it when the change
                    # was made. The test checks the freeze itself (test_frozen.py's ShapeMonitor:
                    # no change while it was stopped).
                    log("membership changed as a frozen voter resumed: not judged")
                elif len(self.recent) >= 2 and all(r[1] for r in self.recent[-2:]) and \
                        not set(self._evidence(t_sample, sick)) - resumed:
                    # Every voter answered healthy in this sample, or ended its held reading
                    # itself (it resumed as it was asked, and its broken connection says so),
                    # whose readings came before the list that shows the change: the voter
                    # recovered between the last sample and this list (a frozen member's held
                    # reading shows it unhealthy only when it began; a restarted one comes back
                    # within a sample), and the operator, on a view polled in between, may have
                    # acted after it did. No telling which: not judged. A change seen while the
                    # voter is still unhealthy (refused, or the reading timed out) is a violation.
                    log("membership changed while an unhealthy voter recovered: not judged")
                elif len(self.recent) >= 2 and all(r[1] for r in self.recent[-2:]):
                    self.violations.append("membership changed to %s while %d voter(s) were unhealthy "
                                           "(samples %.1f s and %.1f s before: %s; the sample just before "
                                           "the list: %s)" % (
                                               [(m.get("name") or "(unstarted)", bool(m.get("isLearner")))
                                                for m in members], len(self.recent[-1][1]),
                                               t_sample - self.recent[-2][0], t_sample - self.recent[-1][0],
                                               " | ".join("; ".join("%s: %s" % kv for kv in sorted(r[1].items()))
                                                          for r in self.recent[-2:]),
                                               "; ".join("%s: %s" % kv for kv in sorted(sick.items())) or "all healthy"))
            self.membership, self.names = membership, names
            self.recent = (self.recent + [(t_sample, sick, held)])[-3:]
            shape = sorted((m.get("name") or "(unstarted)", bool(m.get("isLearner"))) for m in members)
            if shape != self.last:
                if self.last is None:
                    self.first_shape = shape
                else:
                    unhealthy = len(voters) - healthy
                    self.history.append((time.time(), shape, unhealthy))
                    log("membership: %s" % ", ".join("%s%s" % (n, " (learner)" if l else "") for n, l in shape))
                self.last = shape
            voters = [m for m in members if not m.get("isLearner") and m.get("clientURLs")]
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


def etcd_servers(config_cm):
    """etcd-servers of an openshift-kube-apiserver/config-<N> ConfigMap (None: [])."""
    cfg = json.loads(((config_cm or {}).get("data") or {}).get("config.yaml", "{}"))
    return (cfg.get("apiServerArguments") or {}).get("etcd-servers") or []


def cluster_objects(env, bootstrap_ip):
    """What the cluster-version operator and the installer create before the operator runs (the
    operator's own namespace is its payload's, among render's manifests, with its labels)."""
    for ns in ("openshift-config", "openshift-config-managed", "openshift-kube-apiserver"):
        env.kubectl("create", "namespace", ns, check=False)
    env.kubectl("apply", "-f", os.path.join(ROOT, "manifests", "local-up", "10-cluster-config.yaml"))
    env.kubectl("patch", "etcd", "cluster", "--type=merge", "-p", json.dumps(
        {"spec": {"controlPlaneHardwareSpeed": HARDWARE_SPEED,
                  "unsupportedConfigOverrides": {"listenOnNodeIP": True}}}))
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


def deployment_tunables():
    """GLIBC_TUNABLES of the operator's Deployment manifest."""
    path = os.path.join(ROOT, "manifests", "operator", "0000_20_etcd-operator_06_deployment.yaml")
    with open(path) as f:
        m = re.search(r"- name: GLIBC_TUNABLES\n\s+value: (\S+)", f.read())
    if not m:
        raise RuntimeError("%s sets no GLIBC_TUNABLES" % path)
    return m.group(1)


RELEASE = "4.99.0-e2e"  # OPERATOR_IMAGE_VERSION and OPERAND_IMAGE_VERSION of the e2e operator
ETCD_IMAGE = "quay.io/openshift/etcd@sha256:0123456789abcdef"  # the release's etcd image


def at_release(co, release=RELEASE):
    """The versions the cluster-version operator waits for: operator and etcd at the release."""
    v = {e.get("name"): e.get("version") for e in (co.get("status") or {}).get("versions") or []}
    return v.get("operator") == release and v.get("etcd") == release


def settled(obj):
    """Available, not Progressing, not Degraded."""
    return (condition(obj, "Available")[0] == "True" and condition(obj, "Progressing")[0] == "False"
            and condition(obj, "Degraded")[0] == "False")


# The operator's lease in the scenarios that time it (operator restarts, frozen API): short,
# so a new leader takes over within seconds.
LEASE = (6, 4, 1)
# In the scenarios that do not: a renewal the API answers 4 s late is a loaded 2-core machine
# (two clusters, each with its Python API server), not what they test. In one CI run the
# restarted operator's own start-up reads, on such a machine, kept its renewals past 4 s
# for 3.5 minutes, 11 times in a row. Upstream's default renew deadline is 107 s.
LEASE_TOLERANT = (15, 10, 2)


class Cluster:
    """One bootstrap node running the rendered bootstrap etcd and three masters
    (kubelet-sims), with the objects the installer and the cluster-version
    operator create; the operator itself is started by the scenario."""

    def __init__(self, env, masters=MASTERS, lease=LEASE, tls_profile=None):
        self.env, self.masters = env, masters
        self.tls_profile = tls_profile  # apiservers/cluster spec.tlsSecurityProfile (None: none, Intermediate)
        self.lease = lease  # (duration, renew deadline, retry period) of the operator's lease, s
        self.bootstrap_ip = env.ip(5)
        self.master_ips = {m: env.ip(10 + i) for i, m in enumerate(masters)}
        self.assets = os.path.join(env.dir, "assets")
        self.tls = os.path.join(self.assets, "tls")
        self.all_eps = ["https://%s:2379" % ip for ip in [self.bootstrap_ip] + list(self.master_ips.values())]
        self.master_eps = ["https://%s:2379" % ip for ip in self.master_ips.values()]
        self.etcd = None
        self.operators = 0
        # What the release payload gives the operator (an upgrade changes both).
        self.release = RELEASE
        self.etcd_image = ETCD_IMAGE
        self.etcd_version = "3.5"  # the etcd release etcd_image carries (ETCD_IMAGE_VERSION)

    def endpoints(self):
        return self.all_eps

    def move_master(self, node, ip):
        """The master has another address from now on: every endpoint list follows (in place,
        so the actors' endpoint callbacks see it)."""
        old = "https://%s:2379" % self.master_ips[node]
        self.master_ips[node] = ip
        for eps in (self.all_eps, self.master_eps):
            eps[eps.index(old)] = "https://%s:2379" % ip

    def start(self):
        """As on a bootstrap host: render, then the API server configured against the
        bootstrap etcd before that etcd runs, then the kubelets (the bootstrap one
        starts etcd from its static pod; all of them retry the API until it serves),
        then cluster-bootstrap's manifests."""
        env = self.env
        r = env.render(self.assets, self.bootstrap_ip, extra=["--key-type", "ecdsa"], speed=HARDWARE_SPEED)
        assert r.returncode == 0, r.stderr
        etcd_tls = [os.path.join(self.tls, f) for f in ("etcd-ca-bundle.crt", "etcd-client.crt", "etcd-client.key")]
        # kube-apiserver with the etcd client certificate render wrote for it, on the bootstrap
        # member; the control plane follows etcd-endpoints as the kube-apiserver operator does.
        env.start_kube([self.all_eps[0]], etcd_tls, self.masters)

        root = os.path.join(env.dir, "nodes", "bootstrap")
        shutil.copytree(os.path.join(self.assets, "etc-kubernetes"), os.path.join(root, "etc", "kubernetes"))
        env.start_kubelet("bootstrap", self.bootstrap_ip, master=False)
        for m in self.masters:
            env.start_kubelet(m, self.master_ips[m], master=True)

        self.etcd = self.client()
        wait_for("the bootstrap etcd", lambda: self.etcd.healthy(self.all_eps[0]), 90)
        env.wait_kube_ready(180)
        cluster_objects(env, self.bootstrap_ip)
        if self.tls_profile:
            env.kubectl("patch", "apiservers.config.openshift.io", "cluster", "--type=merge", "-p",
                        json.dumps({"spec": {"tlsSecurityProfile": self.tls_profile}}))
        # cluster-bootstrap: namespaces first, then the rest.
        mf = sorted(os.listdir(os.path.join(self.assets, "manifests")))
        for f in sorted(mf, key=lambda f: 0 if "-ns" in f else 1):
            path = os.path.join(self.assets, "manifests", f)
            if f.endswith("_deployment.yaml"):
                # The scenario runs the operator's pod itself (start_operator: a process it can
                # kill and supervise), so its Deployment asks for none: with kube-controller-manager
                # and the scheduler running, a replica would be placed on a master and run there.
                obj = json.loads(env.kubectl("create", "-f", path, "--dry-run=client", "-o", "json").stdout)
                obj["spec"]["replicas"] = 0
                env.kubectl("create", "-f", "-", input=json.dumps(obj), check=False)
                continue
            env.kubectl("create", "-f", path, check=False)
        # What the cluster-version operator applies beside them for monitoring (the PrometheusRule,
        # the operator's ServiceMonitor and Prometheus's Role), against the CRDs' real schema.
        for f in sorted(os.listdir(os.path.join(ROOT, "manifests", "operator"))):
            if f.startswith("0000_90_"):
                env.kubectl("apply", "-f", os.path.join(ROOT, "manifests", "operator", f))
        # service-ca and the monitoring stack's parts for the operator's /metrics (service_ca.py).
        self.service_ca, issued = service_ca.issue(env.kubectl, os.path.join(env.dir, "service-ca"), [env.ip(2)])
        self.serving_cert = issued["etcd-operator-serving-cert"]
        self.prometheus_token = service_ca.grant_prometheus(env.kubectl)
        self.prometheus_cert = service_ca.metrics_client_cert(env.kubectl, os.path.join(env.dir, "service-ca"))
        return self

    def client(self, timeout=3.0):
        """An etcd client of its own: one per thread (a client's connections are not shared)."""
        return Etcd(*(os.path.join(self.tls, f) for f in ("etcd-ca-bundle.crt", "etcd-client.crt", "etcd-client.key")),
                    timeout=timeout)

    def actors(self):
        """The invariant watcher and the writer, not started."""
        return Watcher(self.client(), self.endpoints), Writer(self.client(), self.endpoints)

    def kas_etcd_servers(self):
        """etcd-servers of the latest kube-apiserver revision, sorted, but the masters' localhost
        (test/kube/control-plane's LocalEtcd: https://127.0.0.1:PORT)."""
        kas = self.env.get_json("kubeapiservers.operator.openshift.io", "cluster") or {}
        n = (kas.get("status") or {}).get("latestAvailableRevision")
        cm = self.env.get_json("configmap", "-n", "openshift-kube-apiserver", "config-%s" % n) if n else None
        return sorted(u for u in etcd_servers(cm) if not u.startswith("https://127.0.0.1:"))

    def operator_kubeconfig(self):
        """The operator's credentials as its Deployment's pod has them: a token of
        ServiceAccount openshift-etcd-operator/etcd-operator (a TokenRequest, as the
        kubelet projects it; render wrote the account and its RBAC), read from a file; the
        server is the fault proxy once the scenario started one, else the API server.
        So every request the operator makes must pass that RBAC (Env fails a scenario
        on any denial)."""
        d = os.path.join(self.env.dir, "operator-sa")
        kc = os.path.join(d, "kubeconfig")
        # With a fault proxy (Env.start_fault_proxy) the operator, and only it, talks through it;
        # the proxy's certificate is of the control plane's CA, which the kubeconfig trusts.
        proxy = self.env.fault_proxy["url"] if self.env.fault_proxy else None
        if os.path.exists(kc) and (proxy is None or "    server: %s\n" % proxy in open(kc).read()):
            return kc
        admin = json.loads(self.env.kubectl("config", "view", "--raw", "-o", "json").stdout)
        cluster = admin["clusters"][0]["cluster"]
        server = proxy or cluster["server"]
        os.makedirs(d, exist_ok=True)
        if not os.path.exists(os.path.join(d, "token")):
            wait_for("ServiceAccount etcd-operator", lambda: self.env.kubectl(
                "-n", "openshift-etcd-operator", "get", "serviceaccount", "etcd-operator",
                check=False).returncode == 0, 60)
            token = self.env.kubectl("-n", "openshift-etcd-operator", "create", "token", "etcd-operator",
                                     "--duration=24h").stdout.strip()
            with open(os.path.join(d, "token"), "w") as f:
                f.write(token + "\n")
        with open(kc + ".tmp", "w") as f:
            f.write("apiVersion: v1\nkind: Config\ncurrent-context: operator\n"
                    "clusters:\n- name: sim\n  cluster:\n    server: %s\n    certificate-authority-data: %s\n"
                    "users:\n- name: etcd-operator\n  user:\n    tokenFile: token\n"
                    "contexts:\n- name: operator\n  context:\n    cluster: sim\n    user: etcd-operator\n"
                    "    namespace: openshift-etcd-operator\n" % (
                        server, cluster["certificate-authority-data"]))
        os.rename(kc + ".tmp", kc)
        return kc

    def operator_argv(self):
        env, tls = self.env, self.tls
        return [env.binary, "operator", "--kubeconfig", self.operator_kubeconfig(),
                "-v=%s" % os.environ.get("E2E_OPERATOR_V", "2"),  # 4 adds the debug lines
                "--listen", env.ip(2) + ":8443", "--leader-elect-lease-duration=%ds" % self.lease[0],
                "--leader-elect-renew-deadline=%ds" % self.lease[1],
                "--leader-elect-retry-period=%ds" % self.lease[2],
                "--etcd-poll-interval=1s", "--listen-on-node-ip",
                "--operator-image", "quay.io/openshift/cluster-etcd-operator@sha256:e2e",
                "--etcd-image", self.etcd_image,
                "--etcd-ca", os.path.join(tls, "etcd-ca-bundle.crt"),
                "--etcd-cert", os.path.join(tls, "etcd-client.crt"),
                "--etcd-key", os.path.join(tls, "etcd-client.key")] + ([
                "--tls-cert-file", os.path.join(self.serving_cert, "tls.crt"),
                "--tls-private-key-file", os.path.join(self.serving_cert, "tls.key")]
                if getattr(self, "serving_cert", None) else [])

    def operator_metrics(self, cert=True, token=False):
        """The operator's /metrics over HTTPS verified against service-ca's CA: as Prometheus
        scrapes it, with its client certificate; with token=True, prometheus-k8s's token (as
        other scrapers do); neither: no credentials. Raises OSError (HTTPError 401...)."""
        return service_ca.scrape("https://%s:8443/metrics" % self.env.ip(2), self.service_ca,
                                 self.prometheus_token if token else None, self.prometheus_cert if cert else None)

    def start_operator(self):
        """The operator as a process; the first one logs to operator.log, the
        next ones (after a kill) to operator-2.log, operator-3.log, ..."""
        self.operators += 1
        name = "operator" if self.operators == 1 else "operator-%d" % self.operators
        # The Deployment's release versions, as the cluster-version operator fills them in,
        # and its malloc settings.
        p = self.env.spawn(name, self.operator_argv(), env=dict(os.environ, OPERATOR_IMAGE_VERSION=self.release,
                                                                 OPERAND_IMAGE_VERSION=self.release,
                                                                 ETCD_IMAGE_VERSION=self.etcd_version,
                                                                 GLIBC_TUNABLES=deployment_tunables()))
        p.log_path = os.path.join(self.env.dir, name + ".log")
        p.started = time.monotonic()
        return p

    def supervise_operator(self):
        """The operator as its Deployment runs it: restarted whenever it exits (it
        exits on purpose when it loses its lease: while etcd has no quorum, or the API
        server does not answer within the renew deadline, as when the member it reads
        through is removed). Returns the supervisor thread; stop it with stop_actors()
        (the scenario's Env stops it on exit too)."""
        sup = OperatorSupervisor(self)
        sup.start()
        self.env.on_exit.append(lambda: stop_actors(sup))
        return sup

    def complete_bootstrap(self):
        """The installer: kube-system/bootstrap once etcd runs in the cluster."""
        self.env.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "bootstrap", "namespace": "kube-system"}, "data": {"status": "complete"}}))
        log("bootstrap complete")

    def wait_for_ceo(self, timeout):
        """The installer's bootkube.sh: `cluster-etcd-operator wait-for-ceo` until it exits 0."""
        t0 = time.monotonic()
        r = subprocess.run([self.env.binary, "wait-for-ceo", "--kubeconfig", self.env.kubeconfig,
                            "--timeout", "%ds" % timeout], capture_output=True, text=True, timeout=timeout + 60)
        lines = r.stderr.strip().splitlines()
        log("wait-for-ceo exited %d after %.0f s: %s" % (r.returncode, time.monotonic() - t0,
                                                          lines[-1] if lines else ""))
        assert r.returncode == 0, r.stderr[-2000:]

    def destroy_bootstrap(self, timeout=120):
        """The installer's last step: once etcds/cluster says
        EtcdBootstrapMemberRemoved=True (openshift-install waits for it) it
        destroys the bootstrap host. Its kubelet stops with its pods (until
        then it restarts the removed etcd, which exits at once: a crash
        loop, as on a real bootstrap host), and the Node and its mirror pods
        go, as the node lifecycle controller and the pod GC remove them."""
        wait_for("EtcdBootstrapMemberRemoved=True", lambda: condition(
            self.env.get_json("etcd", "cluster"), "EtcdBootstrapMemberRemoved")[0] == "True", timeout)
        self.env.stop_kubelet("bootstrap")
        self.env.kubectl("delete", "node", "bootstrap", "--ignore-not-found", "--wait=false")
        self.env.kubectl("delete", "pods", "-n", "openshift-etcd", "--field-selector", "spec.nodeName=bootstrap",
                         "--grace-period=0", "--force", "--ignore-not-found", "--wait=false")
        log("bootstrap host destroyed")

    def running_in_cluster(self):
        return condition(self.env.get_json("etcd", "cluster"), "EtcdRunningInCluster")[0] == "True"

    def member_names(self):
        return sorted(m.get("name") for m in self.etcd.members(self.endpoints()))

    def bootstrap_annotation_gone(self):
        cm = self.env.get_json("configmap", "-n", "openshift-etcd", "etcd-endpoints")
        return BOOTSTRAP_ANNOTATION not in (cm["metadata"].get("annotations") or {})

    def node_root(self, node):
        return os.path.join(self.env.dir, "nodes", node)

    def container_pid(self, node, name):
        """The shim PID of the running container `name` of the node's etcd pod (kubelet-sim's
        runtime file); None while none runs."""
        with open(os.path.join(self.node_root(node), "var/lib/kubelet/sim-runtime/containers.json")) as f:
            for ctr in json.load(f)["containers"]:
                if ctr["name"] == name and ctr["labels"].get("io.kubernetes.pod.namespace") == "openshift-etcd":
                    return ctr["pid"]
        return None

    def data_dir_entries(self, node):
        """What the node's etcd data dir holds now (to compare with later)."""
        return set(os.listdir(os.path.join(self.node_root(node), "var/lib/etcd")))

    def check_data_archived(self, node, before):
        """discover moved the node's old member data aside since `before` (data_dir_entries)."""
        now = self.data_dir_entries(node)
        archived = [d for d in now - before if d.startswith("member-removed-archive-")]
        assert archived, "%s: the old member's data was not moved aside: %s" % (node, sorted(now))

    def install_control_plane_fixture(self):
        """What the other control-plane operators leave on a real master and the
        disaster-recovery scripts read (hack/control-plane-fixture.py)."""
        r = subprocess.run([sys.executable, os.path.join(ROOT, "hack", "control-plane-fixture.py"),
                            self.env.kubeconfig] + [self.node_root(m) for m in self.masters],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        log("control-plane fixture: kube-apiserver, kube-controller-manager, kube-scheduler static pods "
            "and clusteroperators on %s" % ", ".join(self.masters))

    # The checks every scenario ends with.

    def check_writer(self, writer):
        lost = [k for k in writer.acked if self.etcd.get(self.master_eps, k) is None]
        log("writer: %d acknowledged, %d failed, %d lost" % (len(writer.acked), writer.failed, len(lost)))
        assert not lost, "acknowledged writes lost: %s" % lost[:5]

    def wait_settled(self, timeout=120):
        """Settled, and at the release's versions: what the cluster-version operator waits
        for before it calls an install or upgrade complete."""
        co = wait_for("clusteroperator/etcd to settle at version %s" % self.release,
                      lambda: (lambda o: o if settled(o) and at_release(o, self.release) else None)(
                          self.env.get_json("co", "etcd")), timeout)
        log("clusteroperator/etcd: %s" % [(c["type"], c["status"]) for c in co["status"]["conditions"]])
        return co

    def at_latest(self):
        """(latestAvailableRevision, nodeStatuses) when every node is at it and no next revision
        is due, else None. Due: etcd-endpoints does not list exactly the voters yet, or it or
        etcd-pod differs from the latest revision's copy (a membership change just made shows
        in etcd-endpoints, then in a revision, some seconds later: a check made in between
        would take a rollout about to start for a settled cluster)."""
        env = self.env
        st = env.get_json("etcd", "cluster")["status"]
        latest = st.get("latestAvailableRevision")
        nodes = st.get("nodeStatuses", [])
        if not (latest and len(nodes) == len(self.masters) and all(n.get("currentRevision") == latest
                                                                    for n in nodes)):
            return None
        voters = {"%x" % int(m["ID"]) for m in self.etcd.members(self.endpoints()) if not m.get("isLearner")}
        for name in ("etcd-endpoints", "etcd-pod"):
            live = env.get_json("configmap", "-n", "openshift-etcd", name)
            copy = env.get_json("configmap", "-n", "openshift-etcd", "%s-%d" % (name, latest))
            if not live or not copy or live.get("data") != copy.get("data"):
                return None
            if name == "etcd-endpoints" and set(live.get("data") or {}) != voters:
                return None
        return latest, nodes

    def wait_at_latest(self, timeout=180):
        latest, nodes = wait_for("every node at latestAvailableRevision", self.at_latest, timeout)
        log("latestAvailableRevision %d on %s" % (latest, [n["nodeName"] for n in nodes]))
        return latest, nodes

    def check_quorum_guard(self):
        """A drain cannot cost quorum: with a guard ready on every master, draining one master's
        guard (kubectl drain, the real client) goes through the eviction API; a second master's
        is refused by etcd-guard-pdb while the first is cordoned; uncordoned, the guard returns."""
        env = self.env

        def guards_ready(n):
            pods = (env.get_json("pods", "-n", "openshift-etcd", "-l", "app=guard") or {}).get("items", [])
            ready = [p for p in pods if any(c["type"] == "Ready" and c["status"] == "True"
                                            for c in p.get("status", {}).get("conditions", []))
                     and not p["metadata"].get("deletionTimestamp")]
            return ready if len(ready) == n else None

        def budget():
            pdb = env.get_json("pdb", "-n", "openshift-etcd", "etcd-guard-pdb")
            st = (pdb or {}).get("status") or {}
            return st if st.get("disruptionsAllowed") == 1 and st.get("currentHealthy") == 3 else None

        wait_for("a ready guard on every master", lambda: guards_ready(3), 120)
        st = wait_for("etcd-guard-pdb to allow one disruption", budget, 60)
        assert st["desiredHealthy"] == 2, st
        first, second = self.masters[0], self.masters[1]
        env.kubectl("cordon", first)
        try:
            r = env.kubectl("drain", first, "--pod-selector", "app=guard", "--ignore-daemonsets",
                            "--force", "--timeout", "60s")
            log("drain %s: %s" % (first, r.stdout.strip().splitlines()[-1:]))
            wait_for("the drained guard gone, none made on the cordoned master", lambda: guards_ready(2), 60)
            env.kubectl("cordon", second)
            r = env.kubectl("drain", second, "--pod-selector", "app=guard", "--ignore-daemonsets",
                            "--force", "--timeout", "12s", check=False)
            assert r.returncode != 0, "a second master drained while the first was down: %s" % r.stdout
            assert "Cannot evict pod as it would violate the pod's disruption budget" in r.stdout + r.stderr, \
                r.stdout + r.stderr
            log("drain %s refused by etcd-guard-pdb, as it must be" % second)
            assert guards_ready(2), "the refused drain took a guard"
        finally:
            env.kubectl("uncordon", first, second, check=False)
        wait_for("the guard back on %s" % first, lambda: guards_ready(3), 120)
        wait_for("etcd-guard-pdb to allow one disruption again", budget, 60)

    def wait_member_back(self, node, old, watcher, timeout=300):
        """Until `node` is a voter again under a new member ID (not `old`), every member
        healthy, and `watcher` has seen it promoted (it samples every 200 ms). Its member."""
        def back():
            ms = self.etcd.members(self.master_eps)
            m = next((m for m in ms if m.get("name") == node), None)
            ok = m and m["ID"] != old and not m.get("isLearner") and len(ms) == len(self.masters) and \
                all(self.etcd.healthy(x["clientURLs"][0]) for x in ms if x.get("clientURLs"))
            return m if ok else None
        m = wait_for("%s back as a new voter, every member healthy" % node, back, timeout)
        final = sorted((n, False) for n in self.masters)
        wait_for("the watcher to see %s promoted" % node, lambda: watcher.last == final, 30)
        return m

    def check_removed_member_rejoins(self, node, stopped=False):
        """`etcdctl member remove` of a healthy, running member (the seed design's exceptional
        scenario): it learns it was removed and exits, its kubelet restarts it, discover finds
        it missing and moves its data aside, the operator adds it back as a learner and
        promotes it. With `stopped`, the member's host is down when it is removed (its
        kubelet stopped with its pods) and comes back after: discover finds it removed on
        its first start. The watcher and the writer run throughout: quorum kept (two voters
        meanwhile, neither restarted), nothing lost."""
        watcher, writer = self.actors()
        start_actors(watcher, writer)
        try:
            members = wait_for("the member list", lambda: {m["name"]: m for m in self.etcd.members(
                self.endpoints())}, 60)
            old = members[node]["ID"]
            before = self.data_dir_entries(node)
            if stopped:
                self.env.stop_kubelet(node)
                ep = "https://%s:2379" % self.master_ips[node]
                wait_for("%s's etcd to be down" % node, lambda: not self.etcd.healthy(ep), 30)
            self.etcd.first([e for e in self.master_eps if not stopped or e != ep],
                            "/v3/cluster/member/remove", {"ID": old})
            log("removed %s (%x), %s, behind the operator's back" % (
                node, int(old), "stopped" if stopped else "healthy and running"))
            if stopped:
                time.sleep(3)  # the cluster runs on two voters meanwhile
                self.env.start_kubelet(node, self.master_ips[node], master=True)
                log("%s's host is back" % node)
            m = self.wait_member_back(node, old, watcher)
            log("%s is back as %x" % (node, int(m["ID"])))
        finally:
            stop_actors(watcher, writer)
        assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
        # Removed, then a learner (the removal and the add may fall between two samples), then a voter.
        shapes = [h[1] for h in watcher.history]
        log("membership since the removal: %s" % shapes)
        assert any(learner for shape in shapes for _, learner in shape), shapes
        assert shapes[-1] == [(m, False) for m in self.masters], shapes
        self.check_data_archived(node, before)
        self.check_writer(writer)

    def check_revisions_pruned(self, timeout=120, keep=5):
        """The revision directories the installer wrote on each master: once it runs the
        latest revision L, its revision-pruner-L-<node> pod leaves none at or below L-keep
        but its own in-use ones (the default succeededRevisionLimit keeps 5)."""
        def stale():
            st = self.env.get_json("etcd", "cluster")["status"]
            latest = st["latestAvailableRevision"]
            left = {}
            for n in st.get("nodeStatuses", []):
                used = {n.get(k) for k in ("currentRevision", "targetRevision", "lastFailedRevision")}
                res = os.path.join(self.node_root(n["nodeName"]), "etc/kubernetes/static-pod-resources")
                old = sorted(int(d.rsplit("-", 1)[1]) for d in os.listdir(res)
                             if d.startswith("etcd-pod-") and d.rsplit("-", 1)[1].isdigit()
                             and int(d.rsplit("-", 1)[1]) <= latest - keep
                             and int(d.rsplit("-", 1)[1]) not in used)
                if old:
                    left[n["nodeName"]] = old
            return latest, left
        latest, left = wait_for("old revision directories pruned on every master",
                                lambda: (lambda r: r if not r[1] else None)(stale()), timeout)
        kept = {m: sorted(d for d in os.listdir(os.path.join(self.node_root(m), "etc/kubernetes/static-pod-resources"))
                          if d.startswith("etcd-pod-")) for m in self.masters}
        log("revision directories at latest revision %d: %s" % (latest, kept))

    def check_contract(self):
        """What other OpenShift components read, against upstream's table (contract.py)."""
        import contract
        members = wait_for("the member list", lambda: self.etcd.members(self.endpoints()), 60)
        voters = [int(m["ID"]) for m in members if not m.get("isLearner")]
        contract.check(self.env, sorted(self.master_ips), voters, self.operator_metrics)

    def tls12_handshake(self, ep, cipher):
        """A TLS 1.2 handshake with the member at `ep` offering only `cipher` (an OpenSSL
        cipher list), with the etcd client certificate: (suite agreed, None) when it
        succeeds, else (None, the error)."""
        ctx = ssl.create_default_context(cafile=os.path.join(self.tls, "etcd-ca-bundle.crt"))
        ctx.load_cert_chain(os.path.join(self.tls, "etcd-client.crt"), os.path.join(self.tls, "etcd-client.key"))
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_ciphers(cipher)
        host, port = ep[len("https://"):].rsplit(":", 1)
        try:
            with socket.create_connection((host, int(port)), timeout=5) as s:
                with ctx.wrap_socket(s, server_hostname=host) as t:
                    t.do_handshake()
                    return t.cipher()[0], None
        except (ssl.SSLError, OSError) as e:
            return None, str(e)

    def check_tls_profile(self, allowed, refused):
        """Every master's etcd, started from the operator's etcd-pod, takes a TLS 1.2
        handshake offering only `allowed` and refuses one offering only `refused`."""
        for ep in self.master_eps:
            suite, err = self.tls12_handshake(ep, allowed)
            assert err is None, "%s refused %s: %s" % (ep, allowed, err)
            bad, err = self.tls12_handshake(ep, refused)
            assert err is not None, "%s agreed on %s, which the TLS security profile leaves out" % (ep, bad)
            log("%s: TLS 1.2 agreed on %s; %s refused (%s)" % (ep, suite, refused, err))

    def check_endpoints(self):
        """etcd-endpoints maps each master's member ID to its IP; host-etcd-2 holds no loopback address."""
        env = self.env
        # A revision may still be rolling (one member restarting at a time): ask until one answers.
        members = wait_for("the member list", lambda: {m["name"]: m for m in self.etcd.members(self.endpoints())}, 60)
        cm = env.get_json("configmap", "-n", "openshift-etcd", "etcd-endpoints")
        assert sorted(cm["data"].values()) == sorted(self.master_ips.values()), cm["data"]
        for name, ip in self.master_ips.items():
            assert cm["data"].get("%x" % int(members[name]["ID"])) == ip, (name, cm["data"])
        ep = env.get_json("endpoints", "-n", "openshift-etcd", "host-etcd-2")
        # kube-apiserver refuses loopback addresses in Endpoints, and every master here has one:
        # the operator leaves them out (controllers/host-endpoints.c; its unit tests cover the
        # addresses it keeps).
        assert not ep.get("subsets"), ep.get("subsets")
        assert BOOTSTRAP_ANNOTATION not in (ep["metadata"].get("annotations") or {})


def last_error(path):
    """The last error line (klog's E...) of a log: why an operator exited."""
    try:
        with open(path, errors="replace") as f:
            errs = [ln.rstrip() for ln in f if ln.startswith("E")]
    except (OSError, TypeError):
        return "no log"
    return errs[-1] if errs else "no error logged"


class OperatorSupervisor(threading.Thread):
    def __init__(self, cluster):
        super().__init__(daemon=True)
        self.cluster = cluster
        self.stop = threading.Event()
        self.proc = None
        self.restarts = 0

    def run(self):
        while not self.stop.is_set():
            self.proc = self.cluster.start_operator()
            while self.proc.poll() is None and not self.stop.is_set():
                time.sleep(0.2)
            if self.stop.is_set():
                break
            self.restarts += 1
            log("operator exited (%s: %s); restarting it, as its Deployment would" % (
                self.proc.returncode, last_error(getattr(self.proc, "log_path", None))))
            time.sleep(1)

    def halt(self):
        p = self.proc
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=15)
            except Exception:
                p.kill()


class OperatorMounts(threading.Thread):
    """Plays the kubelet for the operator pod's volumes: Secret openshift-etcd-operator/etcd-client
    and ConfigMap etcd-ca-bundle (its Deployment mounts both), copied into the files the operator
    reads (--etcd-cert, --etcd-key, --etcd-ca) when they change, checked every `period` s. The
    test's own etcd clients read the same files, as an admin's etcdctl would take the published
    client certificate and bundle. Each file is replaced by a rename; the kubelet swaps a volume's
    files together, this copy one by one, so a reader may meet a certificate with the old key
    (the operator and etcdhttp.Etcd keep what they had until the two match)."""

    NS = "openshift-etcd-operator"

    def __init__(self, cluster, period=5.0):
        super().__init__(daemon=True)
        self.c, self.period = cluster, period
        self.stop = threading.Event()
        self.writes = []  # (monotonic, file name) of every file replaced

    def _want(self):
        sec = self.c.env.get_json("secret", "-n", self.NS, "etcd-client") or {}
        cm = self.c.env.get_json("configmap", "-n", self.NS, "etcd-ca-bundle") or {}
        data = sec.get("data") or {}
        want = {}
        for key, name in (("tls.key", "etcd-client.key"), ("tls.crt", "etcd-client.crt")):
            if data.get(key):
                want[name] = base64.b64decode(data[key]).decode()
        bundle = (cm.get("data") or {}).get("ca-bundle.crt")
        if bundle:
            want["etcd-ca-bundle.crt"] = bundle
        return want

    def sync(self):
        for name, text in self._want().items():
            path = os.path.join(self.c.tls, name)
            try:
                with open(path) as f:
                    if f.read() == text:
                        continue
            except OSError:
                pass
            with open(path + ".tmp", "w") as f:
                f.write(text)
            os.chmod(path + ".tmp", 0o600)
            os.rename(path + ".tmp", path)
            self.writes.append((time.monotonic(), name))
            log("operator mounts: %s replaced from %s" % (name, self.NS))

    def run(self):
        while not self.stop.wait(self.period):
            try:
                self.sync()
            except (OSError, ValueError) as e:
                log("operator mounts: %s" % e)


def start_actors(*threads):
    for t in threads:
        t.start()
    return threads


def stop_actors(*threads):
    for t in threads:
        t.stop.set()
        if hasattr(t, "halt"):
            t.halt()
    for t in threads:
        if t.ident is not None:  # started (a scenario may end before it starts one)
            t.join(timeout=10)


def kill9(p):
    """SIGKILL, then reap: the process is gone when this returns."""
    p.send_signal(signal.SIGKILL)
    p.wait()
