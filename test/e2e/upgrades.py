"""Upgrade, downgrade, a broken release, re-upgrade (issue 13, point 5; issue 37, point 2;
issue 35, point 7) on a settled cluster.

Each step replaces the operator by one of another release whose etcd image carries
another etcd: etcd 3.5.16 (Debian's, images/etcd) and etcd 3.6.16 (hack/build-etcd.sh,
images/etcd-3.6), as OpenShift releases move etcd from 3.5 to 3.6 and a rollback moves
it back. The new operator renders the pod for that etcd (ETCD_IMAGE_VERSION), makes one
new revision and rolls it one node at a time, as the cluster-version operator's rollout
of a release has it. Down to 3.5 it first enables etcd's downgrade, without which etcd
refuses a 3.5 member in a 3.6 cluster. Between the downgrade and the re-upgrade comes a
broken release, whose etcd image carries 3.6 while it declares 3.5: its revision reaches one
master, whose etcd pod's setup container refuses the image, and the rollout stops there
with the other two members keeping quorum and StaticPodsDegraded naming the cause; the
re-upgrade, the fixed release, then goes to that master first. Checked at every step, with the invariant
watcher, a writer, a pod watch, a health sampler and a version sampler running
throughout: never two masters' etcd pods not ready at once, never fewer than two healthy
voters for longer than an election, every member running the release's etcd and every
etcd pod its image at the new revision, the cluster version moving to 3.6 only once
every member runs 3.6, no member on 3.5 before the cluster version was down to 3.5,
clusteroperator/etcd settled at the release's versions, and no acknowledged write lost.
Python 3 stdlib only."""
import glob
import os
import threading
import time

from e2e import log, wait_for
from scenario import start_actors, stop_actors
from test_redeploy import HEALTH_GRACE_S, Health, PodWatch

# (release, etcd image, the etcd it carries, the version its members report)
NEXT = ("4.99.1-e2e", "quay.io/openshift/etcd-3.6@sha256:fedcba9876543210", "3.6", "3.6.16")
# A broken release: NEXT's etcd image (3.6) declared as etcd 3.5 (ETCD_IMAGE_VERSION).
BROKEN = ("4.99.2-broken-e2e", NEXT[1], "3.5")


class Versions(threading.Thread):
    """Every 0.5 s: each master's etcd version (status) and the cluster version (/version),
    as (seconds, {endpoint: version or None}, cluster version or None)."""

    def __init__(self, etcd, endpoints):
        super().__init__(daemon=True)
        self.etcd, self.endpoints = etcd, endpoints
        self.stop = threading.Event()
        self.samples = []

    def run(self):
        t0 = time.monotonic()
        while not self.stop.is_set():
            members = {}
            for e in self.endpoints:
                try:
                    st, j = self.etcd.call(e, "/v3/maintenance/status")
                    members[e] = j.get("version") if st == 200 else None
                except Exception:
                    members[e] = None
            cluster = None
            for e in self.endpoints:
                try:
                    st, j = self.etcd.call(e, "/version", method="GET")
                    if st == 200 and j.get("etcdcluster"):
                        cluster = j["etcdcluster"]
                        break
                except Exception:
                    continue
            self.samples.append((time.monotonic() - t0, members, cluster))
            self.stop.wait(0.5)


def minor(version):
    return ".".join((version or "").split(".")[:2])


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
    first = (c.release, c.etcd_image, c.etcd_version, "3.5.16")
    steps = [("upgrade", NEXT), ("downgrade", first), ("re-upgrade", NEXT)]
    watcher, writer = c.actors()
    pods = PodWatch(env, list(c.masters))
    health = Health(c.client(), c.master_eps, 2)
    versions = Versions(c.client(), c.master_eps)
    start_actors(watcher, writer, pods, health, versions)
    try:
        wait_for("the pod watch to see every etcd pod ready",
                 lambda: all(st and st[0] for st in dict(pods.state).values()), 60)
        pods.arm()
        for step, (release, image, etcd_minor, etcd_version) in steps:
            if step == "re-upgrade":
                check_broken_release(c, replace_operator)
            base = env.get_json("etcd", "cluster")["status"]["latestAvailableRevision"]
            t0 = time.monotonic()
            since = len(versions.samples)
            c.release, c.etcd_image, c.etcd_version = release, image, etcd_minor
            replace_operator()

            def rolled():
                latest = env.get_json("etcd", "cluster")["status"]["latestAvailableRevision"]
                pods_now = etcd_images(env, c.masters)
                return latest > base and c.at_latest() and all(
                    v and v[0] == str(latest) and v[1] and v[2] == image for v in pods_now.values())
            wait_for("every master's etcd at a new revision with %s" % image, rolled, 300)
            c.wait_settled(180)
            latest = env.get_json("etcd", "cluster")["status"]["latestAvailableRevision"]
            wait_for("every member on etcd %s and the cluster version at %s" % (etcd_version, etcd_minor),
                     lambda: (lambda s: s if s and all(v == etcd_version for v in s[1].values())
                              and minor(s[2]) == etcd_minor else None)(
                         versions.samples[-1] if len(versions.samples) > since else None), 60)
            log("%s to %s (etcd %s): revision %d -> %d, every master on %s, settled in %.0f s"
                % (step, release, etcd_version, base, latest, image, time.monotonic() - t0))
            check_versions(step, versions.samples[since:], etcd_minor)
    finally:
        stop_actors(watcher, writer, pods, health, versions)
    assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
    assert not pods.violations, "two etcd pods down at once: %s" % pods.violations[:5]
    long_dips = [d for d in health.dips if d[1] > HEALTH_GRACE_S]
    log("voters healthy: at least %s of 3 over %d samples; dips below 2: %s"
        % (health.min, health.samples, ["%.1f s" % d[1] for d in health.dips]))
    assert not long_dips, "fewer than 2 healthy voters for longer than %.0f s: %s" % (HEALTH_GRACE_S, long_dips)
    c.check_writer(writer)
    said = [line for path in sorted(glob.glob(os.path.join(env.dir, "operator*.log")))
            for line in open(path, errors="replace") if "etcd downgrade ENABLE to 3.5: done" in line]
    log("the operator enabled etcd's downgrade: %s" % [line.strip()[:160] for line in said])
    assert said, "no operator log says etcd's downgrade to 3.5 was enabled"


def check_broken_release(c, replace_operator):
    """The broken release (BROKEN) over a settled 3.5 cluster: the new revision reaches one
    master and stops there, refused by its etcd pod's setup container, with StaticPodsDegraded
    saying why; the other masters stay ready at the old revision (the actors running around
    this step check quorum and that no two etcd pods are down at once)."""
    env = c.env
    base = env.get_json("etcd", "cluster")["status"]["latestAvailableRevision"]
    t0 = time.monotonic()
    c.release, c.etcd_image, c.etcd_version = BROKEN
    replace_operator()

    def refused():
        cr = env.get_json("etcd", "cluster")
        latest = cr["status"]["latestAvailableRevision"]
        if latest <= base:
            return None
        pods = etcd_images(env, c.masters)
        at_new = [m for m, v in pods.items() if v and v[0] == str(latest)]
        cond = next((x for x in cr["status"].get("conditions") or [] if x["type"] == "StaticPodsDegraded"), {})
        if (len(at_new) == 1 and not pods[at_new[0]][1] and cond.get("status") == "True"
                and "but the release declares etcd 3.5" in cond.get("message", "")):
            return latest, at_new[0], cond["message"]
        return None
    latest, node, msg = wait_for("the broken release refused on one master, StaticPodsDegraded naming why",
                                 refused, 240)
    log("broken release %s: revision %d refused on %s after %.0f s; StaticPodsDegraded: %s"
        % (BROKEN[0], latest, node, time.monotonic() - t0, msg[:300]))
    # The rollout stays there: no other master takes the revision, and they stay ready.
    end = time.monotonic() + 20
    while time.monotonic() < end:
        pods = etcd_images(env, c.masters)
        moved = sorted(m for m, v in pods.items() if v and v[0] == str(latest))
        assert moved == [node], "the broken revision %d went on to %s" % (latest, moved)
        down = sorted(m for m, v in pods.items() if m != node and not (v and v[1]))
        assert not down, "masters %s not ready while %s refuses the broken release" % (down, node)
        time.sleep(2)


def check_versions(step, samples, to):
    """The cluster version moved as etcd's rules have it, over one step's samples: up to 3.6
    only once every member answered 3.6 (no member on 3.5 left); down to 3.5 before any
    member ran 3.5 (etcd's downgrade enabled first: a 3.5 member is refused otherwise)."""
    seen_cluster = sorted({s[2] for s in samples if s[2]})
    log("%s: cluster versions seen %s over %d samples" % (step, seen_cluster, len(samples)))
    cluster = None
    for t, members, c in samples:
        cluster = c or cluster
        running = {minor(v) for v in members.values() if v}
        if to == "3.6" and minor(c) == "3.6":
            assert running == {"3.6"}, (
                "%s: at +%.1f s the cluster version was %s while members ran %s" % (step, t, c, members))
        if to == "3.5" and "3.5" in running:
            assert minor(cluster) == "3.5", (
                "%s: at +%.1f s a member ran etcd 3.5 while the cluster version was %s: %s"
                % (step, t, cluster, members))
