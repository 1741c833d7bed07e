"""Upgrade, downgrade, re-upgrade (issue 13, point 5) on a settled cluster.

Each step replaces the operator by one of another release whose etcd image
differs (a new static pod shape for every master), as the cluster-version
operator does when it rolls a release: the new operator renders the pod,
makes one new revision and rolls it one node at a time. Checked at every
step, with the invariant watcher, a writer, a pod watch and a health
sampler running throughout: never two masters' etcd pods not ready at once,
never fewer than two healthy voters for longer than an election, every
master's etcd pod at the new revision running the release's image, and
clusteroperator/etcd settled at the release's versions. Python 3 stdlib only."""
import time

from e2e import log, wait_for
from scenario import start_actors, stop_actors
from test_redeploy import HEALTH_GRACE_S, Health, PodWatch

NEXT = ("4.99.1-e2e", "quay.io/openshift/etcd@sha256:fedcba9876543210")


def etcd_images(env, masters):
    """node -> (revision label, ready, the etcd container's image) of each master's etcd pod."""
    pods = (env.get_json("pods", "-n", "openshift-etcd", "-l", "app=etcd") or {}).get("items", [])
    out = {}
    for p in pods:
        node = p["spec"].get("nodeName")
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in p.get("status", {}).get("conditions", []))
        image = next((c["image"] for c in p["spec"]["containers"] if c["name"] == "etcd"), None)
        out[node] = (p["metadata"].get("labels", {}).get("revision"), ready, image)
    return {m: out.get(m) for m in masters}


def check_upgrade_downgrade(c, replace_operator):
    """replace_operator(): stops the running operator and starts one of c.release/c.etcd_image."""
    env = c.env
    steps = [("upgrade", NEXT), ("downgrade", (c.release, c.etcd_image)), ("re-upgrade", NEXT)]
    watcher, writer = c.actors()
    pods = PodWatch(env, list(c.masters))
    health = Health(c.client(), c.master_eps, 2)
    start_actors(watcher, writer, pods, health)
    try:
        wait_for("the pod watch to see every etcd pod ready",
                 lambda: all(st and st[0] for st in dict(pods.state).values()), 60)
        pods.arm()
        for step, (release, image) in steps:
            base = env.get_json("etcd", "cluster")["status"]["latestAvailableRevision"]
            t0 = time.monotonic()
            c.release, c.etcd_image = release, image
            replace_operator()

            def rolled():
                latest = env.get_json("etcd", "cluster")["status"]["latestAvailableRevision"]
                pods_now = etcd_images(env, c.masters)
                return latest > base and c.at_latest() and all(
                    v and v[0] == str(latest) and v[1] and v[2] == image for v in pods_now.values())
            wait_for("every master's etcd at a new revision with %s" % image, rolled, 240)
            c.wait_settled(180)
            latest = env.get_json("etcd", "cluster")["status"]["latestAvailableRevision"]
            log("%s to %s: revision %d -> %d, every master on %s, settled in %.0f s"
                % (step, release, base, latest, image, time.monotonic() - t0))
    finally:
        stop_actors(watcher, writer, pods, health)
    assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
    assert not pods.violations, "two etcd pods down at once: %s" % pods.violations[:5]
    long_dips = [d for d in health.dips if d[1] > HEALTH_GRACE_S]
    log("voters healthy: at least %s of 3 over %d samples; dips below 2: %s"
        % (health.min, health.samples, ["%.1f s" % d[1] for d in health.dips]))
    assert not long_dips, "fewer than 2 healthy voters for longer than %.0f s: %s" % (HEALTH_GRACE_S, long_dips)
    c.check_writer(writer)
