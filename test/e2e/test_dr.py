#!/usr/bin/env python3
"""e2e: disaster recovery, by the runbooks of docs/runbooks/ run word for word
(test/e2e/runbook.py) on a cluster bootstrapped as in test_bootstrap.py.

Scenario quorum-loss (restore-after-quorum-loss.md):
- cluster-backup.sh on master-0 while clusteroperator/kube-scheduler is
  Progressing is refused and writes nothing; with --force it writes both
  files, marked __POSSIBLY_DIRTY__;
- a backup on master-0 (backup.md) while the 50 ms writer runs, and one
  more into the S3 peer (backup.md step 3: cluster-backup.sh with the
  store's flags; the AWS SDK lists both objects); objects created after it;
  etcd stopped on master-0 and master-2 (quorum lost); the runbook fetches
  the stored backup to master-1 (s3 get-backup latest: the snapshot byte for
  byte) and restores there;
- the restored etcd is killed as soon as the API answers (step 4): its pod
  brings it back by itself, and the runbook goes on;
- one member comes back first, with a new cluster ID, then three voters, one
  change at a time while every voter is healthy (the invariant watcher);
- the objects created after the backup are gone, those before it are there,
  every write acknowledged before the backup started is there;
- a watch from a resourceVersion seen before the disaster gets 410 Gone (the
  revision bump), and the restore pod reports which bump ran;
- nothing was deleted: master-1's old member is in /var/lib/etcd-backup, the
  others' are archived; clusteroperator/etcd settles.
Scenario quorum-restore (quorum-restore.md):
- the writer stopped and every member caught up; master-0 and master-2 lose
  etcd and their data dirs (quorum lost);
- the runbook makes master-1's data the cluster (the script checks that it
  has the highest raft index of those that answer): master-1 alone, then
  three voters one at a time;
- every acknowledged write is there, a watch from a resourceVersion seen
  before gets 410, the member dir was copied aside first; clusteroperator/etcd
  settles.
Scenario single-member (restore-single-member.md):
- master-1's database damaged while its etcd is stopped (both meta pages):
  started again it crash-loops, and EtcdMembersDegraded names it with
  etcd's panic ("failed to open database"), as the runbook's step 1 shows;
- a backup on master-0, then an object created after it; master-1's etcd
  stopped by the runbook;
- etcd-member-remove.sh on master-0 removes master-1's member (the unhealthy
  voter: the watcher allows that removal and nothing else), the in-place
  restore on master-1, which then rejoins as a new learner and is promoted;
- quorum is never lost; the object created after the backup and every
  acknowledged write are there (the quorum kept them); the cluster ID is
  the same; the damaged member is in /var/lib/etcd-backup byte for byte, the
  restored one archived; clusteroperator/etcd settles.
The scenarios run in turn on one cluster (CI: single-member, damaged-member,
quorum-restore, quorum-loss), each from the settled cluster the one before left.
Scenario damaged-member (the opt-in automatic form of the single-member
runbook, unsupportedConfigOverrides.replaceDamagedMembers):
- master-2's database damaged the same way; the operator removes the member
  (event DamagedMemberRemoved naming etcd's panic), discover moves the data
  aside, the member rejoins empty, learner then voter: no human step;
- quorum never lost, nothing lost, the cluster ID the same, the damaged file
  kept byte for byte in member-removed-archive-*.
Usage: test_dr.py BUILD_DIR SCENARIO..."""
import datetime
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from backup_checks import S3_AK, S3_BUCKET, S3_SK, sdk, start_s3_peer  # noqa: E402
from e2e import ROOT, Env, log, tree_bytes, wait_for  # noqa: E402
from addresses import take_address_away  # noqa: E402
from runbook import Runbook  # noqa: E402
from scenario import Cluster, Watcher, settled, start_actors, stop_actors  # noqa: E402

TIMEOUT = int(os.environ.get("E2E_BOOTSTRAP_TIMEOUT", "420"))
NS = "dr-e2e"  # each scenario's own namespace (main sets it)
DR_S3_PREFIX = "clusters/dr-e2e"  # the quorum-loss scenario's backups in the S3 peer


def bootstrap(c):
    """The bootstrap of test_bootstrap.py, to a settled three-master cluster."""
    c.start()
    watcher, writer = c.actors()
    c.threads += [watcher, writer]
    start_actors(watcher, writer)
    c.supervisor = c.supervise_operator()
    c.threads.append(c.supervisor)
    wait_for("EtcdRunningInCluster=True", c.running_in_cluster, TIMEOUT)
    c.complete_bootstrap()
    wait_for("the bootstrap member to be removed", lambda: c.member_names() == c.masters, TIMEOUT)
    wait_for("the bootstrap annotation to go", c.bootstrap_annotation_gone, 60)
    c.destroy_bootstrap()
    c.wait_settled(180)
    c.wait_at_latest(180)
    for m in c.masters:
        wait_for("the DR scripts on %s" % m, lambda: os.path.exists(os.path.join(
            c.node_root(m), "usr/local/bin/cluster-restore.sh")), 60)
    c.install_control_plane_fixture()
    return watcher, writer


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def cluster_id(c):
    _, st = c.etcd.first(c.master_eps, "/v3/maintenance/status", {})
    return st["header"]["cluster_id"]


def configmap(env, name, **data):
    env.kubectl("create", "configmap", name, "-n", NS, *["--from-literal=%s=%s" % kv for kv in data.items()])
    return env.get_json("configmap", "-n", NS, name)["metadata"]["resourceVersion"]


def watch_from(env, rv):
    """What a watch from resourceVersion rv answers first (a few seconds at most)."""
    r = env.kubectl("get", "--raw", "/api/v1/namespaces/%s/configmaps?watch=1&resourceVersion=%s&timeoutSeconds=3"
                    % (NS, rv), check=False)
    return r.stdout + r.stderr


def node_sh(c, node, script):
    return subprocess.run([os.path.join(ROOT, "hack", "node-shell.sh"), "--root", c.node_root(node), node,
                           "bash", "-c", script], capture_output=True, text=True, timeout=300)


def check_scale_out(c, watcher, survivor):
    """The survivor alone, then one member more at a time, to every master a voter,
    with the watcher's invariants (one pending member, no change while a voter is
    unhealthy) holding throughout."""
    shapes = [watcher.first_shape] + [h[1] for h in watcher.history]
    log("membership after the restore: %s" % shapes)
    # (the first list may still be the old membership, answered before the restore)
    alone = [(survivor, False)]
    assert alone in shapes, "the restored cluster never had %s alone: %s" % (survivor, shapes)
    after = shapes[shapes.index(alone):]
    assert all(len(b) - len(a) <= 1 for a, b in zip(after, after[1:])), "more than one member added at once: %s" % after
    assert after[-1] == [(m, False) for m in c.masters], after
    assert c.member_names() == c.masters, c.member_names()
    assert not watcher.violations, "invariants broken while scaling back out: %s" % watcher.violations[:5]


def learner_figures(c, watcher):
    """How long each member that joined after the restore was a learner (or added, not
    started), from the watcher's history, and what etcd itself logged of the snapshots it
    sent them (a restored cluster's log starts at the restore, so a new member gets the
    whole database as a snapshot): one FIGURES line."""
    joined, since = [], None
    for t, shape, _ in watcher.history:
        pending = [n for n, learner in shape if learner]
        if pending and since is None:
            since = t
        elif not pending and since is not None:
            joined.append(t - since)
            since = None
    # etcd's own start and end lines of each transfer, by its "ts" (ISO 8601 or seconds).
    pairs = {"sending database snapshot": ("sent database snapshot", "sent"),
             "receiving database snapshot": ("received and saved database snapshot", "received")}

    def ts(e):
        v = e.get("ts")
        if isinstance(v, (int, float)):
            return float(v)
        try:
            return datetime.datetime.fromisoformat(str(v).replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    sent = []
    for m in c.masters:
        logs = os.path.join(c.node_root(m), "var/log/pods", "openshift-etcd_etcd-%s" % m, "etcd")
        for f in sorted(os.listdir(logs)) if os.path.isdir(logs) else []:
            started = {}
            for line in open(os.path.join(logs, f), errors="replace"):
                if "database snapshot" not in line or "{" not in line:
                    continue
                try:
                    e = json.loads(line[line.index("{"):])
                except ValueError:
                    continue
                msg = e.get("msg", "")
                if msg in pairs:
                    started[pairs[msg][0]] = ts(e)
                for end, verb in pairs.values():
                    if msg == end:
                        t0, t1 = started.pop(end, None), ts(e)
                        took = e.get("download-took") or (
                            "%.2f s" % (t1 - t0) if t0 is not None and t1 is not None else "?")
                        sent.append("%s %s %s in %s" % (m, verb, e.get("size") or e.get("incoming-snapshot-size", "?"),
                                                        took))
    log("FIGURES learner to voter after the restore: %s; etcd's snapshot transfers: %s" % (
        ", ".join("%.1f s" % d for d in joined) or "none", "; ".join(sent) or "none logged"))


def fill(c, mib, writers=4):
    """Values of 512 KiB under /bench-fill/ until the database is at least `mib` MiB
    (etcd's dbSize: bbolt's pages, about 1.2 bytes for each byte put), put by
    `writers` clients at once (one etcd connection each, spread over the masters),
    in rounds of 64 MiB between looks at the size. Logs what it took."""
    import threading
    value = "x" * (512 * 1024)
    errors, nxt = [], [0]
    lock = threading.Lock()

    def put_share(k, stop):
        etcd = c.client(timeout=20.0)
        eps = c.master_eps[k % len(c.master_eps):] + c.master_eps[:k % len(c.master_eps)]
        try:
            while True:
                with lock:
                    i = nxt[0]
                    if i >= stop:
                        return
                    nxt[0] += 1
                etcd.put(eps, "/bench-fill/%06d" % i, value)
        except Exception as ex:  # noqa: BLE001 (reported below, fails the scenario)
            errors.append(ex)

    def db_size():
        _, st = c.etcd.first(c.master_eps, "/v3/maintenance/status", {})
        return int(st.get("dbSize", 0))

    t0 = time.monotonic()
    while db_size() < mib << 20:
        threads = [threading.Thread(target=put_share, args=(k, nxt[0] + 128)) for k in range(writers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert not errors, "the fill failed: %s" % errors[:3]
    size = db_size()
    log("FIGURES fill: %d MiB of values in %.0f s (%d writers): the database is %.0f MiB" % (
        nxt[0] // 2, time.monotonic() - t0, writers, size / 2**20))
    return size


def stop_etcd(c, node):
    """The disaster: etcd stops on `node` (its manifest gone, as when a machine's disk fails)."""
    root = c.node_root(node)
    os.makedirs(os.path.join(root, "disaster"), exist_ok=True)
    shutil.move(os.path.join(root, "etc/kubernetes/manifests/etcd-pod.yaml"),
                os.path.join(root, "disaster/etcd-pod.yaml"))


def scenario_quorum_loss(env, c, watcher, writer):
    hosts = {"<backup-host>": "master-0", "<recovery-host>": "master-1", "<other-host>": ["master-0", "master-2"],
             "<bucket>": S3_BUCKET, "<prefix>": DR_S3_PREFIX}
    roots = {m: c.node_root(m) for m in c.masters}
    env.kubectl("create", "namespace", NS)
    # The S3-compatible store the backup goes to, and its credentials directory where the
    # runbooks expect the admin's copy of it (on the backup host and the recovery host).
    endpoint = start_s3_peer(env)
    for m in ("master-0", "master-1"):
        creds = os.path.join(roots[m], "home/core/assets/s3")
        os.makedirs(creds, exist_ok=True)
        for k, v in (("accessKeyID", S3_AK), ("secretAccessKey", S3_SK), ("region", "us-east-1"),
                     ("endpoint", endpoint), ("s3ForcePathStyle", "true"), ("insecureHTTP", "true"),
                     ("backupKey", "e2e-dr-clusters-backup-key-0123456789abcdef")):
            with open(os.path.join(creds, k), "w") as f:
                f.write(v)
    configmap(env, "before-backup", at="before")
    old_id = cluster_id(c)

    # A backup while an operator is Progressing is refused, and taken with --force, marked.
    env.kubectl("patch", "clusteroperator", "kube-scheduler", "--subresource=status", "--type=json", "-p",
                json.dumps([{"op": "replace", "path": "/status/conditions/1/status", "value": "True"}]))
    dirty = "/home/core/assets/dirty"
    r = node_sh(c, "master-0", "sudo -E /usr/local/bin/cluster-backup.sh %s" % dirty)
    assert r.returncode == 1 and "clusteroperator/kube-scheduler Progressing=True" in r.stderr, r.stderr
    assert not os.path.exists(os.path.join(roots["master-0"], dirty.lstrip("/"))) or \
        not os.listdir(os.path.join(roots["master-0"], dirty.lstrip("/")))
    r = node_sh(c, "master-0", "sudo -E /usr/local/bin/cluster-backup.sh --force %s" % dirty)
    assert r.returncode == 0, r.stderr
    marked = sorted(os.listdir(os.path.join(roots["master-0"], dirty.lstrip("/"))))
    assert len(marked) == 3 and all("__POSSIBLY_DIRTY__" in f for f in marked), marked
    env.kubectl("patch", "clusteroperator", "kube-scheduler", "--subresource=status", "--type=json", "-p",
                json.dumps([{"op": "replace", "path": "/status/conditions/1/status", "value": "False"}]))
    log("backup while Progressing: refused; with --force: %s" % marked)
    # After DIR only cluster-backup's --s3-... flags pass through.
    r = node_sh(c, "master-0", "sudo -E /usr/local/bin/cluster-backup.sh /home/core/assets/x --endpoints=e")
    assert r.returncode == 1 and "only --s3-... flags may follow DIR" in r.stderr, r.stderr

    # A database of at least E2E_DR_FILL_MB MiB for the restore and the learners that join
    # it (issue 13: at least 1 GB; e2e/dr sets 1024, bench/dr-bench.sh --e2e 200).
    fill_mb = int(os.environ.get("E2E_DR_FILL_MB", "0"))
    if fill_mb:
        fill(c, fill_mb)
    acked_before = list(writer.acked)
    Runbook(env, "backup.md", hosts, roots).run()
    backup = os.path.join(roots["master-0"], "home/core/assets/backup")
    files = sorted(os.listdir(backup))
    log("backup: %s" % files)
    assert [f.split("_")[0] for f in files] == ["checksums", "snapshot", "static"], files
    assert "__POSSIBLY_DIRTY__" not in files[1]
    # The backup the runbook's step 3 kept in the store, as the AWS SDK reads it.
    uploaded = os.path.join(roots["master-0"], "home/core/assets/backup-s3")
    up_files = sorted(os.listdir(uploaded))
    assert len(up_files) == 3 and up_files[1].startswith("snapshot_"), up_files
    objects = sorted(o["key"] for o in sdk(endpoint, "list", DR_S3_PREFIX + "/"))
    log("in the store: %s" % objects)
    assert len(objects) == 3 and any(o.startswith(DR_S3_PREFIX + "/v2/Full-") for o in objects) and \
        any(o.startswith(DR_S3_PREFIX + "/checksums/Full-") for o in objects), objects
    rv_after = configmap(env, "after-backup", at="after")
    log("after-backup written at resourceVersion %s" % rv_after)

    # The disaster. The recovery host gets the backup from the store (the runbook's step 1).
    stop_actors(watcher)
    assert not watcher.violations, "invariants broken before the disaster: %s" % watcher.violations[:5]
    for m in ("master-0", "master-2"):
        stop_etcd(c, m)
    wait_for("quorum lost", lambda: not c.etcd.healthy("https://%s:2379" % c.master_ips["master-1"]), 60)
    log("quorum lost: etcd stopped on master-0 and master-2")

    t0 = time.monotonic()
    watcher2 = Watcher(c.client(), c.endpoints, two_voter_restarts=True)  # the runbook's override
    c.threads.append(watcher2)
    try:
        book = Runbook(env, "restore-after-quorum-loss.md", hosts, roots)
        book.run(last=1)  # the backup fetched from the store to the recovery host
        fetched = os.path.join(roots["master-1"], "home/core/assets/backup")
        assert sorted(os.listdir(fetched)) == up_files, (os.listdir(fetched), up_files)
        assert sha256(os.path.join(fetched, up_files[1])) == sha256(os.path.join(uploaded, up_files[1]))
        log("master-1 has the stored backup: %s, the snapshot byte for byte" % up_files)
        book.run(first=2, last=3)  # etcd stopped everywhere
        t_restore = time.time()
        book.run(first=4, last=4)  # the restore pod in place
        # Watched from here: before, master-1 still answered with the old membership,
        # without quorum (the disaster, not something the restore did).
        start_actors(watcher2)
        book.run(first=5, last=5)  # the API answers
        # The restored etcd killed right after the restore: its pod brings it back by itself.
        pid = c.container_pid("master-1", "etcd")
        os.kill(pid, signal.SIGKILL)
        log("killed the restored etcd (shim pid %d)" % pid)
        wait_for("the restored etcd back", lambda: c.container_pid("master-1", "etcd") not in (None, pid) and
                 c.etcd.healthy("https://%s:2379" % c.master_ips["master-1"]), 120)
        log("the restored etcd is back")
        book.run(first=6)
    finally:
        stop_actors(watcher2, writer)
    log("runbook done in %.0f s" % (time.monotonic() - t0))

    # One member with a new cluster ID first, then three voters, one change at a time.
    check_scale_out(c, watcher2, "master-1")
    learner_figures(c, watcher2)
    three = [t for t, shape, _ in watcher2.history if shape == [(m, False) for m in c.masters]]
    log("FIGURES restore to three voters: %.0f s from the restore's start (runbook step 3)%s" % (
        three[0] - t_restore if three else -1, " with a database of at least %d MiB" % fill_mb if fill_mb else ""))
    new_id = cluster_id(c)
    assert new_id != old_id, "the cluster ID did not change (%s)" % old_id

    # The data: as of the backup.
    assert env.get_json("configmap", "-n", NS, "before-backup") is not None
    assert env.get_json("configmap", "-n", NS, "after-backup") is None, "an object created after the backup survived"
    lost = [k for k in acked_before if c.etcd.get(c.master_eps, k) is None]
    assert not lost, "writes acknowledged before the backup are gone: %s" % lost[:5]
    log("data as of the backup: %d writes acknowledged before it all present" % len(acked_before))

    # Clients that saw the old revisions relist.
    bump = json.load(open(os.path.join(roots["master-1"], "var/lib/etcd/member/revision-bump.json")))
    log("revision bump on master-1: %s" % bump)
    assert bump["path"] in ("writes", "etcdutl"), bump
    answer = watch_from(env, rv_after)
    log("a watch from resourceVersion %s: %s" % (rv_after, answer[:300]))
    assert '"code":410' in answer.replace(" ", ""), answer

    # Nothing deleted.
    m1 = os.listdir(os.path.join(roots["master-1"], "var/lib/etcd-backup"))
    assert "member" in m1, m1
    for m in ("master-0", "master-2"):
        archived = [f for f in os.listdir(os.path.join(roots[m], "var/lib/etcd"))
                    if f.startswith("member-removed-archive-")]
        assert archived, "%s: the old member was not archived: %s" % (m, os.listdir(os.path.join(roots[m],
                                                                                            "var/lib/etcd")))
    c.wait_settled(180)
    assert settled(env.get_json("co", "etcd"))


def scenario_quorum_restore(env, c, watcher, writer):
    """quorum-restore.md: two masters lose their data dirs; the survivor's data
    becomes the cluster; nothing it had is lost."""
    hosts = {"<recovery-host>": "master-1"}
    roots = {m: c.node_root(m) for m in c.masters}
    env.kubectl("create", "namespace", NS)
    configmap(env, "before-disaster", at="before")
    # Every write acknowledged so far is on master-1 too once the writer stops and it caught up.
    stop_actors(writer, watcher)
    assert not watcher.violations, "invariants broken before the disaster: %s" % watcher.violations[:5]
    acked = list(writer.acked)
    m1 = "https://%s:2379" % c.master_ips["master-1"]
    wait_caught_up(c)
    rv = env.get_json("configmap", "-n", NS, "before-disaster")["metadata"]["resourceVersion"]

    # The disaster: master-0 and master-2 lose etcd and its data.
    for m in ("master-0", "master-2"):
        stop_etcd(c, m)
    for m in ("master-0", "master-2"):
        wait_for("etcd gone on %s" % m, lambda: c.container_pid(m, "etcd") is None, 60)
        shutil.move(os.path.join(roots[m], "var/lib/etcd"), os.path.join(roots[m], "disaster/etcd-data"))
    wait_for("quorum lost", lambda: not c.etcd.healthy(m1), 60)
    log("quorum lost: master-0 and master-2 lost their etcd data")

    t0 = time.monotonic()
    watcher2 = Watcher(c.client(), c.endpoints, two_voter_restarts=True)  # the runbook's override
    c.threads.append(watcher2)
    try:
        book = Runbook(env, "quorum-restore.md", hosts, roots)
        book.run(last=1)  # the quorum-restore pod in place of master-1's etcd
        # Watched from here: before, master-1 answered with the old membership, without quorum.
        start_actors(watcher2)
        book.run(first=2)
    finally:
        stop_actors(watcher2)
    log("runbook done in %.0f s" % (time.monotonic() - t0))

    check_scale_out(c, watcher2, "master-1")

    lost = [k for k in acked if c.etcd.get(c.master_eps, k) is None]
    assert not lost, "writes the survivor had are gone: %s" % lost[:5]
    assert env.get_json("configmap", "-n", NS, "before-disaster") is not None
    log("nothing lost: %d acknowledged writes present" % len(acked))
    bump = json.load(open(os.path.join(roots["master-1"], "var/lib/etcd/member/revision-bump.json")))
    log("revision bump on master-1: %s" % bump)
    assert bump["path"] == "writes", bump
    answer = watch_from(env, rv)
    log("a watch from resourceVersion %s: %s" % (rv, answer[:300]))
    assert '"code":410' in answer.replace(" ", ""), answer
    copies = [f for f in os.listdir(os.path.join(roots["master-1"], "var/lib/etcd-backup"))
              if f.startswith("member-before-quorum-restore-")]
    assert len(copies) == 1, copies
    c.wait_settled(180)


def wait_caught_up(c):
    """Until every member is at the same revision: each has every acknowledged write."""
    def caught_up():
        revs = set()
        for ep in c.master_eps:
            _, st = c.etcd.first([ep], "/v3/maintenance/status", {})
            revs.add(st["header"]["revision"])
        return len(revs) == 1
    wait_for("every member at the same revision", caught_up, 60)


def scenario_cluster_moved(env, c, watcher, writer):
    """cluster-moved.md: every master comes back with another address at once; the API is
    gone until the runbook's quorum restore on master-1's new address; then the operator
    moves the rest by itself. Nothing acknowledged is lost, no old data deleted."""
    roots = {m: c.node_root(m) for m in c.masters}
    hosts = {"<each-master>": list(c.masters), "<recovery-host>": "master-1"}
    env.kubectl("create", "namespace", NS)
    configmap(env, "before-move", at="before")
    stop_actors(writer, watcher)
    assert not watcher.violations, "invariants broken before the move: %s" % watcher.violations[:5]
    acked = list(writer.acked)
    wait_caught_up(c)
    before = {m: c.data_dir_entries(m) for m in c.masters}

    # Every master goes down and comes back on a new address; the old ones are nobody's.
    old = dict(c.master_ips)
    new = {m: env.ip(30 + i) for i, m in enumerate(c.masters)}
    for m in c.masters:
        env.stop_kubelet(m)
    for m in c.masters:
        take_address_away(env, old[m])
        c.move_master(m, new[m])
    for m in c.masters:
        env.start_kubelet(m, new[m], master=True)
    log("every master is back on a new address: %s" % ", ".join("%s %s -> %s" % (m, old[m], new[m])
                                                              for m in c.masters))
    wait_for("the API to stop answering", lambda: env.get_json("etcd", "cluster") is None, 120)
    t0 = time.monotonic()
    watcher2 = Watcher(c.client(), c.endpoints, two_voter_restarts=True)  # the runbook's override
    c.threads.append(watcher2)
    try:
        book = Runbook(env, "cluster-moved.md", hosts, roots)
        out = book.run(last=len(c.masters) + 1)  # revision.json on each master, then the restore
        assert all('"raftIndex"' in o for o in out[:len(c.masters)]), out
        start_actors(watcher2)
        out = book.run(first=len(c.masters) + 2)
    finally:
        stop_actors(watcher2)
    log("runbook done in %.0f s" % (time.monotonic() - t0))
    check_scale_out(c, watcher2, "master-1")

    members = c.etcd.members(c.master_eps)
    for m in members:
        ip = new[m["name"]]
        assert m["peerURLs"] == ["https://%s:2380" % ip] and m["clientURLs"] == ["https://%s:2379" % ip], m
    assert all(ip not in out[-1] for ip in old.values()) and all(ip in out[-1] for ip in new.values()), \
        "etcd-endpoints after the runbook: %s" % out[-1]
    lost = [k for k in acked if c.etcd.get(c.master_eps, k) is None]
    assert not lost, "acknowledged writes lost: %s" % lost[:5]
    assert env.get_json("configmap", "-n", NS, "before-move") is not None
    copies = [f for f in os.listdir(os.path.join(roots["master-1"], "var/lib/etcd-backup"))
              if f.startswith("member-before-quorum-restore-")]
    assert copies, "master-1's member dir was not copied aside"
    for m in ("master-0", "master-2"):
        c.check_data_archived(m, before[m])
    c.wait_settled(180)
    c.check_endpoints()
    log("every member on its new address, %d acknowledged writes present" % len(acked))


def scenario_single_member(env, c, watcher, writer):
    """restore-single-member.md: master-1's member removed from a healthy
    cluster and restored alone; the quorum kept everything, so objects
    created after the backup survive, and quorum is never lost."""
    hosts = {"<healthy-host>": "master-0", "<unhealthy-host>": "master-1"}
    roots = {m: c.node_root(m) for m in c.masters}
    m1 = roots["master-1"]
    env.kubectl("create", "namespace", NS)
    configmap(env, "before-backup", at="before")
    old_id = cluster_id(c)
    old_m1 = [m for m in c.etcd.members(c.master_eps) if m.get("name") == "master-1"][0]["ID"]

    # The disaster: master-1's database damaged (both bbolt meta pages, so etcd cannot open
    # it) while its etcd is stopped; started again, it crash-loops, and EtcdMembersDegraded
    # names it with etcd's own panic.
    since = time.time()
    damaged = damage(c, "master-1")
    db = os.path.join(m1, "var/lib/etcd/member/snap/db")

    def degraded():
        conds = (env.get_json("etcd", "cluster") or {}).get("status", {}).get("conditions", [])
        msg = next((x.get("message", "") for x in conds if x["type"] == "EtcdMembersDegraded" and
                    x["status"] == "True"), "")
        return msg if "master-1" in msg and "panic: failed to open database" in msg else None
    log("EtcdMembersDegraded: %s" % wait_for("EtcdMembersDegraded to name master-1's damaged database",
                                             degraded, 120))

    book = Runbook(env, "restore-single-member.md", hosts, roots)
    out = book.run(last=2)  # the members' state, a backup on master-0
    assert "master-1 is unhealthy" in out[0] and "panic: failed to open database" in out[0], out[0]
    backup = os.path.join(roots["master-0"], "home/core/assets/backup")
    shutil.copytree(backup, os.path.join(m1, "home/core/assets/backup"))  # the copy step 2 asks for
    configmap(env, "after-backup", at="after")

    t0 = time.monotonic()
    book.run(first=3, last=3)  # etcd stopped on master-1
    assert hashlib.sha256(open(db, "rb").read()).hexdigest() == damaged
    book.run(first=4)  # removed, restored in place, back as a learner, promoted, settled
    stop_actors(watcher, writer)
    log("runbook done in %.0f s" % (time.monotonic() - t0))

    # master-1 removed (the unhealthy voter itself), then added as a new learner
    # and promoted: one change at a time, quorum never lost (the watcher ran throughout).
    shapes = [h[1] for h in watcher.history if h[0] >= since]
    log("membership since the damage: %s" % shapes)
    gone = [("master-0", False), ("master-2", False)]
    assert gone in shapes, shapes
    after = shapes[shapes.index(gone):]
    assert [("(unstarted)", True), ("master-0", False), ("master-2", False)] in after, after
    assert after[-1] == [(m, False) for m in c.masters], after
    assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
    new_m1 = [m for m in c.etcd.members(c.master_eps) if m.get("name") == "master-1"][0]["ID"]
    assert new_m1 != old_m1 and cluster_id(c) == old_id, (old_m1, new_m1)
    log("master-1 is back as a new member (%s, was %s) of the same cluster" % (new_m1, old_m1))

    # The quorum kept everything: objects created after the backup and every acknowledged write.
    assert env.get_json("configmap", "-n", NS, "before-backup") is not None
    assert env.get_json("configmap", "-n", NS, "after-backup") is not None, "the quorum's data was lost"
    lost = [k for k in writer.acked if c.etcd.get(c.master_eps, k) is None]
    assert not lost, "acknowledged writes are gone: %s" % lost[:5]
    log("nothing lost: %d acknowledged writes, the object created after the backup" % len(writer.acked))

    # Nothing deleted: the damaged member moved to /var/lib/etcd-backup as it was, the restored one archived.
    kept = os.path.join(m1, "var/lib/etcd-backup/member/snap/db")
    assert hashlib.sha256(open(kept, "rb").read()).hexdigest() == damaged
    archived = [f for f in os.listdir(os.path.join(m1, "var/lib/etcd")) if f.startswith("member-removed-archive-")]
    assert len(archived) == 1, os.listdir(os.path.join(m1, "var/lib/etcd"))
    c.wait_settled(180)
    assert settled(env.get_json("co", "etcd"))


def damage(c, node):
    """Stops etcd on `node`, damages both bbolt meta pages of its database (etcd then
    cannot open it) and starts it again; returns the damaged file's SHA-256."""
    root = c.node_root(node)
    stop_etcd(c, node)
    wait_for("etcd gone on %s" % node, lambda: c.container_pid(node, "etcd") is None, 60)
    db = os.path.join(root, "var/lib/etcd/member/snap/db")
    with open(db, "r+b") as f:
        f.write(b"\xde\xad" * 4096)
    digest = hashlib.sha256(open(db, "rb").read()).hexdigest()
    shutil.move(os.path.join(root, "disaster/etcd-pod.yaml"), os.path.join(root, "etc/kubernetes/manifests/etcd-pod.yaml"))
    return digest


def scenario_damaged_member(env, c, watcher, writer):
    """The opt-in automatic form of restore-single-member.md (etcds/cluster
    unsupportedConfigOverrides.replaceDamagedMembers): master-2's database damaged, its
    etcd crash-loops saying so; the operator removes it (the two left are healthy), its
    discover moves the damaged data aside, and it rejoins empty as a new member. No
    human step; nothing lost; the damaged file kept byte for byte."""
    node = "master-2"
    root = c.node_root(node)
    env.kubectl("create", "namespace", NS)
    configmap(env, "before-damage", at="before")
    old_id = cluster_id(c)
    old = [m for m in c.etcd.members(c.master_eps) if m.get("name") == node][0]["ID"]
    env.kubectl("patch", "etcd", "cluster", "--type=merge", "-p",
                json.dumps({"spec": {"unsupportedConfigOverrides": {"replaceDamagedMembers": True}}}))
    before = set(os.listdir(os.path.join(root, "var/lib/etcd")))
    t0 = time.monotonic()
    digest = damage(c, node)
    log("%s's database damaged and its etcd started again" % node)

    m = c.wait_member_back(node, old, watcher)
    log("%s is back as %x, %.0f s after the damage, with no human step" % (node, int(m["ID"]),
                                                                        time.monotonic() - t0))
    stop_actors(watcher, writer)
    assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
    assert cluster_id(c) == old_id
    # Written beside the removal, and sent again while the API answers 5xx (about a minute).
    ev = wait_for("the DamagedMemberRemoved event",
                  lambda: env.get_json("events", "-n", "openshift-etcd-operator", "--field-selector",
                                       "reason=DamagedMemberRemoved")["items"], 90, interval=3)
    assert "failed to open database" in ev[0]["message"], ev
    log("event: %s" % ev[0]["message"])
    archived = [d for d in os.listdir(os.path.join(root, "var/lib/etcd"))
                if d.startswith("member-removed-archive-") and d not in before]
    assert len(archived) == 1, os.listdir(os.path.join(root, "var/lib/etcd"))
    kept = os.path.join(root, "var/lib/etcd", archived[0], "snap/db")
    assert hashlib.sha256(open(kept, "rb").read()).hexdigest() == digest, "the damaged data was not kept as it was"
    assert env.get_json("configmap", "-n", NS, "before-damage") is not None
    lost = [k for k in writer.acked if c.etcd.get(c.master_eps, k) is None]
    assert not lost, "acknowledged writes are gone: %s" % lost[:5]
    log("nothing lost: %d acknowledged writes; the damaged data is in %s" % (len(writer.acked), archived[0]))
    env.kubectl("patch", "etcd", "cluster", "--type=merge", "-p",
                json.dumps({"spec": {"unsupportedConfigOverrides": {"replaceDamagedMembers": None}}}))
    c.wait_settled(180)


SCENARIOS = {"cluster-moved": scenario_cluster_moved,
             "quorum-loss": scenario_quorum_loss, "quorum-restore": scenario_quorum_restore,
             "single-member": scenario_single_member, "damaged-member": scenario_damaged_member}


def set_aside_backups(c, name):
    """Between two scenarios on one cluster: the last scenario's backups are moved out of
    the way (the runbooks write to /home/core/assets/backup), as an admin keeps them."""
    for m in c.masters:
        d = os.path.join(c.node_root(m), "home/core/assets/backup")
        if os.path.exists(d):
            shutil.move(d, "%s-before-%s" % (d, name))


def release_checked_data(c):
    """Between two scenarios, once the last one checked them: what the product kept aside
    (archived member dirs, copies made before a quorum restore, damaged data moved to
    /var/lib/etcd-backup, the backups set aside) is deleted by the test. The cluster lives
    in /dev/shm, and with a database of 1 GiB each copy is as large: five scenarios' worth
    filled the machine's memory (18 GB) and stalled everything on it."""
    freed = 0
    for m in c.masters:
        root = c.node_root(m)
        doomed = [os.path.join(root, "var/lib/etcd", d) for d in os.listdir(os.path.join(root, "var/lib/etcd"))
                  if d.startswith("member-removed-archive-")]
        backup = os.path.join(root, "var/lib/etcd-backup")
        if os.path.isdir(backup):
            doomed += [os.path.join(backup, d) for d in os.listdir(backup)]
        assets = os.path.join(root, "home/core/assets")
        if os.path.isdir(assets):
            doomed += [os.path.join(assets, d) for d in os.listdir(assets) if d.startswith("backup-before-")]
        for path in doomed:
            if os.path.isdir(path) and not os.path.islink(path):
                freed += tree_bytes(path)
                shutil.rmtree(path)
            else:
                freed += 0 if os.path.islink(path) else os.path.getsize(path)
                os.remove(path)
    log("released what the last scenario kept aside and checked: %.0f MB" % (freed / 1e6))


def main():
    """test_dr.py BUILD_DIR SCENARIO...: the scenarios in turn on one cluster, each
    starting from the settled cluster the last one left (its own namespace, fresh
    writer and watcher)."""
    global NS
    build, names = sys.argv[1], sys.argv[2:]
    unknown = [n for n in names if n not in SCENARIOS]
    if not names or unknown:
        sys.exit("usage: test_dr.py BUILD_DIR SCENARIO... (of %s)" % ", ".join(SCENARIOS))
    t0 = time.monotonic()
    with Env(build) as env:
        c = Cluster(env)
        c.threads = []  # stopped however the scenario ends, before Env stops the processes
        try:
            watcher, writer = bootstrap(c)
            log("bootstrap done in %.0f s" % (time.monotonic() - t0))
            for i, name in enumerate(names):
                if i:
                    c.wait_at_latest(240)
                    set_aside_backups(c, name)
                    release_checked_data(c)
                    watcher, writer = c.actors()
                    c.threads += [watcher, writer]
                    start_actors(watcher, writer)
                NS = "dr-" + name
                t1 = time.monotonic()
                log("scenario %s" % name)
                SCENARIOS[name](env, c, watcher, writer)
                log("scenario %s done in %.0f s" % (name, time.monotonic() - t1))
        finally:
            stop_actors(*c.threads)
        log("ok (%.0f s)" % (time.monotonic() - t0))


if __name__ == "__main__":
    main()
