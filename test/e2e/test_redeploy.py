#!/usr/bin/env python3
"""e2e: a change of spec.forceRedeploymentReason rolls a new revision to
every node, one at a time, keeping quorum. The bootstrap of
test_bootstrap.py first (same world, actors and invariant watcher), until
clusteroperator/etcd settles with every node at latestAvailableRevision L.
The cluster runs with a Custom TLS security profile: every master's etcd
takes a TLS 1.2 handshake with the profile's suite and refuses another.
Then the test patches etcds/cluster spec.forceRedeploymentReason and
watches (kubectl watch on the openshift-etcd pods, etcd /health of the
three masters every 200 ms):

- latestAvailableRevision becomes L+1, and stays there (one new revision,
  not two), and revision-status-(L+1) records the new reason;
- each master's mirror pod etcd-<node> moves to revision label L+1, one
  node at a time: never two masters' etcd pods not ready (or absent) at once;
- never fewer than 2 of the 3 voters healthy (a dip shorter than the grace
  below, the length of one etcd leader election, is logged, not failed);
- every nodeStatuses entry reaches currentRevision L+1 within the timeout;
- the 50 ms writer loses no acknowledged write, the watcher's invariants
  hold throughout, and clusteroperator/etcd ends Available, not Progressing,
  not Degraded.
Then, on the same cluster with the writer and the watcher still running, the
EtcdBackup and Backup checks of backup_checks.py (the checks above cover that
window too). Then certificate rotation (rotation.py): one master's serving
certificate aged to 100 days is issued again and served after its rollout.
Then a member removed (etcdctl member remove) while its host
is down comes back by itself once the host is up (scenario.py). Then one
master's address changes (addresses.py): its member is replaced by one on
the new address. Last, on the same cluster, all nodes off and on
(restarts.py): every master and the operator stopped, the masters started
again in another order; the members find each other with no operator
action (same cluster, same members, no new revision), nothing is lost.
And the masters' disks: a dozen revisions later, the pruner pods have left
no revision directory older than the last five but those in use.
Usage: test_redeploy.py BUILD_DIR"""
import json
import os
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import Env, log, wait_for  # noqa: E402
from addresses import check_master_moves  # noqa: E402
from backup_checks import check_etcd_backups  # noqa: E402
from restarts import check_whole_cluster_restart  # noqa: E402
from rotation import check_rotation  # noqa: E402
from scenario import LEASE_TOLERANT, Cluster, start_actors, stop_actors  # noqa: E402

TIMEOUT = int(os.environ.get("E2E_BOOTSTRAP_TIMEOUT", "420"))
ROLLOUT_TIMEOUT = int(os.environ.get("E2E_ROLLOUT_TIMEOUT", "240"))
# While a leader hands over, /health answers false for up to about an election
# timeout (1 s on Standard timings, 2.5 s on Slower: scenario.HARDWARE_SPEED).
HEALTH_GRACE_S = 3.0
# The cluster's TLS security profile (apiservers/cluster): etcd takes these suites only.
# (Go's HTTP/2 server, etcd's, requires an ECDHE AES-128-GCM suite in any TLS 1.2 list.)
TLS_PROFILE = {"type": "Custom", "custom": {"minTLSVersion": "VersionTLS12", "ciphers": [
    "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-RSA-AES128-GCM-SHA256", "DHE-RSA-AES256-GCM-SHA384"]}}


def pod_ready(pod):
    for c in pod.get("status", {}).get("conditions", []):
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


class PodWatch(threading.Thread):
    """kubectl get pods -w on openshift-etcd: the masters' etcd mirror pods
    as (ready, revision label), absent = None. Once armed, checks that at
    most one of them is not ready at any time."""

    def __init__(self, env, masters):
        super().__init__(daemon=True)
        self.env, self.masters = env, masters
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.state = {m: None for m in masters}
        self.armed = None  # monotonic time the checks started
        self.timeline = []  # (t, node, ready, revision) once armed
        self.violations = []
        self.proc = None

    def _spawn(self):
        argv = [self.env.kubectl_bin, "--kubeconfig", self.env.kubeconfig, "--cache-dir", self.env.kubectl_cache,
                "get", "pods", "-n", "openshift-etcd", "-w", "-o", "json", "--output-watch-events"]
        errf = open(os.path.join(self.env.dir, "pod-watch.log"), "a")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=errf)
        self.env.procs.append((self.proc, "pod-watch"))

    def run(self):
        dec = json.JSONDecoder()
        while not self.stop.is_set():
            self._spawn()  # again whenever the watch ends: the new list gives the current state
            buf = ""
            while not self.stop.is_set():
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                buf += chunk.decode(errors="replace")
                while True:
                    buf = buf.lstrip()
                    try:
                        item, end = dec.raw_decode(buf)
                    except ValueError:
                        break
                    buf = buf[end:]
                    self.event(item)
            if self.proc.poll() is None:
                self.proc.terminate()
            self.proc.wait()
            time.sleep(0.2)

    def halt(self):
        """Ends the kubectl watch, so that run() is not left waiting on it."""
        p = self.proc
        if p and p.poll() is None:
            p.terminate()

    def event(self, item):
        kind, pod = (item.get("type"), item.get("object")) if "object" in item else ("MODIFIED", item)
        name = pod.get("metadata", {}).get("name", "")
        node = name[len("etcd-"):] if name.startswith("etcd-") else None
        if node not in self.state:
            return
        st = None if kind == "DELETED" else (pod_ready(pod), pod["metadata"].get("labels", {}).get("revision"))
        with self.lock:
            if st == self.state[node]:
                return
            self.state[node] = st
            if self.armed is None:
                return
            t = time.monotonic() - self.armed
            self.timeline.append((t, node, st))
            log("pod etcd-%s: %s" % (node, "absent" if st is None else "revision %s, %s" % (
                st[1], "ready" if st[0] else "NOT ready")))
            down = [m for m, s in self.state.items() if s is None or not s[0]]
            if len(down) > 1:
                self.violations.append("%.1f s: two masters' etcd pods not ready at once: %s" % (t, down))

    def all_ready_at(self, revision):
        with self.lock:
            return all(s is not None and s[0] and s[1] == str(revision) for s in self.state.values())

    def arm(self):
        with self.lock:
            self.armed = time.monotonic()
            down = [m for m, s in self.state.items() if s is None or not s[0]]
            assert not down, "etcd pods not ready before the redeploy: %s" % down


class Health(threading.Thread):
    """/health of every voter every 200 ms: the fewest healthy, and every dip
    below `need` with its length."""

    def __init__(self, etcd, endpoints, need):
        super().__init__(daemon=True)
        self.etcd, self.endpoints, self.need = etcd, endpoints, need
        self.stop = threading.Event()
        self.min, self.dips, self.samples = None, [], 0
        self._since = None

    def run(self):
        t0 = time.monotonic()
        while not self.stop.is_set():
            healthy = [e for e in self.endpoints if self.etcd.healthy(e)]
            now = time.monotonic()
            self.samples += 1
            self.min = len(healthy) if self.min is None else min(self.min, len(healthy))
            if len(healthy) < self.need:
                if self._since is None:
                    self._since = now
                    log("only %d of %d voters healthy: %s" % (len(healthy), len(self.endpoints), healthy))
            elif self._since is not None:
                self.dips.append((self._since - t0, now - self._since))
                log("%d voters healthy again after %.1f s" % (len(healthy), now - self._since))
                self._since = None
            time.sleep(0.2)
        if self._since is not None:
            self.dips.append((self._since - t0, time.monotonic() - self._since))


def main():
    build = sys.argv[1]
    t0 = time.monotonic()
    with Env(build) as env:
        c = Cluster(env, lease=LEASE_TOLERANT, tls_profile=TLS_PROFILE).start()
        watcher, writer = c.actors()
        pods = PodWatch(env, c.masters)
        start_actors(watcher, writer, pods)
        sup = c.supervise_operator()  # as its Deployment: restarted if it steps down
        health = None
        try:
            wait_for("EtcdRunningInCluster=True", c.running_in_cluster, TIMEOUT)
            c.complete_bootstrap()
            wait_for("the bootstrap member to be removed", lambda: c.member_names() == c.masters, TIMEOUT)
            wait_for("the bootstrap annotation to go", c.bootstrap_annotation_gone, 60)
            c.destroy_bootstrap()
            c.wait_settled(180)
            base, _ = c.wait_at_latest(180)
            wait_for("every master's etcd pod ready at revision %d" % base, lambda: pods.all_ready_at(base), 60)
            log("bootstrap done in %.0f s; redeploying from revision %d" % (time.monotonic() - t0, base))
            # The masters' etcd runs with the profile's suites (the DHE one has no etcd name).
            pod = env.get_json("configmap", "-n", "openshift-etcd", "etcd-pod")["data"]["pod.yaml"]
            assert "value: TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256\n" in pod, pod
            # (The suites of both key types: the members' certificates are the operator's.)
            c.check_tls_profile("ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256",
                                "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384")

            # The redeploy.
            health = Health(c.client(), c.master_eps, 2)
            health.start()
            reason = "e2e-redeploy-%d" % int(time.time())
            pods.arm()  # the pod timeline counts from here
            t_patch = time.monotonic()
            env.kubectl("patch", "etcd", "cluster", "--type=merge", "-p", json.dumps(
                {"spec": {"forceRedeploymentReason": reason}}))
            log("spec.forceRedeploymentReason = %s" % reason)
            seen = set()

            def latest():
                v = env.get_json("etcd", "cluster")["status"].get("latestAvailableRevision")
                seen.add(v)
                return v

            wait_for("latestAvailableRevision %d" % (base + 1), lambda: latest() > base, 60)
            new = base + 1
            log("latestAvailableRevision %d after %.1f s" % (new, time.monotonic() - t_patch))
            assert latest() == new, "latestAvailableRevision went from %d to %s" % (base, sorted(seen))
            status = env.get_json("configmap", "-n", "openshift-etcd", "revision-status-%d" % new)
            assert status and status.get("data", {}).get("forceRedeploymentReason") == reason, status

            def rolled():
                at = c.at_latest()
                latest()
                return at and at[0] == new and pods.all_ready_at(new)
            wait_for("every node and every etcd pod at revision %d" % new, rolled, ROLLOUT_TIMEOUT)
            log("revision %d everywhere %.1f s after the patch" % (new, time.monotonic() - t_patch))
            c.wait_settled(120)
            assert latest() == new and seen <= {base, new}, "more than one new revision: %s" % sorted(seen)
            # On the same settled cluster, the writer and the invariant watcher still running:
            # backups now and on a schedule (backup_checks.py).
            check_etcd_backups(env, c)
        finally:
            stop_actors(*([watcher, writer, pods] + ([health] if health else [])))

        # One node at a time: each master went down once and came back at the new revision before the next.
        log("rollout, seconds from the patch:")
        order = []
        for t, node, st in pods.timeline:
            log("  %6.1f  etcd-%s %s" % (t, node, "absent" if st is None else "revision %s %s" % (
                st[1], "ready" if st[0] else "not ready")))
            if st and st[0] and st[1] == str(new) and node not in order:
                order.append(node)
        log("nodes at revision %d, in order: %s" % (new, order))
        assert sorted(order) == sorted(c.masters), "not every master's etcd pod reached revision %d: %s" % (
            new, order)
        assert not pods.violations, "rollout broke one-at-a-time: %s" % pods.violations[:5]
        log("voters healthy: at least %s of 3 over %d samples; dips below 2: %s" % (
            health.min, health.samples, ["at %.1f s for %.1f s" % d for d in health.dips]))
        long_dips = [d for d in health.dips if d[1] > HEALTH_GRACE_S]
        assert not long_dips, "fewer than 2 healthy voters for longer than %.0f s: %s" % (HEALTH_GRACE_S, long_dips)
        assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
        assert c.member_names() == c.masters, c.member_names()
        c.check_writer(writer)
        c.check_endpoints()

        # Certificate rotation on the running cluster (issue 37, point 3): a leaf near its end
        # (rotation.py).
        check_rotation(c, sup)

        # A member removed while its host is down comes back by itself (issue 13, point 2).
        c.check_removed_member_rejoins(c.masters[1], stopped=True)
        c.wait_settled(240)
        c.wait_at_latest(240)
        c.check_endpoints()

        # A master's address changes (issue 13, point 4): the cluster runs on the new one from here.
        check_master_moves(c, c.masters[2], env.ip(22))

        # All nodes off and on (issue 13, point 5).
        check_whole_cluster_restart(c, sup)
        # A dozen revisions later, the masters' disks keep only the last few (pruner pods).
        c.check_revisions_pruned()
        log("ok (%.0f s)" % (time.monotonic() - t0))


if __name__ == "__main__":
    main()
