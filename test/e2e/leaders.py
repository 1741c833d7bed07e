"""The etcd leader killed again and again (issue 13, point 5), on a settled cluster.

check_leader_kills(): every PERIOD seconds for DURATION seconds (30 s and
5 minutes, as etcd's own leader-failure tests do), the member that leads is
asked for by etcd's status, and its etcd container gets SIGKILL; its kubelet
restarts it. A writer puts a key every 50 ms throughout and an invariant
watcher samples the members every 200 ms. A kill waits until every member is
healthy again and has a leader: killing a second member while the first is
still down would take quorum, which is not what this tests.

Asserted: every acknowledged write readable at the end; no lasting quorum
loss; the operators (the one leading, and any restart of it: with the e2e's
4 s renew deadline, against upstream's 107 s, an election's stall of the API
can make it step down, and its Deployment starts it again) made no etcd call
that changes anything (no membership change, no leader move, no
defragmentation: nothing was due, and a view taken mid-election is no
reason), rolled no revision, clusteroperator/etcd never said Available=False (read
every quarter second throughout: an election is no outage while two of three members
are up), and it settles Available, not Progressing, not Degraded.
Logged per kill: which member led, which won the election that followed (the
restarted one may) and when, and how long until the killed one was healthy
again. Python 3 stdlib only."""
import glob
import os
import re
import signal
import threading
import time

from e2e import log, wait_for
from scenario import start_actors, stop_actors

PERIOD = float(os.environ.get("E2E_LEADER_KILL_PERIOD", "30"))
DURATION = float(os.environ.get("E2E_LEADER_KILL_DURATION", "300"))

# What the operator logs before each etcd call it makes (runtime/executor.c).
ETCD_CALL = re.compile(rb"\] \w+: (etcd [^\n]*): starting\n")


def etcd_calls(env):
    """Every etcd call the operators of this cluster started, in log order."""
    calls = []
    for path in sorted(glob.glob(os.path.join(env.dir, "operator*.log"))):
        with open(path, "rb") as f:
            calls += [m.group(1).decode(errors="replace") for m in ETCD_CALL.finditer(f.read())]
    return calls


def leader_of(c, everyone=True):
    """(leader ID, node name, raft term) that the members agree on, or None while they do
    not (and while one does not answer, unless not `everyone`: then a majority that answers)."""
    seen, answered, term = set(), 0, 0
    for ep in c.master_eps:
        try:
            st, j = c.etcd.call(ep, "/v3/maintenance/status")
        except Exception:
            st, j = 0, {}
        if st != 200 or j.get("leader", "0") == "0":
            if everyone:
                return None
            continue
        answered += 1
        seen.add(j["leader"])
        term = max(term, int(j.get("raftTerm", "0")))
    if len(seen) != 1 or answered <= len(c.master_eps) // 2:
        return None
    leader = seen.pop()
    for m in c.etcd.members(c.master_eps):
        if m.get("ID") == leader:
            return leader, m.get("name"), term
    return None


class AvailableRecorder(threading.Thread):
    """Reads clusteroperators/etcd every `period` s; keeps each change of its Available
    condition (status, reason, message) with the time it was first read."""

    def __init__(self, env, period=0.25):
        super().__init__(name="co-available", daemon=True)
        self.env, self.period = env, period
        self.stop_ev = threading.Event()
        self.changes, self.reads, self.failed = [], 0, 0

    def run(self):
        t0, last = time.monotonic(), None
        while not self.stop_ev.wait(self.period):
            co = self.env.get_json("co", "etcd")
            if co is None:
                self.failed += 1
                continue
            self.reads += 1
            cond = next((c for c in (co.get("status") or {}).get("conditions") or []
                         if c.get("type") == "Available"), {})
            now = (cond.get("status"), cond.get("reason"), cond.get("message"))
            if now != last:
                self.changes.append((time.monotonic() - t0,) + now)
                last = now

    def false_readings(self):
        return [ch for ch in self.changes if ch[1] == "False"]


def all_healthy(c):
    return all(c.etcd.healthy(ep) for ep in c.master_eps)


def check_leader_kills(c, period=PERIOD, duration=DURATION):
    env = c.env
    revision = env.get_json("etcd", "cluster")["status"]["latestAvailableRevision"]
    calls_before = len(etcd_calls(env))
    watcher, writer = c.actors()
    start_actors(watcher, writer)
    available = AvailableRecorder(env)
    available.start()
    kills = []
    t0 = time.monotonic()
    try:
        time.sleep(2)  # the watcher's first samples
        while len(kills) < int(duration // period):
            tick = t0 + len(kills) * period
            if time.monotonic() < tick:
                time.sleep(tick - time.monotonic())
            leader, node, term = wait_for("every member healthy under one leader",
                                          lambda: all_healthy(c) and leader_of(c), 60)
            pid = c.container_pid(node, "etcd")
            assert pid, "no etcd container on %s" % node
            t_kill = time.monotonic()
            os.kill(pid, signal.SIGKILL)
            k = {"at": t_kill - t0, "node": node}
            # An election (a higher term) with a leader a majority agrees on; the restarted
            # member may win it again.
            _, k["winner"], _ = wait_for("a leader elected after %s was killed" % node,
                                        lambda: (lambda led: led if led and led[2] > term else None)(
                                            leader_of(c, everyone=False)), 60, interval=0.1)
            k["elected"] = time.monotonic() - t_kill
            wait_for("etcd on %s healthy again" % node,
                     lambda: c.container_pid(node, "etcd") not in (None, pid) and all_healthy(c), 120, interval=0.2)
            k["back"] = time.monotonic() - t_kill
            kills.append(k)
            log("leader %s killed at %.0f s: %s elected %.1f s later; %s healthy again after %.1f s"
                % (node, k["at"], k["winner"], k["elected"], node, k["back"]))
    finally:
        stop_actors(watcher, writer)
        available.stop_ev.set()
        available.join(5)
    log("clusteroperator/etcd read %d times (%d failed reads) while leaders died; Available changed "
        "%d times: %s" % (available.reads, available.failed, len(available.changes), available.changes[:6]))
    log("%d leaders killed in %.0f s; writes acknowledged %d, refused %d"
        % (len(kills), time.monotonic() - t0, len(writer.acked), writer.failed))
    assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
    assert available.reads > 0, "clusteroperator/etcd was never read"
    assert not available.false_readings(), \
        "clusteroperator/etcd said Available=False while only leaders died: %s" % available.false_readings()[:3]
    assert watcher.changes == 0, "the membership changed: %s" % watcher.history
    calls = etcd_calls(env)[calls_before:]
    assert not calls, "the operator acted on etcd while only leaders died: %s" % calls[:5]
    c.check_writer(writer)
    c.wait_settled(120)
    after = env.get_json("etcd", "cluster")["status"]["latestAvailableRevision"]
    assert after == revision, "a new revision (%d -> %d) while only leaders died" % (revision, after)
    c.check_endpoints()
    return kills
