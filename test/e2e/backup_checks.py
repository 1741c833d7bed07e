"""One backup now (EtcdBackup -> Job), on a settled cluster, checked with kubectl
(issue 14 section 3). Shared by the e2e tests that end on a settled cluster, so it
needs no bootstrap of its own:

- a claim bound to a hostPath volume; an EtcdBackup naming it becomes Job
  cluster-backup-<name> in openshift-etcd; its pod runs on a master (verify
  backup-storage, then cluster-backup) and the EtcdBackup ends BackupCompleted
  with status.backupJob set; the snapshot and the static resources archive are
  in backup-<name>-<timestamp>/ on the claim's volume, the snapshot a database
  etcd itself can read (its hash checked by cluster-backup while it streamed);
- an EtcdBackup naming a claim that does not exist ends BackupFailed at once,
  naming the claim, and no Job is made;
- two EtcdBackups at once: never two Jobs at a time (the second skipped, or
  run after the first is complete);
- both are labelled state=processed, as are their Jobs;
- an EtcdBackup whose store's name does not resolve fails, its condition
  naming the host in the backup Job's own words;
- the one-line view docs/backup.md gives a cluster-admin (kubectl's custom
  columns: the CRD has no printer columns of its own) shows each one's claim,
  state and Job;
- a Backup scheduled every minute, with an S3 store (test/s3's peer, which
  checks every signature): its CronJob's Job asks for one backup (an
  EtcdBackup named after the Job, owned by it, the store passed on), which
  completes; the store holds the snapshot, byte for byte the one on the
  claim, and its tarball, as the AWS SDK reads them; deleting the Backup
  deletes the CronJob at once, keeps the objects for the grace period, then
  a purge Job deletes them and the Backup goes."""
import calendar
import glob
import json
import os
import re
import shlex
import subprocess
import time
import hashlib

from e2e import ROOT, log, wait_for

NS = "openshift-etcd"


def condition(obj, t):
    for c in (obj or {}).get("status", {}).get("conditions", []):
        if c.get("type") == t:
            return c
    return None


def check_one_line_view(env):
    """Runs the `kubectl get etcdbackups -o custom-columns=...` command of docs/backup.md as
    it is written there and checks its rows."""
    doc = open(os.path.join(ROOT, "docs", "backup.md")).read()
    cmd = [line for line in doc.splitlines() if line.startswith("kubectl get etcdbackups -o custom-columns=")]
    assert len(cmd) == 1, "docs/backup.md: expected one one-line view command, found %d" % len(cmd)
    args = shlex.split(cmd[0])[1:]
    out = env.kubectl(*args).stdout
    log("docs/backup.md's one-line view:\n%s" % out.rstrip())
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "CLAIM", "STATE", "JOB", "SINCE"], lines[0]
    rows = {r.split()[0]: r.split() for r in lines[1:]}
    a, missing = rows.get("e2e-backup-a"), rows.get("e2e-no-claim")
    assert a and a[1:4] == ["etcd-backups", "BackupCompleted", "cluster-backup-e2e-backup-a"], a
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", a[4]), a
    assert missing and missing[1:4] == ["no-such-claim", "BackupFailed", "<none>"], missing


def check_etcd_backups(env, c):
    t0 = time.monotonic()
    c.install_control_plane_fixture()  # the static pods a backup archives, as on a real master
    for obj in ({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "etcd-backups"},
                 "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                          "hostPath": {"path": "/var/lib/etcd-backups", "type": "DirectoryOrCreate"}}},
                {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                 "metadata": {"name": "etcd-backups", "namespace": NS},
                 "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                          "storageClassName": ""}}):
        env.kubectl("apply", "-f", "-", input=json.dumps(obj))
    wait_for("the claim bound", lambda: (env.get_json("pvc", "-n", NS, "etcd-backups") or {})
             .get("status", {}).get("phase") == "Bound", 60)

    def backup(name, pvc):
        env.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "operator.openshift.io/v1alpha1", "kind": "EtcdBackup", "metadata": {"name": name},
            "spec": {"pvcName": pvc}}))

    def ended(name):
        def f():
            b = env.get_json("etcdbackup", name)
            for t in ("BackupCompleted", "BackupFailed", "BackupSkipped"):
                cond = condition(b, t)
                if cond and cond["status"] == "True":
                    return b
            return None
        return f

    # A missing claim: failed at once, no Job.
    backup("e2e-no-claim", "no-such-claim")
    b = wait_for("e2e-no-claim to end", ended("e2e-no-claim"), 60)
    cond = condition(b, "BackupFailed")
    log("e2e-no-claim: %s" % cond)
    assert cond and cond["status"] == "True" and "no-such-claim" in cond["message"], b.get("status")
    assert env.get_json("job", "-n", NS, "cluster-backup-e2e-no-claim") is None

    # Two at once: never two backup Jobs at a time. Both in the operator's cache at one sync,
    # the second is skipped; when it arrives while the first runs, it waits and runs after.
    env.kubectl("apply", "-f", "-", input="\n".join(json.dumps({
        "apiVersion": "operator.openshift.io/v1alpha1", "kind": "EtcdBackup", "metadata": {"name": n},
        "spec": {"pvcName": "etcd-backups"}}) for n in ("e2e-backup-a", "e2e-backup-b")))
    a = wait_for("e2e-backup-a to end", ended("e2e-backup-a"), 240)
    b = wait_for("e2e-backup-b to end", ended("e2e-backup-b"), 240)
    job = env.get_json("job", "-n", NS, "cluster-backup-e2e-backup-a")
    log("e2e-backup-a: %s; job: %s" % (a.get("status"), job and job.get("status")))
    if not condition(a, "BackupCompleted") or condition(a, "BackupCompleted")["status"] != "True":
        for log_file in glob.glob(os.path.join(c.node_root("*"), "var/log/pods/%s_cluster-backup-e2e-backup-a-*"
                                               % NS, "*", "*.log")):
            log("%s: %s" % (log_file, open(log_file).read()[-2000:]))
        raise AssertionError("e2e-backup-a did not complete: %s" % a.get("status"))
    assert a["status"]["backupJob"] == {"namespace": NS, "name": "cluster-backup-e2e-backup-a"}, a["status"]
    skipped = condition(b, "BackupSkipped")
    if skipped and skipped["status"] == "True":
        assert "e2e-backup-a" in skipped["message"], b.get("status")
        assert env.get_json("job", "-n", NS, "cluster-backup-e2e-backup-b") is None
        log("e2e-backup-b: skipped (%s)" % skipped["message"])
    else:
        job_b = env.get_json("job", "-n", NS, "cluster-backup-e2e-backup-b")
        done_a = [x["lastTransitionTime"] for x in job["status"]["conditions"] if x["type"] == "Complete"]
        log("e2e-backup-b: ran after e2e-backup-a (created %s, a complete %s): %s" % (
            job_b["metadata"]["creationTimestamp"], done_a, b.get("status")))
        assert done_a and job_b["metadata"]["creationTimestamp"] >= done_a[0], (job_b["metadata"], done_a)
    for name in ("e2e-no-claim", "e2e-backup-a", "e2e-backup-b"):
        wait_for("%s labelled processed" % name, lambda: env.get_json("etcdbackup", name)["metadata"]
                 .get("labels", {}).get("state") == "processed", 30)
    wait_for("the job labelled processed", lambda: env.get_json("job", "-n", NS, "cluster-backup-e2e-backup-a")
             ["metadata"].get("labels", {}).get("state") == "processed", 30)
    check_one_line_view(env)

    # The files, on the node the pod ran on.
    pod = [p for p in env.get_json("pods", "-n", NS, "-l", "backup-name=e2e-backup-a")["items"]]
    assert len(pod) == 1, [p["metadata"]["name"] for p in pod]
    node = pod[0]["spec"]["nodeName"]
    dirs = glob.glob(os.path.join(c.node_root(node), "var/lib/etcd-backups/backup-e2e-backup-a-*"))
    assert len(dirs) == 1, dirs
    files = sorted(os.listdir(dirs[0]))
    log("backup on %s: %s %s" % (node, os.path.basename(dirs[0]), files))
    assert len(files) == 3 and files[0].startswith("checksums_") and files[0].endswith(".json") and \
        files[1].startswith("snapshot_") and files[1].endswith(".db") and \
        files[2].startswith("static_kuberesources_") and files[2].endswith(".tar.gz"), files
    snap = os.path.join(dirs[0], files[1])
    assert os.path.getsize(snap) > 0
    # etcd's own tool reads it (cluster-backup checked the hash etcd appends while it streamed).
    r = subprocess.run(["etcdctl", "snapshot", "status", snap, "-w", "json"], capture_output=True, text=True,
                       env=dict(os.environ, ETCDCTL_API="3"))
    log("etcdctl snapshot status: %s" % (r.stdout.strip() or r.stderr.strip()))
    assert r.returncode == 0 and json.loads(r.stdout)["totalKey"] > 0, r.stderr

    # Seen from outside: the operator's /metrics says when the newest backup completed.
    done = calendar.timegm(time.strptime(condition(a, "BackupCompleted")["lastTransitionTime"],
                                         "%Y-%m-%dT%H:%M:%SZ"))

    def last_backup():
        text = c.operator_metrics()
        m = re.search(r"^openshift_etcd_operator_last_backup_timestamp_seconds (\S+)$", text, re.M)
        signer = re.search(r'^openshift_etcd_operator_signer_expiration_days\{name="signer-ca"\} (\S+)$',
                           text, re.M)
        return (float(m.group(1)), float(signer.group(1))) if m and signer else None
    seen, signer_days = wait_for("the last-backup metric", last_backup, 30)
    log("metrics: last backup at %.0f (e2e-backup-a completed at %d), signer-ca (etcd-signer) expires in %.0f days"
        % (seen, done, signer_days))
    assert done <= seen <= time.time() + 1, (done, seen)
    assert signer_days > 300, signer_days

    # A store whose name does not resolve (.invalid never does): the EtcdBackup fails, and its
    # condition says why in the Job's own words, naming the host (issue 13: a name that stops
    # resolving is named in a condition).
    env.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "e2e-s3-unresolvable", "namespace": NS},
        "stringData": {"accessKeyID": S3_AK, "secretAccessKey": S3_SK, "region": "us-east-1",
                       "endpoint": "https://no-such-store.invalid:9000", "s3ForcePathStyle": "true",
                       "backupKey": S3_BACKUP_KEY}}))
    env.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "operator.openshift.io/v1alpha1", "kind": "EtcdBackup", "metadata": {
            "name": "e2e-unresolvable-store", "annotations": {
                "etcd.operator.openshift.io/s3-secret": "e2e-s3-unresolvable",
                "etcd.operator.openshift.io/s3-bucket": S3_BUCKET,
                "etcd.operator.openshift.io/s3-prefix": S3_PREFIX}},
        "spec": {"pvcName": "etcd-backups"}}))
    b = wait_for("e2e-unresolvable-store to end", ended("e2e-unresolvable-store"), 240)
    failed = condition(b, "BackupFailed")
    log("e2e-unresolvable-store: %s" % failed)
    assert failed and failed["status"] == "True", b.get("status")
    assert "no-such-store.invalid" in failed["message"] and "resolve" in failed["message"], failed
    log("backups checked in %.0f s" % (time.monotonic() - t0))
    check_scheduled_backups(env)


S3_AK, S3_SK, S3_BUCKET, S3_PREFIX = "AKIAE2EBACKUPS", "e2e/s3cr3t+key", "etcd-backups", "clusters/e2e"
S3_GRACE_S = 30
S3_BACKUP_KEY = "e2e-clusters-backup-key-0123456789abcdef"  # review M1: signs the checksum files


def start_s3_peer(env):
    """test/s3's S3 peer on the scenario's loopback block; its endpoint."""
    s3dir = os.path.join(ROOT, "test", "s3")
    assert os.path.isdir(os.path.join(s3dir, "node_modules", "s3rver")), \
        "test/s3/node_modules is missing: run hack/install-deps.sh (npm ci in test/s3)"
    env.spawn("s3-peer", ["node", "--openssl-legacy-provider", os.path.join(s3dir, "s3-peer.js"),
                          "--address", env.ip(200), "--port", "0", "--dir", os.path.join(env.dir, "s3-store"),
                          "--access-key", S3_AK, "--secret-key", S3_SK, "--bucket", S3_BUCKET,
                          "--log", os.path.join(env.dir, "s3-requests.log")])

    def listening():
        with open(os.path.join(env.dir, "s3-peer.log")) as f:
            m = re.search(r"^listening (\S+)$", f.read(), re.M)
        return m and m.group(1)
    return wait_for("the S3 peer", listening, 30)


def sdk(endpoint, *args):
    """The AWS SDK for JavaScript (test/s3/s3-client.js): an independent reader of the store."""
    r = subprocess.run(["node", os.path.join(ROOT, "test", "s3", "s3-client.js"), "--endpoint", endpoint,
                        "--region", "us-east-1", "--access-key", S3_AK, "--secret-key", S3_SK,
                        "--bucket", S3_BUCKET] + list(args), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, "SDK %s: %s %s" % (args, r.stdout, r.stderr)
    return [json.loads(ln) for ln in r.stdout.splitlines() if ln.strip()]


def check_scheduled_backups(env):
    """A Backup every minute, with an S3 store: its CronJob runs a Job whose pod prunes the
    claim and asks for one backup (an EtcdBackup named after the Job, owned by it, the store
    passed on), which completes, on the claim and in the store. Deleting the Backup deletes
    the CronJob at once; the store's objects go after the grace period, then the Backup."""
    t0 = time.monotonic()
    endpoint = start_s3_peer(env)
    env.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "e2e-s3", "namespace": NS},
        "stringData": {"accessKeyID": S3_AK, "secretAccessKey": S3_SK, "region": "us-east-1",
                       "endpoint": endpoint, "s3ForcePathStyle": "true", "insecureHTTP": "true",
                       "backupKey": S3_BACKUP_KEY}}))
    env.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "config.openshift.io/v1alpha1", "kind": "Backup", "metadata": {
            "name": "e2e-every-minute", "annotations": {
                "etcd.operator.openshift.io/s3-secret": "e2e-s3",
                "etcd.operator.openshift.io/s3-bucket": S3_BUCKET,
                "etcd.operator.openshift.io/s3-prefix": S3_PREFIX,
                "etcd.operator.openshift.io/s3-deletion-grace-period": "%ds" % S3_GRACE_S}},
        "spec": {"etcd": {"schedule": "* * * * *", "pvcName": "etcd-backups", "retentionPolicy": {
            "retentionType": "RetentionNumber", "retentionNumber": {"maxNumberOfBackups": 3}}}}}))
    cj = wait_for("cronjob e2e-every-minute", lambda: env.get_json("cronjob", "-n", NS, "e2e-every-minute"), 60)
    assert cj["spec"]["concurrencyPolicy"] == "Forbid" and cj["spec"]["schedule"] == "* * * * *", cj["spec"]
    log("cronjob %s/e2e-every-minute: %s" % (NS, cj["spec"]["schedule"]))

    def scheduled_backup():
        for b in env.get_json("etcdbackups")["items"]:
            refs = b["metadata"].get("ownerReferences") or []
            if refs and refs[0].get("kind") == "Job" and refs[0]["name"].startswith("e2e-every-minute-"):
                c = condition(b, "BackupCompleted")
                if c and c["status"] == "True":
                    return b
                failed = condition(b, "BackupFailed")
                assert not (failed and failed["status"] == "True"), b.get("status")
        return None
    b = wait_for("a scheduled backup to complete", scheduled_backup, 150)
    owner = b["metadata"]["ownerReferences"][0]
    assert b["metadata"]["name"] == owner["name"], (b["metadata"]["name"], owner)
    job = env.get_json("job", "-n", NS, owner["name"])
    assert job and job["metadata"]["uid"] == owner["uid"], (job and job["metadata"], owner)
    log("scheduled backup %s (owned by job %s) completed %.0f s after the Backup was made" % (
        b["metadata"]["name"], owner["name"], time.monotonic() - t0))
    assert b["metadata"]["annotations"]["etcd.operator.openshift.io/s3-prefix"] == S3_PREFIX, b["metadata"]
    assert "s3://%s/%s" % (S3_BUCKET, S3_PREFIX) in condition(b, "BackupCompleted")["message"], b["status"]
    backup = env.get_json("backup.config.openshift.io", "e2e-every-minute")
    assert "etcd.operator.openshift.io/s3-backups" in backup["metadata"].get("finalizers", []), backup["metadata"]

    # The store, read by the SDK: full snapshots named as etcd-backup-restore names them, each
    # with its tarball; the one this backup wrote is byte for byte the snapshot on the claim.
    objects = sdk(endpoint, "list", S3_PREFIX + "/")
    keys = [o["key"] for o in objects]
    fulls = [k for k in keys if re.match(r"^%s/v2/Full-00000000-\d{8}-\d+$" % S3_PREFIX, k)]
    assert fulls and all("%s/kuberesources/%s.tar.gz" % (S3_PREFIX, k.split("/")[-1]) in keys and
                         "%s/checksums/%s.json" % (S3_PREFIX, k.split("/")[-1]) in keys for k in fulls), keys
    local = glob.glob(os.path.join(env.dir, "nodes", "*", "var/lib/etcd-backups/backup-%s-*/snapshot_*.db"
                                   % b["metadata"]["name"]))
    assert len(local) == 1, local
    with open(local[0], "rb") as f:
        want = hashlib.sha256(f.read()).hexdigest()
    stored = {sdk(endpoint, "sha256", k)[0]["sha256"] for k in fulls}
    assert want in stored, (want, stored)
    log("store: %s, the claim's %s among them" % (keys, os.path.basename(local[0])))

    # Deleted: the CronJob goes at once, the objects stay for the grace period, then go.
    t_del = time.monotonic()
    env.kubectl("delete", "backup.config.openshift.io", "e2e-every-minute", "--wait=false")
    wait_for("the cronjob to go with its Backup",
             lambda: env.get_json("cronjob", "-n", NS, "e2e-every-minute") is None, 60)
    kept = env.get_json("backup.config.openshift.io", "e2e-every-minute")
    in_grace = time.monotonic() - t_del < S3_GRACE_S - 5
    if in_grace:
        assert kept and kept["metadata"].get("deletionTimestamp"), kept
        assert set(fulls) <= {o["key"] for o in sdk(endpoint, "list", S3_PREFIX + "/")}, "objects went early"
    wait_for("the deleted Backup's objects purged and the Backup gone",
             lambda: env.get_json("backup.config.openshift.io", "e2e-every-minute") is None, S3_GRACE_S + 120)
    took = time.monotonic() - t_del
    assert took >= S3_GRACE_S - 2, "the Backup went %.0f s after its deletion, within its grace period" % took
    left = sdk(endpoint, "list", S3_PREFIX + "/")
    assert left == [], left
    # The operator deletes the purge Job in the plan that lifts the Backup's finalizer; the Job
    # itself goes a moment later, once kube-controller-manager is done with it and its pod
    # (seconds on a loaded machine: redeploy beside frozen met it still there).
    wait_for("the purge job to go with its Backup",
             lambda: env.get_json("job", "-n", NS, "s3-purge-e2e-every-minute") is None, 60)
    log("deleted Backup: objects %s for the grace period, purged and the Backup gone %.0f s after the "
        "deletion" % ("kept" if in_grace else "(not checked: the cronjob went late)", took))
    with open(os.path.join(env.dir, "s3-requests.log")) as f:
        refused = [ln for ln in f.read().splitlines() if ln.split() and ln.split()[-1] not in ("signed",)
                   and not ln.startswith("stopped")]
    assert not refused, "the S3 peer refused requests: %s" % refused[:5]
