#!/usr/bin/env python3
"""`cluster-etcd-operator request-backup` (a scheduled backup's CronJob pod)
against kube-apiserver (run by with-kube.sh, which exports KUBECONFIG; the
control plane installs the etcdbackups CRD from manifests/crds): it creates the EtcdBackup
named after its Job and owned by it; a second run is success without a second
object; a missing job identity or a bad claim name is a usage error naming
what to set, and creates nothing. kubectl reads the result.
Usage: test_request_backup.py BINARY"""
import json
import os
import subprocess
import sys

BIN = sys.argv[1]


def run(env, *args):
    r = subprocess.run([BIN, "request-backup"] + list(args), capture_output=True, text=True, timeout=60,
                       env=dict(os.environ, **env))
    return r.returncode, r.stderr


def kubectl(*args):
    return subprocess.run(["kubectl", "--kubeconfig", os.environ["KUBECONFIG"]] + list(args),
                          capture_output=True, text=True, timeout=60)


def main():
    job = {"MY_JOB_NAME": "backup-28815120", "MY_JOB_UID": "5f0c6f8e-2a4b-4c1e-9f3a-0d6c1b2a3e4f"}
    rc, err = run(job, "--pvc-name", "etcd-backups")
    assert rc == 0 and "requested a backup to claim etcd-backups" in err, (rc, err)
    r = kubectl("get", "etcdbackups.operator.openshift.io", "backup-28815120", "-o", "json")
    assert r.returncode == 0, r.stderr
    b = json.loads(r.stdout)
    assert b["spec"] == {"pvcName": "etcd-backups"}, b
    ref = b["metadata"]["ownerReferences"][0]
    assert (ref["apiVersion"], ref["kind"], ref["name"], ref["uid"]) == (
        "batch/v1", "Job", "backup-28815120", job["MY_JOB_UID"]), ref

    rc, err = run(job, "--pvc-name", "etcd-backups")   # the Job's pod ran again
    assert rc == 0 and "exists already" in err, (rc, err)

    # A Backup's store goes on as annotations (the EtcdBackup CRD has no field for it).
    s3 = dict(job, MY_JOB_NAME="backup-28815121")
    rc, err = run(s3, "--pvc-name", "etcd-backups", "--s3-secret", "store", "--s3-bucket", "etcd-backups",
                  "--s3-prefix", "clusters/prod-1", "--s3-max-backups", "4")
    assert rc == 0 and "s3://etcd-backups/clusters/prod-1" in err, (rc, err)
    r = kubectl("get", "etcdbackups.operator.openshift.io", "backup-28815121", "-o", "json")
    ann = json.loads(r.stdout)["metadata"]["annotations"]
    assert ann == {"etcd.operator.openshift.io/s3-secret": "store",
                   "etcd.operator.openshift.io/s3-bucket": "etcd-backups",
                   "etcd.operator.openshift.io/s3-prefix": "clusters/prod-1",
                   "etcd.operator.openshift.io/s3-max-backups": "4"}, ann
    assert kubectl("delete", "etcdbackups.operator.openshift.io", "backup-28815121").returncode == 0

    for env, args, needle in [
            (dict(job, MY_JOB_NAME="backup-6"), ["--pvc-name", "x", "--s3-bucket", "b"], "go together"),
            ({"MY_JOB_NAME": "", "MY_JOB_UID": ""}, ["--pvc-name", "x"], "MY_JOB_NAME and MY_JOB_UID"),
            ({"MY_JOB_NAME": "backup-2", "MY_JOB_UID": ""}, ["--pvc-name", "x"], "MY_JOB_UID"),
            (dict(job, MY_JOB_NAME="backup-3"), ["--pvc-name", "Bad_Name"], "--pvc-name=Bad_Name"),
            (dict(job, MY_JOB_NAME="backup-4"), [], "--pvc-name="),
            (dict(job, MY_JOB_NAME="backup-5"), ["--pvc-name", "x", "extra"], "no arguments")]:
        rc, err = run(env, *args)
        assert rc == 2 and needle in err, (env, args, rc, err)
    r = kubectl("get", "etcdbackups.operator.openshift.io", "-o", "name")
    assert r.stdout.split() == ["etcdbackup.operator.openshift.io/backup-28815120"], r.stdout
    print("ok")


if __name__ == "__main__":
    main()
