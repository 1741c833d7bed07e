#!/usr/bin/env python3
"""e2e: the whole bootstrap on Kubernetes' own control plane. One bootstrap
node and three masters (kubelet-sims), the rendered bootstrap etcd, and the
operator as a process with short leader-election timings. The test plays the
other actors: the installer (render, cluster manifests, kube-system/bootstrap
once EtcdRunningInCluster=True, and the bootstrap host destroyed once
EtcdBootstrapMemberRemoved=True) and the cluster-version operator
(etcds/cluster and the config objects). kube-apiserver stores everything
in the managed etcd and follows etcd-endpoints (test/kube/control-plane
publishes its config-<N> revisions, as the kube-apiserver operator does),
so the API itself must survive the
bootstrap member's removal, and the cluster must settle without the
bootstrap host.

Asserted throughout by a watcher: never more than one learner or unstarted
member; no membership change while a member is unhealthy; quorum never lost.
A writer puts a key every 50 ms; at the end every acknowledged write reads
back. Finally members are the three masters, clusteroperator/etcd is
Available, not Progressing, not Degraded, and every node is at
latestAvailableRevision.

The same cluster then takes two day-2 checks that need a settled cluster:
- the quorum guard: the real `kubectl drain` of one master's guard goes
  through the eviction API, a second master's is refused by etcd-guard-pdb;
- a healthy member removed behind the operator's back (`member remove`)
  comes back by itself as a new learner, promoted, its old data moved aside,
  with the watcher and a writer running again, and the cluster settles;
- a master replaced through the Machine API (machines.py): a new master
  joins, the old one's Machine is deleted, its member is removed only once
  the new one votes, the operator's pre-drain hook is lifted only then, and
  the drain goes through (3 -> 4 -> 3, watcher and writer running);
- a master's host dies and its Machine is deleted: the dead member is
  removed first, then a new master joins (3 -> 2 -> 3);
- two masters replaced at once (3 -> 5 -> 3): members added and removed one
  at a time, and the two drains, run together, do not deadlock on the
  guard budget.
Usage: test_bootstrap.py BUILD_DIR"""
import calendar
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import Env, log, wait_for  # noqa: E402
from machines import check_dead_master_replaced, check_master_replaced, check_two_masters_replaced  # noqa: E402
from scenario import LEASE_TOLERANT, Cluster, etcd_servers, start_actors, stop_actors  # noqa: E402

TIMEOUT = int(os.environ.get("E2E_BOOTSTRAP_TIMEOUT", "420"))


def first_kas_revision_with(env, servers):
    """(N, creation time) of the first openshift-kube-apiserver/config-N whose
    etcd-servers include every one of `servers` (creation time to the second,
    rounded down)."""
    cms = (env.get_json("configmap", "-n", "openshift-kube-apiserver") or {}).get("items", [])
    found = []
    for cm in cms:
        name = cm["metadata"]["name"]
        if not name.startswith("config-"):
            continue
        have = etcd_servers(cm)
        if all(s in have for s in servers):
            ts = calendar.timegm(time.strptime(cm["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ"))
            found.append((int(name[len("config-"):]), ts))
    return min(found) if found else None


def main():
    build = sys.argv[1]
    with Env(build) as env:
        c = Cluster(env, lease=LEASE_TOLERANT).start()
        watcher, writer = c.actors()
        start_actors(watcher, writer)
        sup = c.supervise_operator()  # as its Deployment: restarted if it steps down
        try:
            # The installer marks bootstrap complete once etcd runs in the cluster.
            wait_for("EtcdRunningInCluster=True", c.running_in_cluster, TIMEOUT)
            c.complete_bootstrap()
            t_complete = time.time()
            # bootkube.sh's wait: the bootstrap host is done once wait-for-ceo returns.
            c.wait_for_ceo(TIMEOUT)
            assert c.member_names() == c.masters, "wait-for-ceo returned with members %s" % c.member_names()
            wait_for("the bootstrap annotation to go", c.bootstrap_annotation_gone, 60)
            c.destroy_bootstrap()
        finally:
            stop_actors(watcher, writer)
        log("operator restarts during the bootstrap (it steps down when the API stalls past its renew "
            "deadline): %d" % sup.restarts)
        assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
        assert watcher.changes >= 7, "expected 3 adds, 3 promotes and a removal, saw %d changes" % watcher.changes
        sizes = [len(shape) for _, shape, _ in watcher.history]
        log("member counts over time: %s" % sizes)
        assert max(sizes) == 4, "expected 1 -> 4 -> 3, saw %s" % sizes
        c.check_writer(writer)

        # The order of the teardown: bootstrap complete, the API on the masters, then removal.
        t_removed = next(t for t, shape, _ in watcher.history
                         if "etcd-bootstrap" not in [n for n, _ in shape])
        assert t_removed > t_complete, "bootstrap member removed before bootstrap was complete"
        # Read again while the API rolls (a read that lands on the kube-apiserver being stopped
        # fails; a clean-clone run saw that here, and a failed read is no answer).
        moved = wait_for("a kube-apiserver revision that lists every master",
                         lambda: first_kas_revision_with(env, c.master_eps), 60, interval=2)
        n, created = moved
        assert created <= t_removed, "bootstrap member removed %.1f s before config-%d (every master)" % (
            created - t_removed, n)
        log("bootstrap complete at +0, config-%d (every master) at %+.1f s, bootstrap member removed at %+.1f s"
            % (n, created - t_complete, t_removed - t_complete))
        wait_for("the API to use the masters only", lambda: c.kas_etcd_servers() == sorted(c.master_eps), 60)
        c.wait_settled(120)

        # Every node at latestAvailableRevision; the endpoints objects name the three masters.
        c.wait_at_latest(180)
        c.check_endpoints()
        c.check_quorum_guard()
        c.check_contract()

        # A member removed behind the operator's back comes back by itself (issue 13, point 2).
        c.check_removed_member_rejoins(c.masters[2])
        c.wait_settled(240)
        c.wait_at_latest(240)
        c.check_endpoints()

        # A master replaced through the Machine API (issue 13, point 3).
        check_master_replaced(c, "master-0", "master-3", env.ip(13))
        c.wait_settled(240)
        c.wait_at_latest(240)
        c.check_endpoints()
        # A dead master's Machine deleted: its member goes first, then a replacement joins.
        check_dead_master_replaced(c, "master-1", "master-4", env.ip(14))
        c.wait_settled(240)
        c.wait_at_latest(240)
        c.check_endpoints()
        # Two masters replaced at once: no drain deadlock on the guard budget.
        check_two_masters_replaced(c, ["master-2", "master-3"], [("master-5", env.ip(15)), ("master-6", env.ip(16))])
        c.wait_settled(240)
        c.wait_at_latest(240)
        c.check_endpoints()
        log("ok")


if __name__ == "__main__":
    main()
