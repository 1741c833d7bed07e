"""Whole-cluster events (issue 13, point 5) on a settled cluster.

check_whole_cluster_restart(): all nodes off and on. The operator stops
(its node goes down), then every master's kubelet stops with its pods (so
every etcd member and the API behind them go), and the hosts come back one
by one in another order than they went, with seconds between them, the
operator last. Nothing may be needed from the operator: each member starts
on its own data (discover-etcd-initial-cluster finds no peer answering and
starts on existing data), the members find each other, and the cluster is
the same one: the same cluster ID and member IDs, no membership change, no
new static pod revision, every write acknowledged before the power-off
readable, clusteroperator/etcd settled again. Python 3 stdlib only."""
import time

from e2e import log, wait_for
from scenario import Watcher, Writer, start_actors, stop_actors


def check_whole_cluster_restart(c, sup):
    """Returns the new operator supervisor (the old one is stopped)."""
    env = c.env
    members = c.etcd.members(c.master_eps)
    ids = sorted(m["ID"] for m in members)
    cluster_id = c.etcd.first(c.master_eps, "/v3/maintenance/status", {})[1]["header"]["cluster_id"]
    revision = env.get_json("etcd", "cluster")["status"]["latestAvailableRevision"]
    writer = Writer(c.client(), c.endpoints)
    start_actors(writer)
    time.sleep(3)
    stop_actors(writer)
    log("before the power-off: cluster %s, members %s, revision %d, %d writes acknowledged"
        % (cluster_id, sorted(m["name"] for m in members), revision, len(writer.acked)))

    stop_actors(sup)
    order_off = list(c.masters)
    for node in order_off:
        env.stop_kubelet(node)
    assert not any(c.etcd.healthy(ep) for ep in c.master_eps), "an etcd member still answers"
    log("every master is off (%s, in that order), the operator too" % ", ".join(order_off))
    time.sleep(2)

    order_on = [order_off[2], order_off[0], order_off[1]]
    t_on = time.monotonic()
    for node in order_on:
        env.start_kubelet(node, c.master_ips[node], master=True)
        time.sleep(3)
    log("masters on again: %s, in that order, 3 s apart" % ", ".join(order_on))

    def all_healthy():
        ms = c.etcd.members(c.master_eps)
        return ms if len(ms) == len(ids) and all(c.etcd.healthy(m["clientURLs"][0]) for m in ms) else None
    ms = wait_for("every member healthy again", all_healthy, 180)
    log("quorum and every member back %.1f s after the first host came on" % (time.monotonic() - t_on))
    assert sorted(m["ID"] for m in ms) == ids, "members changed: %s -> %s" % (ids, ms)
    _, status = c.etcd.first(c.master_eps, "/v3/maintenance/status", {})
    assert status["header"]["cluster_id"] == cluster_id, (cluster_id, status["header"])

    # The operator comes back; from now on nothing may change the membership.
    watcher = Watcher(c.client(), c.endpoints)
    start_actors(watcher)
    sup = c.supervise_operator()

    def leading():
        p = sup.proc
        with open(p.log_path, "rb") as f:
            return b"became leader;" in f.read()
    try:
        wait_for("the new operator to lead", leading, 60)
        c.wait_settled(240)
        c.wait_at_latest(180)
        time.sleep(10)  # its controllers have synced: whatever they would change shows by now
    finally:
        stop_actors(watcher)
    assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
    assert watcher.changes == 0, "the membership changed after the restart: %s" % watcher.history
    after = env.get_json("etcd", "cluster")["status"]["latestAvailableRevision"]
    assert after == revision, "a new revision (%d -> %d) after a restart that changed nothing" % (revision, after)
    c.check_writer(writer)
    c.check_endpoints()
    return sup
