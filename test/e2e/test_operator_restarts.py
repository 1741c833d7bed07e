#!/usr/bin/env python3
"""e2e: kill -9 of the operator at each step of the bootstrap, chosen by
observed state. The same world and actors as test_bootstrap.py; a chaos
thread watches etcd's member list (every 100 ms) and, while the running
operator holds the leader lease, sends it SIGKILL at each of these states
and starts a new one with the same flags (which must wait for the 6 s lease
to expire before it leads):

  learner-exists      a learner is listed (added, its etcd not started yet)
  learner-started     a learner is listed, started (named) and its etcd
                      answers a status request: in sync or nearly, not
                      promoted yet
  (each learner at most once per state; the second master's learner only
  once started, so that one kill hits an operator that was leading when the
  learner started and was about to promote it, where the others hit a fresh
  leader that found the learner started while no operator ran)
  bootstrap-complete  kube-system/bootstrap written and the bootstrap
                      member still listed (the test stops the leader with
                      SIGSTOP, writes it, checks the member list and kills
                      the stopped leader: the operator removes the member
                      well under a second after the write, faster than
                      kubectl returns, so a kill after the write alone
                      came too late)

Asserted: every state is hit at least once (otherwise the test fails naming
the state, so it cannot pass without doing its job); an operator that
steps down by itself (lost its lease) is started again, as its Deployment
would, and any other exit fails; each new operator took
the lease only after the old one's expired; the watcher's invariants (never
two pending members, no lasting quorum loss); no member ever added twice
(exactly four member IDs ever listed: the bootstrap member and one per
master); no acknowledged write lost; members end as the three masters,
clusteroperator/etcd settles Available, not Progressing, not Degraded, and
every node reaches latestAvailableRevision. No failpoints in the operator.
Then, on the same cluster, a release upgrade, a downgrade and the upgrade
again (upgrades.py): each a new operator with another etcd image, rolled one
node at a time with quorum kept, settled at the release's versions. Last,
the etcd leader killed every 30 s for 5 minutes (leaders.py): no write lost,
no etcd call and no revision from the operator.
Usage: test_operator_restarts.py BUILD_DIR"""
import glob
import os
import re
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import Env, log, wait_for  # noqa: E402
from leaders import check_leader_kills  # noqa: E402
from scenario import BOOTSTRAP_MEMBER, Cluster, kill9, last_error, start_actors, stop_actors  # noqa: E402
from upgrades import check_upgrade_downgrade  # noqa: E402

TIMEOUT = int(os.environ.get("E2E_BOOTSTRAP_TIMEOUT", "420"))
LEASE_S = 6  # --leader-elect-lease-duration in Cluster.operator_argv
STATES = ("learner-exists", "learner-started", "bootstrap-complete")


class Operators:
    """The running operator process, its leadership as its log reports it,
    and kill -9 + restart."""

    def __init__(self, cluster):
        self.c = cluster
        self.lock = threading.RLock()
        self.kills = []  # dicts: state, detail, killed (monotonic), leader_after (s) once the next one leads
        self.restarts = 0  # operators that exited by themselves and were started again (supervise)
        self._start()

    def _start(self):
        self.proc = self.c.start_operator()
        self.offset, self.leader, self.leader_since = 0, False, None

    def supervise(self):
        """From here on, as its Deployment: an operator that exits by itself (it steps down
        when it loses its lease, as when the API stalls while the member it reads through is
        removed) is started again. Stopped with the returned event; counts in self.restarts."""
        stop = threading.Event()

        def run():
            while not stop.wait(0.2):
                with self.lock:
                    if self.proc.poll() is not None:
                        self.restarts += 1
                        log("operator exited by itself (%s: %s); restarting it, as its Deployment would"
                            % (self.proc.returncode, last_error(self.proc.log_path)))
                        self._start()
        threading.Thread(target=run, daemon=True).start()
        return stop

    def is_leader(self):
        with self.lock:
            if self.proc.poll() is not None:
                why = last_error(self.proc.log_path)
                # Stepping down is what a leader must do when it cannot renew: with this test's
                # 4 s renew deadline, a bootstrap rollout's brief quorum loss (two voters, one
                # restarting) can cost a renewal. Its Deployment would start it again; any other
                # exit fails the test.
                if "lost the leader lease" not in why:
                    raise AssertionError("the operator exited on its own (status %s: %s), see %s" % (
                        self.proc.returncode, why, self.proc.log_path))
                self.restarts += 1
                log("operator stepped down by itself (%s); restarting it, as its Deployment would" % why)
                self._start()
            if not self.leader:
                with open(self.proc.log_path, "rb") as f:
                    f.seek(self.offset)
                    chunk = f.read()
                # Only whole lines: the next read starts where this one's last line ended.
                cut = chunk.rfind(b"\n") + 1
                self.offset += cut
                if b"became leader;" in chunk[:cut]:
                    self.leader, self.leader_since = True, time.monotonic()
                    if self.kills and "leader_after" not in self.kills[-1]:
                        k = self.kills[-1]
                        k["leader_after"] = time.monotonic() - k["killed"]
                        log("%s leads %.1f s after the kill" % (os.path.basename(self.proc.log_path),
                                                                k["leader_after"]))
            return self.leader

    def kill_and_restart(self, state, detail):
        with self.lock:
            kill9(self.proc)
            killed = time.monotonic()
            detail += "; it had led for %.1f s" % (killed - self.leader_since)
            log("KILL -9 operator (pid %d) at %s: %s" % (self.proc.pid, state, detail))
            self.kills.append({"state": state, "detail": detail, "killed": killed})
            self._start()

    def freeze(self):
        """SIGSTOP: the leader keeps its lease but can no longer act."""
        self.proc.send_signal(signal.SIGSTOP)

    def thaw(self):
        self.proc.send_signal(signal.SIGCONT)

    def wait_leader(self, timeout):
        wait_for("an operator holding the lease", self.is_leader, timeout, interval=0.1)


class Chaos(threading.Thread):
    """Kills the leading operator at each learner state it observes."""

    def __init__(self, cluster, ops):
        super().__init__(daemon=True)
        self.c, self.ops = cluster, ops
        self.etcd = cluster.client()
        self.stop = threading.Event()
        self.done = set()  # (member ID, state)
        self.learners = []  # learner IDs in the order they appeared
        self.error = None

    def started(self, m):
        if not (m.get("name") and m.get("clientURLs")):
            return False
        try:  # learners serve Status (not /health's quorum read)
            st, j = self.etcd.call(m["clientURLs"][0], "/v3/maintenance/status")
            return st == 200 and bool(j.get("header"))
        except Exception:
            return False

    def run(self):
        try:
            while not self.stop.is_set():
                self.step()
                time.sleep(0.1)
        except Exception as e:  # reported by the main thread
            self.error = e

    def step(self):
        if not self.ops.is_leader():
            return
        try:
            members = self.etcd.members(self.c.endpoints())
        except Exception:
            return
        for m in members:
            if not m.get("isLearner"):
                continue
            if m["ID"] not in self.learners:
                self.learners.append(m["ID"])
            state = "learner-started" if self.started(m) else "learner-exists"
            if (m["ID"], state) in self.done or (m["ID"], "learner-started") in self.done:
                continue
            if state == "learner-exists" and self.learners.index(m["ID"]) == 1:
                continue  # the second master: killed only once started, by an operator that saw it start
            self.done.add((m["ID"], state))
            shape = ", ".join(sorted("%s%s" % (x.get("name") or "(unstarted)", " (learner)" if x.get("isLearner")
                                                else "") for x in members))
            self.ops.kill_and_restart(state, "learner %s %s; members: %s" % (
                m.get("name") or "(unstarted)", m.get("peerURLs"), shape))
            return


def add_learner_counts(env_dir):
    """How often each operator log says a learner add for a node completed."""
    counts = {}
    for path in sorted(glob.glob(os.path.join(env_dir, "operator*.log"))):
        for line in open(path, errors="replace"):
            mo = re.search(r"etcd add learner (\S+) \(\S+\): done", line)
            if mo:
                counts[mo.group(1)] = counts.get(mo.group(1), 0) + 1
    return counts


def main():
    build = sys.argv[1]
    t0 = time.monotonic()
    with Env(build) as env:
        c = Cluster(env).start()
        watcher, writer = c.actors()
        start_actors(watcher, writer)
        ops = Operators(c)
        chaos = Chaos(c, ops)
        chaos.start()
        supervisor = None
        try:
            # The installer marks bootstrap complete once etcd runs in the cluster.
            wait_for("EtcdRunningInCluster=True", lambda: chaos.error is not None or c.running_in_cluster(), TIMEOUT)
            assert chaos.error is None, chaos.error
            # All three masters are voters now (no learner left to kill at): the last state.
            chaos.stop.set()
            chaos.join(timeout=10)
            assert chaos.error is None, chaos.error
            ops.wait_leader(60)
            with ops.lock:
                ops.freeze()
                c.complete_bootstrap()
                names = c.member_names()
                if BOOTSTRAP_MEMBER in names:
                    ops.kill_and_restart("bootstrap-complete", "members: %s; stopped before the write" %
                                         ", ".join(names))
                else:
                    ops.thaw()
                    log("the bootstrap member was gone before the kill: state bootstrap-complete not hit")
            if ops.kills and ops.kills[-1]["state"] == "bootstrap-complete":
                log("after the kill the bootstrap member is %s" % (
                    "still listed" if BOOTSTRAP_MEMBER in c.member_names() else "gone already"))
                ops.wait_leader(60)
            # The kills are over: from here an operator that steps down by itself is restarted.
            supervisor = ops.supervise()
            wait_for("the bootstrap member to be removed", lambda: c.member_names() == c.masters, TIMEOUT)
            wait_for("the bootstrap annotation to go", c.bootstrap_annotation_gone, 60)
            c.destroy_bootstrap()
            # Keep watching and writing while the operator rolls the post-bootstrap revision.
            c.wait_settled(180)
            c.wait_at_latest(180)
            ops.wait_leader(60)  # an operator leads (the last one, or its restart)
        finally:
            chaos.stop.set()
            stop_actors(watcher, writer)
            if supervisor:
                supervisor.set()

        hit = [k["state"] for k in ops.kills]
        log("kills: %d" % len(hit))
        for k in ops.kills:
            log("  %-18s next leader after %s s; %s" % (
                k["state"], "%.1f" % k["leader_after"] if "leader_after" in k else "?", k["detail"]))
        missing = [s for s in STATES if s not in hit]
        assert not missing, "state(s) never observed with a leading operator, so never killed at: %s" % missing
        early = [k for k in ops.kills if k.get("leader_after", LEASE_S) < LEASE_S - 1]
        assert not early, "a new operator led before the killed one's lease expired: %s" % early
        assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
        sizes = [len(shape) for _, shape, _ in watcher.history]
        log("member counts over time: %s" % sizes)
        log("member IDs ever listed: %d" % len(watcher.member_ids))
        assert len(watcher.member_ids) == 1 + len(c.masters), (
            "a member was added more than once: %d member IDs for %d nodes" % (
                len(watcher.member_ids), 1 + len(c.masters)))
        counts = add_learner_counts(env.dir)
        log("learner adds completed, by node: %s" % counts)
        assert all(v <= 1 for v in counts.values()), "a node's learner was added twice: %s" % counts
        assert c.member_names() == c.masters, c.member_names()
        c.check_writer(writer)
        c.check_endpoints()

        # A release upgrade, a downgrade and the upgrade again (issue 13, point 5): each
        # operator replaced as its Deployment rolls (SIGTERM, then the new one).
        def replace_operator():
            with ops.lock:
                ops.proc.send_signal(signal.SIGTERM)
                ops.proc.wait(timeout=30)
                ops._start()
        supervisor = ops.supervise()
        try:
            check_upgrade_downgrade(c, replace_operator)
            check_leader_kills(c)
        finally:
            supervisor.set()
        log("operators restarted after exiting by themselves: %d" % ops.restarts)
        log("ok (%.0f s)" % (time.monotonic() - t0))


if __name__ == "__main__":
    main()
