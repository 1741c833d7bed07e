#!/usr/bin/env python3
"""e2e: frozen, not dead (issue 15). The bootstrap of test_bootstrap.py, with
the writer and the invariant watcher, through two freezes (SIGSTOP, then
SIGCONT):

1. The API server, for 20 s, once the first learner is listed. The operator
   cannot renew its lease, so it must stop acting within its renew deadline
   (4 s in the e2e) and say so, not when a hung request's own timeout
   fires; no membership change may come after that while the API stays
   frozen. Its Deployment restarts it (the supervisor here); after the
   resume a leader takes over and the bootstrap goes on.
2. A voter, for 75 s (FREEZE_MEMBER), while the third master's learner is being added
   (three voters and a learner); not the leader. kube-apiserver's etcd client
   balances over every member, the frozen one too, so the API comes and goes
   meanwhile (an API that is frozen outright is scenario 1). Quorum
   holds (two of three), but no membership change may happen while a voter
   is unhealthy: the learner is not promoted, nothing is removed, and the
   operator says why in an event a cluster-admin can read (naming the frozen
   member once the learner has started; before, that the learner has not
   started: it waits for the frozen peer too) and names the member in
   EtcdMembersDegraded. After the resume the learner is promoted. Changes
   are judged from the member list of the members that answer, read every
   0.3 s from 3 s after the freeze (a promotion sent just before it may
   land); when the learner was promoted in the moment before the freeze,
   what is left to check is that nothing else changes.

Then the bootstrap completes as a calm one does: three voters, the bootstrap
member removed, clusteroperator/etcd settled, every acknowledged write
readable, no invariant broken.

Last, OpenShift's monitoring over the settled cluster (prometheus.py): the
real Prometheus, configured from the ServiceMonitors and PrometheusRule the
cluster holds, scrapes every etcd member and the operator; etcd stops on
master-1, etcdMembersDown fires, etcd comes back, the alert resolves.

Usage: test_frozen.py BUILD_DIR"""
import glob
import json
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import Env, log, wait_for  # noqa: E402
from prometheus import check_members_down_alert  # noqa: E402
from scenario import BOOTSTRAP_MEMBER, Cluster, start_actors, stop_actors  # noqa: E402

TIMEOUT = int(os.environ.get("E2E_BOOTSTRAP_TIMEOUT", "600"))
FREEZE = 20.0
# The learner's etcd waits up to 10 s for the frozen peer at its start (its version check),
# then catches up before it can be promoted: a member stays frozen long enough for that.
# Moreover kube-apiserver's etcd client balances its requests over every member it is given, the frozen
# one too, until gRPC's keepalive (30 s without a frame, then 10 s for the ping's answer) gives
# that connection up: meanwhile requests that land there hang and its readiness check of etcd
# fails now and then, so the API itself comes and goes for about 40 s (OpenShift's are no
# different). The operator can say nothing while the API does not answer: a voter stays frozen
# long enough for the API to come back and the operator to name it.
FREEZE_MEMBER = 75.0
# etcd's liveness probe (20 failures 5 s apart for the default quota, each up to 30 s: at least
# 100 s) would have the kubelet restart a member frozen longer, as on a real node: the freeze
# would end there, and the membership may change from then on (ShapeMonitor.unfrozen).
RENEW_DEADLINE = 4.0  # --leader-elect-renew-deadline of the e2e operator (scenario.py)


def descendants(pid):
    """Every process under `pid` (the kernel's children lists), depth first."""
    out, pending = [], [pid]
    while pending:
        p = pending.pop()
        for task in glob.glob("/proc/%d/task/*/children" % p):
            try:
                kids = [int(x) for x in open(task).read().split()]
            except OSError:
                continue
            out += kids
            pending += kids
    return out


def etcd_pid(c, node):
    """The host PID of the etcd process of `node`'s etcd pod: the one named etcd under the
    container's shim (kubelet-sim's runtime file names the shim)."""
    with open(os.path.join(c.node_root(node), "var/lib/kubelet/sim-runtime/containers.json")) as f:
        shim = next((ctr["pid"] for ctr in json.load(f)["containers"]
                     if ctr["name"] == "etcd" and ctr["labels"].get("io.kubernetes.pod.namespace") == "openshift-etcd"),
                    None)
    for pid in descendants(shim) if shim else []:
        try:
            if open("/proc/%d/comm" % pid).read().strip() == "etcd":
                return pid
        except OSError:
            continue
    return None


def operator_logs(env):
    return "".join(open(p, errors="replace").read() for p in sorted(glob.glob(os.path.join(env.dir, "operator*.log"))))


def freeze_api(c, watcher):
    """SIGSTOP kube-apiserver once a learner is listed; SIGCONT after FREEZE s."""
    members = wait_for("a learner in the member list", lambda: (lambda ms: ms if any(
        m.get("isLearner") for m in ms) else None)(c.etcd.members(c.endpoints())), TIMEOUT)
    # The API server: the kube-apiserver serving behind the control plane's haproxy.
    kas_pid = c.env.kube_pid()
    log("freezing the API server (pid %d) with %s listed" % (kas_pid, [(m.get("name") or "(unstarted)",
                                                                        bool(m.get("isLearner"))) for m in members]))
    os.kill(kas_pid, signal.SIGSTOP)
    t0 = time.monotonic()
    try:
        # A step the operator had in flight may still land; none after its renew deadline.
        time.sleep(RENEW_DEADLINE + 2.0)
        changes = watcher.changes
        time.sleep(FREEZE - (time.monotonic() - t0))
        after = watcher.changes
    finally:
        os.kill(kas_pid, signal.SIGCONT)
    log("API server resumed after %.0f s" % (time.monotonic() - t0))
    assert after == changes, "%d membership change(s) while the API was frozen and the lease lost" % (
        after - changes)
    logs = operator_logs(c.env)
    assert "could not renew within the renew deadline" in logs, "the operator did not say it lost its lease"


def leader_id(c):
    for ep in c.endpoints():
        try:
            st, j = c.etcd.call(ep, "/v3/maintenance/status", {})
            if st == 200 and j.get("leader"):
                return j["leader"]
        except Exception:  # noqa: BLE001 - a member down: ask the next
            continue
    return None


def waiting_events(c, name):
    """Messages of MemberAddWaiting events that hold a promotion for `name`."""
    ev = c.env.get_json("events", "-A") or {}
    return [e.get("message", "") for e in ev.get("items", [])
            if e.get("reason") == "MemberAddWaiting" and "not promoted while member %s " % name in e.get("message", "")]


def degraded_names(c, name):
    """EtcdMembersDegraded's message when it is True and names `name`."""
    for cond in ((c.env.get_json("etcd", "cluster") or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "EtcdMembersDegraded" and cond.get("status") == "True" and \
                name in cond.get("message", ""):
            return cond["message"]
    return None


def latest_waiting_event(c):
    """The message of the newest MemberAddWaiting event (what the operator waits for now)."""
    ev = [e for e in (c.env.get_json("events", "-A") or {}).get("items", []) if e.get("reason") == "MemberAddWaiting"]
    ev.sort(key=lambda e: int(e["metadata"].get("resourceVersion") or 0))
    return ev[-1].get("message") if ev else None


def freeze_member(c, watcher):
    """SIGSTOP a master voter other than the leader while a learner is being added to three
    voters; SIGCONT after FREEZE_MEMBER s. No membership change meanwhile; the operator names
    it, in the event that says why the learner waits and in EtcdMembersDegraded."""
    def adding():
        ms = c.etcd.members(c.endpoints())
        voters = [m for m in ms if not m.get("isLearner") and m.get("name")]
        return ms if len(voters) >= 3 and any(m.get("isLearner") for m in ms) else None
    freeze = FREEZE_MEMBER
    members = wait_for("a learner beside three voters", adding, TIMEOUT, interval=0.1)
    leader = leader_id(c)
    victim = next(m for m in members if not m.get("isLearner") and m.get("name") and m["ID"] != leader)
    name = victim["name"]
    node = "bootstrap" if name == BOOTSTRAP_MEMBER else name
    pid = wait_for("the etcd process of %s" % name, lambda: etcd_pid(c, node), 30)
    # The membership as etcd has it, read from the members that answer: the watcher's own
    # samples wait out the frozen member's read timeout, so what it counts lags etcd by up
    # to a sample (over 6 s), and a change made just before the freeze would look later.
    others = [ep for ep in c.endpoints() if ep not in victim.get("clientURLs", [])]
    monitor = ShapeMonitor(c, others, pid)
    api = ApiSampler(c.env)
    os.kill(pid, signal.SIGSTOP)
    t0 = time.monotonic()
    log("froze etcd on %s (pid %d; not the leader) with %s listed" % (name, pid, [
        (m.get("name") or "(unstarted)", bool(m.get("isLearner"))) for m in members]))
    try:
        # A promotion decided from a view taken just before the freeze may still land.
        time.sleep(3.0)
        monitor.start()
        api.start()
        baseline = wait_for("the membership from the members that answer", monitor.first, 10)
        learner = any(is_learner for _, is_learner in baseline)
        if not learner:
            # The learner was promoted between the list above and the freeze: what is left to
            # check is that nothing else changes (the bootstrap member's removal waits too).
            log("the learner was promoted just before the freeze; no learner waits now")
        # The operator may lose its lease meanwhile (its API calls wait on etcd behind the
        # frozen member, or a loaded machine delays a renewal past the 4 s deadline): a new
        # one waits out the lease, syncs its informers and times out on the frozen member
        # before it can say so. The whole freeze is the budget, less the time to say why the
        # learner waits.
        try:
            cond = wait_for("EtcdMembersDegraded to name %s" % name, lambda: degraded_names(c, name),
                            max(15.0, freeze - 5.0 - (time.monotonic() - t0)))
        except AssertionError:
            # Only if the API was away for most of the freeze (see FREEZE_MEMBER) is the
            # operator excused; it cannot write what it knows.
            if api.answered() >= 0.5:
                raise
            cond = "(not said: the API answered %.0f%% of %d reads while %s was frozen)" % (
                100 * api.answered(), api.reads, name)
        log("EtcdMembersDegraded: %s" % cond)
        said = ["(no learner to hold)"]
        # Once the learner has started the operator names the frozen voter; until then (etcd on
        # the learner waits up to 10 s for the frozen peer at its start, longer on a loaded
        # machine) it says the learner has not started. Either way it says why it holds.
        if learner:
            try:
                said = wait_for("the operator to name %s as what it waits for" % name,
                                lambda: waiting_events(c, name), freeze - 2.0 - (time.monotonic() - t0))
            except AssertionError:
                said = [latest_waiting_event(c)]
                log("no event named %s while it was frozen; the operator's latest word on the learner: %s" % (
                    name, said[-1]))
                assert said[-1] and "not promoted" in said[-1], \
                    "the operator did not say why the learner is not promoted: %s" % said[-1]
        while time.monotonic() - t0 < freeze and monitor.unfrozen is None:
            time.sleep(0.2)
    finally:
        monitor.halt()
        api.halt()
        log("kube-apiserver answered %.0f%% of %d reads of its readiness while %s was frozen" % (
            100 * api.answered(), api.reads, name))
        try:
            os.kill(pid, signal.SIGCONT)
            watcher.resumed_at[name] = time.monotonic()
        except ProcessLookupError:  # the kubelet's liveness probe restarted it meanwhile
            log("etcd on %s was restarted while frozen" % name)
    log("etcd on %s resumed after %.0f s; the operator said: %s" % (name, time.monotonic() - t0, said[-1]))
    assert monitor.reads >= 10, "the members that answer were read only %d time(s) while %s was frozen" % (
        monitor.reads, name)
    assert not monitor.changed, "membership changed while %s was frozen: %s" % (name, monitor.changed)


def stopped(pid):
    """Whether process pid exists and is stopped (SIGSTOP)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("T", "t")
    except (OSError, IndexError):
        return False


class ApiSampler(threading.Thread):
    """Reads kube-apiserver's /readyz through its load balancer every 0.5 s: how much of a
    freeze the API answered."""

    def __init__(self, env):
        super().__init__(daemon=True)
        self.env = env
        self.stopped = threading.Event()
        self.reads, self.ok = 0, 0

    def answered(self):
        return self.ok / self.reads if self.reads else 0.0

    def halt(self):
        self.stopped.set()
        if self.is_alive():
            self.join(10)

    def run(self):
        from e2e import ApiClient
        client = ApiClient(self.env.kubeconfig)  # its own connection
        while not self.stopped.is_set():
            try:
                status, _ = client.call("GET", "/readyz")
            except Exception:  # noqa: BLE001 - not answering is what is counted
                status = 0
            self.reads += 1
            self.ok += status == 200
            self.stopped.wait(0.5)


class ShapeMonitor(threading.Thread):
    """Reads the membership ((ID, learner) pairs) from the given members every 0.3 s and
    records every change after the first read, while the frozen etcd (pid) stays stopped:
    once the kubelet restarted it (its liveness probe), unfrozen says since when."""

    def __init__(self, c, endpoints, pid):
        super().__init__(daemon=True)
        self.etcd, self.endpoints = c.client(), endpoints  # its own connections: not shared across threads
        self.pid = pid
        self.stopped = threading.Event()
        self.shape, self.reads, self.changed = None, 0, []
        self.unfrozen = None

    def first(self):
        return self.shape

    def halt(self):
        self.stopped.set()
        if self.is_alive():
            self.join(10)

    def run(self):
        while not self.stopped.is_set():
            try:
                ms = self.etcd.members(self.endpoints)
            except Exception:  # noqa: BLE001 - an election: read again
                ms = None
            if not stopped(self.pid):
                self.unfrozen = time.monotonic()
                log("the frozen etcd (pid %d) is gone: the kubelet restarted it" % self.pid)
                return
            if ms:
                shape = sorted((m.get("ID"), bool(m.get("isLearner"))) for m in ms)
                if self.shape is not None and shape != self.shape:
                    self.changed.append((time.strftime("%H:%M:%S"), shape))
                    log("membership changed while frozen: %s" % shape)
                self.shape = shape
                self.reads += 1
            self.stopped.wait(0.3)


def main():
    with Env(sys.argv[1]) as env:
        c = Cluster(env).start()
        watcher, writer = c.actors()
        start_actors(watcher, writer)
        sup = c.supervise_operator()
        try:
            freeze_api(c, watcher)
            freeze_member(c, watcher)
            wait_for("EtcdRunningInCluster=True", c.running_in_cluster, TIMEOUT)
            c.complete_bootstrap()
            c.wait_for_ceo(TIMEOUT)
            wait_for("the bootstrap annotation to go", c.bootstrap_annotation_gone, 120)
            c.destroy_bootstrap()
            c.wait_settled(TIMEOUT)
            # On the settled cluster, the writer and the watcher still running: OpenShift's
            # monitoring over it, with the real Prometheus (prometheus.py).
            check_members_down_alert(c)
            c.wait_settled(TIMEOUT)
        finally:
            stop_actors(watcher, writer, sup)
        assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
        assert c.member_names() == c.masters, c.member_names()
        assert BOOTSTRAP_MEMBER not in c.member_names()
        log("operator restarts (lease lost while the API was frozen): %d" % sup.restarts)
        assert sup.restarts >= 1, "the operator kept running without its lease"
        c.check_writer(writer)
        log("ok")


if __name__ == "__main__":
    main()
