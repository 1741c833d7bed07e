#!/usr/bin/env python3
"""`cluster-etcd-operator prune-backups` as the scheduled backups' CronJob runs
it (upstream's flags): usage errors name the flag and exit 2 with nothing
removed; --dry-run removes nothing; RetentionNumber and RetentionSize keep
the newest backups; a directory without a snapshot is never touched.
Usage: test_prune_backups.py BINARY"""
import os
import shutil
import subprocess
import sys
import tempfile

BIN = sys.argv[1]


def backup(root, name, age_h, mib):
    d = os.path.join(root, name)
    os.makedirs(d)
    snap = os.path.join(d, "snapshot_%s.db" % name)
    with open(snap, "wb") as f:
        f.truncate(mib * 1024 * 1024)
    with open(os.path.join(d, "static_kuberesources_%s.tar.gz" % name), "wb") as f:
        f.write(b"x")
    t = 1_700_000_000 - age_h * 3600
    for p in os.listdir(d):
        os.utime(os.path.join(d, p), (t, t))


def run(*args):
    r = subprocess.run([BIN, "prune-backups"] + list(args), capture_output=True, text=True, timeout=60)
    return r.returncode, r.stderr


def main():
    root = tempfile.mkdtemp(prefix="prune-backups-")
    try:
        for i, mib in enumerate([3, 3, 3, 3, 1]):  # backup-0 newest ... backup-4 oldest
            backup(root, "backup-%d" % i, i, mib)
        os.makedirs(os.path.join(root, "not-a-backup"))
        open(os.path.join(root, "not-a-backup", "data"), "w").write("keep")
        names = lambda: sorted(os.listdir(root))  # noqa: E731
        everything = names()

        for args, needle in [
                (["--type=RetentionCount"], "--type=RetentionCount"),
                (["--maxNumberOfBackups=0"], "--maxNumberOfBackups=0"),
                (["--maxNumberOfBackups=x"], "--maxNumberOfBackups=x"),
                (["--type=RetentionNumber", "--maxSizeOfBackupsGb=1"], "--maxSizeOfBackupsGb does not go"),
                (["--bogus"], "bogus"),
                (["extra"], "no arguments")]:
            rc, err = run("--backup-dir", root, *args)
            assert rc == 2 and needle in err, (args, rc, err)
            assert names() == everything, "a usage error removed something"

        rc, err = run("--backup-dir", root, "--maxNumberOfBackups=2", "--dry-run")
        assert rc == 0 and "would remove backup-2" in err, err
        assert names() == everything, "a dry run removed something"

        rc, err = run("--backup-dir", root, "--type=RetentionNumber", "--maxNumberOfBackups=3")
        assert rc == 0, err
        assert names() == ["backup-0", "backup-1", "backup-2", "not-a-backup"], names()
        assert "no snapshot_*.db in it, not a backup: left alone" in err, err

        # 7 MiB in GiB terms cannot be asked for; 1 GiB holds both that are left: nothing goes.
        rc, err = run("--backup-dir", root, "--type=RetentionSize", "--maxSizeOfBackupsGb=1")
        assert rc == 0 and names() == ["backup-0", "backup-1", "backup-2", "not-a-backup"], (err, names())

        rc, err = run("--backup-dir", root, "--maxNumberOfBackups=1")
        assert rc == 0 and names() == ["backup-0", "not-a-backup"], (err, names())

        rc, err = run("--backup-dir", os.path.join(root, "missing"))
        assert rc == 1 and "cannot read the backup directory" in err, (rc, err)
        print("ok")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
