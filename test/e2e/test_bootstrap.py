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
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import Env, log, wait_for  # noqa: E402
from scenario import Cluster, start_actors, stop_actors  # noqa: E402

TIMEOUT = int(os.environ.get("E2E_BOOTSTRAP_TIMEOUT", "420"))


def main():
    build = sys.argv[1]
    with Env(build) as env:
        c = Cluster(env).start()
        watcher, writer, kas = c.actors()
        start_actors(watcher, writer, kas)
        c.start_operator()
        try:
            # The installer marks bootstrap complete once etcd runs in the cluster.
            wait_for("EtcdRunningInCluster=True", c.running_in_cluster, TIMEOUT)
            c.complete_bootstrap()
            wait_for("the bootstrap member to be removed", lambda: c.member_names() == c.masters, TIMEOUT)
            wait_for("the bootstrap annotation to go", c.bootstrap_annotation_gone, 60)
        finally:
            stop_actors(watcher, writer, kas)
        assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
        sizes = [len(shape) for _, shape, _ in watcher.history]
        log("member counts over time: %s" % sizes)
        assert max(sizes) == 4, "expected 1 -> 4 -> 3, saw %s" % sizes
        c.check_writer(writer)
        c.wait_settled(120)

        # Every node at latestAvailableRevision; the endpoints objects name the three masters.
        c.wait_at_latest(180)
        c.check_endpoints()
        log("ok")


if __name__ == "__main__":
    main()
