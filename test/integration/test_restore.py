#!/usr/bin/env python3
"""cluster-restore and bump-revision on a master's files, with a real etcd,
etcdctl and tar; only the container runtime is a stand-in (a crictl that
answers "nothing runs", or "etcd still runs").

What it proves (issue 12, section 2):
- a truncated, a corrupt and a missing snapshot, a backup without its
  tarball, and hostile tarballs (a symlink, a hard link, a `..`, an
  absolute name, a member outside the revision dirs, a setuid file, a
  device) are refused before anything on the node changes (tree digest:
  etcd's manifest and the data dir where they were), naming the member;
- review M1: a backup is checked against its checksum file first: a
  truncated or changed snapshot and a replaced tarball are refused naming
  the file and the checksum file, a backup without one is refused with how
  to go on (--no-checksum-file, ETCD_RESTORE_NO_CHECKSUM_FILE=1), and from a
  store only a backup whose checksum file is signed with backupKey is
  fetched, its checksum file written beside it;
- etcd that does not stop: the manifest is moved aside (nothing else), and
  the command says where it is;
- the restore-pod path: the data dir moved aside, never deleted (stray files
  into extra-data-dir-contents-<ts>/, an older etcd-backup/member renamed),
  the revision dirs of the tarball put back, the snapshot copied and
  verified, the restore pod in place of etcd-pod.yaml; run again, it finds
  etcd stopped and keeps every earlier copy;
- the in-place path: refused while a running cluster still lists this
  member; the snapshot restored by etcdctl into the data dir, the normal
  manifest back;
- the quorum-restore path: refused when it cannot ask the other members
  (--force overrides), the member copied aside, the quorum pod in place;
- bump-revision killed with SIGKILL: its private etcd does not outlive it;
- bump-revision on the restored data: the revision passes maxRevision plus
  the margin, and etcd answers "compacted" for a revision from before;
- straight from an S3 store (test/s3's signature-checking peer): the backup
  fetched and verified before anything changes, then restored as from a
  directory; run again, the fetched backup is used as it is; a refused
  store, or a directory holding another backup, changes nothing;
- what a run sets aside never replaces what an earlier run set aside in
  the same second (review L9);
- every run is durable (review M4): under durability-shim.c, each rename
  and link is followed by an fsync of its directories, and each file that
  takes its name from a temporary one was fsynced first.
Also run on etcd 3.6 (integration/etcd-3.6/restore, through with-etcd.sh): etcdutl checks and
restores the snapshot there, where etcdctl no longer can.
Usage: test_restore.py BUILD_DIR DURABILITY_SHIM"""
import hashlib
import hmac
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time

BIN = os.path.join(os.path.abspath(sys.argv[1]), "cluster-etcd-operator")
SHIM = os.path.abspath(sys.argv[2])
S3DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "s3")
TMP = tempfile.mkdtemp(prefix="test-restore-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
PROCS = []
DURABLE = {"runs": 0, "renames": 0}


def durability_env(name):
    """The environment that runs a command under durability-shim.c, logging to TMP/<name>."""
    path = os.path.join(TMP, name)
    asan = os.environ.get("ASAN_OPTIONS", "")
    return path, {"LD_PRELOAD": SHIM, "DURABILITY_LOG": path,
                  "ASAN_OPTIONS": (asan + ":" if asan else "") + "verify_asan_link_order=0"}


def check_durable(path, what):
    """No VIOLATION in the shim's log of one run (review M4)."""
    lines = open(path).read().splitlines() if os.path.exists(path) else []
    bad = [l for l in lines if l.startswith("VIOLATION")]
    assert not bad, "%s: not durable:\n%s" % (what, "\n".join(bad))
    DURABLE["runs"] += 1
    DURABLE["renames"] += sum(1 for l in lines if l.startswith(("rename ", "link ")))


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def etcdctl(ep, *args, check=True):
    r = subprocess.run(["etcdctl", "--endpoints", ep] + list(args), capture_output=True, text=True,
                       env=dict(os.environ, ETCDCTL_API="3"))
    if check and r.returncode != 0:
        raise AssertionError("etcdctl %s: %s" % (" ".join(args), r.stderr))
    return r


def start_etcd(data, name="m0"):
    cport, pport = free_port(), free_port()
    ep = "http://127.0.0.1:%d" % cport
    peer = "http://127.0.0.1:%d" % pport
    logf = open(os.path.join(TMP, "etcd-%d.log" % cport), "w")
    p = subprocess.Popen(["etcd", "--name", name, "--data-dir", data, "--listen-client-urls", ep,
                          "--advertise-client-urls", ep, "--listen-peer-urls", peer,
                          "--initial-advertise-peer-urls", peer, "--initial-cluster", "%s=%s" % (name, peer)],
                         stdout=logf, stderr=subprocess.STDOUT)
    PROCS.append(p)
    for _ in range(100):
        if etcdctl(ep, "endpoint", "health", check=False).returncode == 0:
            # Under with-etcd.sh 3.6 (integration/etcd-3.6/restore), the etcd asked for.
            want = os.environ.get("ETCD_TEST_VERSION")
            have = json.loads(etcdctl(ep, "endpoint", "status", "-w", "json").stdout)[0]["Status"]["version"]
            assert not want or have.startswith(want), "etcd %s runs, not the %sx asked for" % (have, want)
            return p, ep
        time.sleep(0.1)
    raise AssertionError("etcd on %s did not start" % data)


def stop(p):
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=20)


def digest(path):
    out = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for f in sorted(filenames) + sorted(d for d in dirnames if os.path.islink(os.path.join(dirpath, d))):
            p = os.path.join(dirpath, f)
            st = os.lstat(p)
            data = open(p, "rb").read() if os.path.isfile(p) and not os.path.islink(p) else b""
            out.append((os.path.relpath(p, path), st.st_mode, hashlib.sha256(data).hexdigest()))
    return out


def write(path, text, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)


class Node:
    """A master's files under one root: /etc/kubernetes, /var/lib/etcd, /var/lib/etcd-backup,
    /home/core, and a crictl on PATH."""

    def __init__(self, name, member_src, backup):
        self.root = os.path.join(TMP, name)
        self.config = os.path.join(self.root, "etc/kubernetes")
        self.data = os.path.join(self.root, "var/lib/etcd")
        self.backup_data = os.path.join(self.root, "var/lib/etcd-backup")
        self.stopped = os.path.join(self.root, "home/core/assets/manifests-stopped")
        self.backup = backup
        self.bin = os.path.join(self.root, "bin")
        write(os.path.join(self.config, "manifests/etcd-pod.yaml"), "normal etcd pod, revision 2\n")
        write(os.path.join(self.config, "static-pod-resources/etcd-pod-2/etcd-pod.yaml"), "current\n")
        certs = os.path.join(self.config, "static-pod-resources/etcd-certs/configmaps/restore-etcd-pod")
        write(os.path.join(certs, "pod.yaml"), "restore pod of %s\n" % name)
        write(os.path.join(certs, "quorum-restore-pod.yaml"), "quorum restore pod of %s\n" % name)
        shutil.copytree(os.path.join(member_src, "member"), os.path.join(self.data, "member"))
        write(os.path.join(self.data, "revision.json"), '{"clusterId":"1","maxRaftIndex":5}\n')
        write(os.path.join(self.data, "fio-test.bin"), "junk a user left\n")
        os.makedirs(os.path.join(self.data, ".hidden-dir"))
        write(os.path.join(self.backup_data, "member/OLD"), "an older backup member\n")
        self.crictl("")

    def crictl(self, answer):
        """crictl ps -q prints `answer` for every etcd container."""
        write(os.path.join(self.bin, "crictl"), "#!/bin/sh\nprintf '%s'\n" % answer, 0o755)

    def restore(self, *args, timeout=1, env=None):
        argv = [BIN, "cluster-restore", "--config-dir", self.config, "--data-dir", self.data,
                "--backup-data-dir", self.backup_data, "--stopped-dir", self.stopped,
                "--stop-timeout", str(timeout)] + list(args)
        dlog, denv = durability_env("durability-%d.log" % DURABLE["runs"])
        r = subprocess.run(argv, capture_output=True, text=True,
                           env=dict(os.environ, PATH=self.bin + ":" + os.environ["PATH"], **denv, **(env or {})))
        log("cluster-restore %s -> %d\n%s" % (" ".join(args), r.returncode, r.stderr.strip()))
        check_durable(dlog, "cluster-restore " + " ".join(args))
        return r


KIND = "cluster-etcd-operator-backup-checksums"
BACKUP_KEY = "the-restore-clusters-backup-key-0123456789"


def file_sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def checksums(snap, tar, revision=0, created=1764065700, key=None):
    """The checksum file cluster-backup writes (operator/dr/backup-manifest.c), from its documented
    fields; signed with `key` as for a store."""
    files = [{"name": os.path.basename(p), "sha256": file_sha(p), "size": str(os.path.getsize(p))}
             for p in (snap, tar)]
    text = "%s v1\nsnapshot %s %s %s\ntarball %s %s %s\nrevision %d\nclusterID %016x\ncreated %d\n" % (
        KIND, files[0]["name"], files[0]["sha256"], files[0]["size"], files[1]["name"], files[1]["sha256"],
        files[1]["size"], revision, 0xabc, created)
    m = {"kind": KIND, "version": 1, "snapshot": files[0], "tarball": files[1], "revision": str(revision),
         "clusterID": "%016x" % 0xabc, "created": str(created)}
    if key:
        m["hmacSHA256"] = hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()
    return json.dumps(m, indent=1) + "\n"


def write_checksums(dir, name="2026-11-25_101500"):
    write(os.path.join(dir, "checksums_%s.json" % name),
          checksums(os.path.join(dir, "snapshot_%s.db" % name),
                    os.path.join(dir, "static_kuberesources_%s.tar.gz" % name)))


def make_backup(dir, ep, tarball=True, name="2026-11-25_101500"):
    os.makedirs(dir, exist_ok=True)
    snap = os.path.join(dir, "snapshot_%s.db" % name)
    etcdctl(ep, "snapshot", "save", snap)
    if tarball:
        src = os.path.join(TMP, "tar-src")
        write(os.path.join(src, "static-pod-resources/etcd-pod-1/etcd-pod.yaml"), "from the backup\n")
        write(os.path.join(src, "static-pod-resources/kube-apiserver-pod-4/kube-apiserver-pod.yaml"), "kas\n")
        write(os.path.join(src, "static-pod-resources/etcd-pod-1/secrets/etcd-all-certs/tls.key"), "key\n", 0o600)
        subprocess.run(["tar", "-czf", os.path.join(dir, "static_kuberesources_%s.tar.gz" % name), "-C", src,
                        "static-pod-resources"], check=True)
        write_checksums(dir, name)
    return snap


def main():
    # A cluster with data, a backup of it, then more data and a source member dir.
    src = os.path.join(TMP, "source")
    p, ep = start_etcd(src)
    for i in range(20):
        etcdctl(ep, "put", "/kubernetes.io/before/%d" % i, "v")
    good = os.path.join(TMP, "backup-good")
    snap = make_backup(good, ep)
    snap_rev = json.loads(etcdctl(ep, "endpoint", "status", "-w", "json").stdout)[0]["Status"]["header"]["revision"]
    for i in range(5):
        etcdctl(ep, "put", "/kubernetes.io/after/%d" % i, "v")
    stop(p)
    log("backup at revision %d" % snap_rev)

    # Bad backups: refused before anything changes.
    data = open(snap, "rb").read()
    bad = {}
    for kind, mutate in (("truncated", lambda d: d[:len(d) // 2]),
                         ("corrupt", lambda d: d[:4096] + bytes([d[4096] ^ 0xff]) + d[4097:]),
                         ("truncated-unlisted", lambda d: d[:len(d) // 2])):
        d = os.path.join(TMP, "backup-" + kind)
        shutil.copytree(good, d)
        with open(os.path.join(d, os.path.basename(snap)), "wb") as f:
            f.write(mutate(data))
        bad[kind] = d
    # Review M1: no checksum file (refused unless told); a tarball that is not the one written.
    os.unlink(os.path.join(bad["truncated-unlisted"], "checksums_2026-11-25_101500.json"))
    bad["no-checksums"] = os.path.join(TMP, "backup-no-checksums")
    shutil.copytree(good, bad["no-checksums"])
    os.unlink(os.path.join(bad["no-checksums"], "checksums_2026-11-25_101500.json"))
    bad["replaced-tarball"] = os.path.join(TMP, "backup-replaced-tarball")
    shutil.copytree(good, bad["replaced-tarball"])
    with tarfile.open(os.path.join(bad["replaced-tarball"], "static_kuberesources_2026-11-25_101500.tar.gz"),
                      "w:gz") as t:
        ti = tarfile.TarInfo("static-pod-resources/etcd-pod-1/etcd-pod.yaml")
        ti.size = 9
        t.addfile(ti, io.BytesIO(b"replaced\n"))
    bad["missing"] = os.path.join(TMP, "backup-empty")
    os.makedirs(bad["missing"])
    bad["no-tarball"] = os.path.join(TMP, "backup-no-tarball")
    os.makedirs(bad["no-tarball"])
    shutil.copy(snap, bad["no-tarball"])
    # Hostile tarballs (review H2): a good snapshot beside a tarball that root must not extract.
    hostile = {
        "symlink": ("static-pod-resources/etcd-pod-1/etcd-pod.yaml", tarfile.SYMTYPE, "/etc/shadow", 0o644,
                    'member "static-pod-resources/etcd-pod-1/etcd-pod.yaml" is a symbolic link'),
        "hardlink": ("static-pod-resources/etcd-pod-1/h", tarfile.LNKTYPE, "static-pod-resources/x", 0o644,
                     'member "static-pod-resources/etcd-pod-1/h" is a hard link'),
        "dotdot": ("static-pod-resources/../manifests/evil.yaml", tarfile.REGTYPE, None, 0o644,
                   'member "static-pod-resources/../manifests/evil.yaml" is not under'),
        "absolute": ("/etc/kubernetes/manifests/evil.yaml", tarfile.REGTYPE, None, 0o644,
                     'member "/etc/kubernetes/manifests/evil.yaml" has an absolute name'),
        "outside": ("static-pod-resources/etcd-certs/configmaps/restore-etcd-pod/pod.yaml", tarfile.REGTYPE, None,
                    0o644, 'member "static-pod-resources/etcd-certs/configmaps/restore-etcd-pod/pod.yaml" is '
                    "not under"),
        "setuid": ("static-pod-resources/etcd-pod-1/sh", tarfile.REGTYPE, None, 0o4755,
                   'member "static-pod-resources/etcd-pod-1/sh" has the setuid bit'),
        "device": ("static-pod-resources/etcd-pod-1/mem", tarfile.CHRTYPE, None, 0o644,
                   'member "static-pod-resources/etcd-pod-1/mem" is a device node'),
    }
    for kind, (name, typ, link, mode, _) in hostile.items():
        d = os.path.join(TMP, "backup-" + kind)
        os.makedirs(d)
        shutil.copy(snap, d)
        with tarfile.open(os.path.join(d, "static_kuberesources_2026-11-25_101500.tar.gz"), "w:gz") as t:
            for dname in ("static-pod-resources", "static-pod-resources/etcd-pod-1"):
                ti = tarfile.TarInfo(dname)
                ti.type, ti.mode = tarfile.DIRTYPE, 0o755
                t.addfile(ti)
            ok = tarfile.TarInfo("static-pod-resources/etcd-pod-1/kept.yaml")
            ok.size = 3
            t.addfile(ok, io.BytesIO(b"ok\n"))
            ti = tarfile.TarInfo(name)
            ti.type, ti.mode = typ, mode
            if link:
                ti.linkname = link
            if typ == tarfile.CHRTYPE:
                ti.devmajor, ti.devminor = 1, 1
            body = b"pwned\n" if typ == tarfile.REGTYPE else b""
            ti.size = len(body)
            t.addfile(ti, io.BytesIO(body))
        write_checksums(d)  # whole as written: the tarball's own checks must catch it
        bad[kind] = d
    node = Node("master-1", src, good)
    for kind, d in bad.items():
        before = digest(node.root)
        r = node.restore(*(["--no-checksum-file"] if kind == "truncated-unlisted" else []), d)
        assert r.returncode == 1, (kind, r.stderr)
        sums = "checksum file %s/checksums_2026-11-25_101500.json" % d
        want = {"truncated": "bytes, the checksum file says %d; the backup is corrupt or was changed after it was "
                             "written (%s)" % (len(data), sums),
                "corrupt": "the SHA-256 of %s/snapshot_2026-11-25_101500.db is" % d,
                "truncated-unlisted": "truncated or corrupt",
                "no-checksums": "%s/checksums_2026-11-25_101500.json does not exist" % d,
                "replaced-tarball": "%s/static_kuberesources_2026-11-25_101500.tar.gz has 177 bytes, the checksum file" % d,
                "missing": "no snapshot_*.db", "no-tarball": "has no static_kuberesources"}
        want.update({k: v[4] for k, v in hostile.items()})
        assert want[kind] in r.stderr, (kind, r.stderr)
        assert "nothing was changed" in r.stderr or kind in ("missing", "no-tarball"), (kind, r.stderr)
        if kind == "no-checksums":
            assert "ETCD_RESTORE_NO_CHECKSUM_FILE=1" in r.stderr, r.stderr
        if kind in hostile:
            assert "refusing %s/static_kuberesources_" % d in r.stderr and "nothing was changed" in r.stderr, \
                r.stderr
        # Nothing changed: etcd's manifest where it was (etcd runs), the data dir in place.
        assert digest(node.root) == before, "%s: the node changed" % kind
    log("bad backups and hostile tarballs refused, nothing changed")

    # etcd never stops: only the manifest moves, and the message says where.
    node.crictl("0123456789abc\\n")
    before_data = digest(node.data)
    r = node.restore(good, timeout=2)
    assert r.returncode == 1 and "still run after" in r.stderr and node.stopped in r.stderr, r.stderr
    assert os.path.exists(os.path.join(node.stopped, "etcd-pod.yaml"))
    assert not os.path.exists(os.path.join(node.config, "manifests/etcd-pod.yaml"))
    assert digest(node.data) == before_data
    node.crictl("")

    # The restore-pod path, picking up where the last run stopped.
    r = node.restore(good)
    assert r.returncode == 0, r.stderr
    assert open(os.path.join(node.config, "manifests/etcd-pod.yaml")).read() == "restore pod of master-1\n"
    assert open(os.path.join(node.stopped, "etcd-pod.yaml")).read() == "normal etcd pod, revision 2\n"
    assert os.listdir(node.data) == [], os.listdir(node.data)
    assert os.path.isdir(os.path.join(node.backup_data, "member/snap"))
    olds = [f for f in os.listdir(node.backup_data) if f.startswith("member.")]
    assert len(olds) == 1 and os.path.exists(os.path.join(node.backup_data, olds[0], "OLD")), olds
    extras = [f for f in os.listdir(node.backup_data) if f.startswith("extra-data-dir-contents-")]
    assert len(extras) == 1, extras
    assert sorted(os.listdir(os.path.join(node.backup_data, extras[0]))) == [".hidden-dir", "fio-test.bin"]
    assert os.path.exists(os.path.join(node.backup_data, "revision.json"))
    copy = os.path.join(node.backup_data, "snapshot.db")
    assert open(copy, "rb").read() == data and oct(os.stat(copy).st_mode & 0o777) == "0o600"
    assert open(os.path.join(node.config, "static-pod-resources/etcd-pod-1/etcd-pod.yaml")).read() == \
        "from the backup\n"
    assert open(os.path.join(node.config, "static-pod-resources/etcd-pod-2/etcd-pod.yaml")).read() == "current\n"
    # Extracted through the staging dir (gone now), modes as archived, owners not kept.
    key = os.path.join(node.config, "static-pod-resources/etcd-pod-1/secrets/etcd-all-certs/tls.key")
    assert oct(os.stat(key).st_mode & 0o7777) == "0o600", oct(os.stat(key).st_mode)
    assert not os.path.exists(os.path.join(node.config, "static-pod-resources/.restore-staging"))
    assert open(os.path.join(node.config, "static-pod-resources/etcd-certs/configmaps/restore-etcd-pod/pod.yaml")
                ).read() == "restore pod of master-1\n"
    # Again: nothing earlier is lost (the restore pod moves to the stopped dir under its name,
    # the first stopped manifest is renamed, the first snapshot copy too).
    time.sleep(1.1)
    r = node.restore(good)
    assert r.returncode == 0, r.stderr
    stopped = sorted(os.listdir(node.stopped))
    assert len(stopped) == 2 and "etcd-pod.yaml" in stopped, stopped
    assert len([f for f in os.listdir(node.backup_data) if f.startswith("snapshot.db")]) == 2
    # Again within the second an earlier copy was set aside under (review L9): the names this
    # run would take for the stopped manifest and the snapshot copy are taken for the next few
    # seconds, and none of those is replaced.
    taken = {}
    asides = lambda: [f for f in os.listdir(node.stopped) if f.startswith("etcd-pod.yaml.")]  # noqa: E731
    for dt in range(1, 5):
        ts = time.strftime("%Y-%m-%d_%H%M%S", time.localtime(time.time() + dt))
        for path in (os.path.join(node.stopped, "etcd-pod.yaml." + ts),
                     os.path.join(node.backup_data, "snapshot.db." + ts)):
            taken[path] = "set aside at %s\n" % ts
            write(path, taken[path])
    for d in (node.stopped, node.backup_data):  # and what the runs before set aside
        for f in os.listdir(d):
            if f.startswith(("etcd-pod.yaml.", "snapshot.db.")):
                taken[os.path.join(d, f)] = open(os.path.join(d, f), "rb").read().decode("latin-1")
    before = len(asides())
    r = node.restore(good)
    assert r.returncode == 0, r.stderr
    for path, text in taken.items():
        assert open(path, "rb").read().decode("latin-1") == text, "%s was replaced" % path
    assert len(asides()) == before + 1, sorted(asides())
    log("restore-pod path: moved aside, put back, idempotent, never over an earlier copy")

    # The in-place path (ETCD_ETCDCTL_RESTORE): etcdctl restores, the normal pod comes back.
    node2 = Node("master-2", src, good)
    # Refused while a running cluster still lists this member (it must be removed first).
    p, ep = start_etcd(os.path.join(TMP, "running-master-2"), "master-2")
    before = digest(node2.root)
    r = node2.restore("--in-place", "--name", "master-2", "--peer-host", "127.0.0.1", good,
                      env={"ALL_ETCD_ENDPOINTS": ep, "ETCD_THIS_URL_HOST": "127.0.0.1"})
    assert r.returncode == 1 and "still has this member (master-2" in r.stderr and \
        "etcd-member-remove.sh master-2" in r.stderr, r.stderr
    assert digest(node2.root) == before
    stop(p)
    log("in-place path: refused while the running cluster lists the member")
    r = node2.restore("--in-place", "--name", "master-2", "--peer-host", "127.0.0.1", good)
    assert r.returncode == 0, r.stderr
    assert open(os.path.join(node2.config, "manifests/etcd-pod.yaml")).read() == "normal etcd pod, revision 2\n"
    assert os.path.isdir(os.path.join(node2.data, "member/wal"))
    assert [f for f in os.listdir(node2.data)] == ["member"], os.listdir(node2.data)
    log("in-place path: restored, normal pod back")

    # The installer of a newer revision writes the manifest while etcd is stopped (it found the
    # member gone): the restore keeps that one and leaves the stopped one where it is.
    node3 = Node("master-1", src, good)
    newer = os.path.join(node3.config, "manifests/etcd-pod.yaml")
    write(os.path.join(node3.bin, "crictl"), "#!/bin/sh\n[ -e '%s' ] || printf 'installer etcd pod, revision 3\\n' >'%s'\n"
          % (newer, newer), 0o755)
    r = node3.restore("--in-place", "--name", "master-1", "--peer-host", "127.0.0.1", good)
    assert r.returncode == 0, r.stderr
    assert open(newer).read() == "installer etcd pod, revision 3\n", open(newer).read()
    assert open(os.path.join(node3.stopped, "etcd-pod.yaml")).read() == "normal etcd pod, revision 2\n"
    assert "was written while etcd was stopped" in r.stderr, r.stderr
    assert os.path.isdir(os.path.join(node3.data, "member/wal"))
    log("in-place path: a newer revision's manifest written meanwhile is kept")

    # bump-revision on it: past maxRevision + margin, older revisions compacted.
    write(os.path.join(node2.backup_data, "revision.json"),
          json.dumps({"clusterId": "1", "raftIndex": {}, "maxRaftIndex": 1, "created": "2026-11-25T00:00:00Z",
                      "maxRevision": snap_rev + 300}))
    status = os.path.join(TMP, "bump.json")
    r = subprocess.run([BIN, "bump-revision", "--data-dir", node2.data, "--name", "master-2", "--revision-json",
                        os.path.join(node2.backup_data, "revision.json"), "--margin", "200", "--status-file",
                        status], capture_output=True, text=True,
                       # the etcd pod's settings name the real listeners: the private etcd ignores them
                       env=dict(os.environ, ETCD_DATA_DIR="/nonexistent", ETCD_NAME="not-this",
                                ETCD_INITIAL_CLUSTER_STATE="new", ETCD_LISTEN_CLIENT_URLS="https://127.0.0.1:1"))
    log("bump-revision -> %d\n%s" % (r.returncode, r.stderr[-1500:]))
    assert r.returncode == 0, r.stderr
    st = json.load(open(status))
    assert st["path"] == "writes" and st["toRevision"] > snap_rev + 500, st
    assert os.listdir(node2.data) == ["member"], os.listdir(node2.data)
    p, ep = start_etcd(node2.data, "master-2")
    got = etcdctl(ep, "get", "/kubernetes.io/before/3").stdout
    assert got == "/kubernetes.io/before/3\nv\n", got
    assert etcdctl(ep, "get", "/kubernetes.io/after/1").stdout == "", "a write after the backup survived"
    old = etcdctl(ep, "get", "/kubernetes.io/before/3", "--rev", str(snap_rev), check=False)
    assert old.returncode != 0 and "compacted" in old.stderr, old
    rev = json.loads(etcdctl(ep, "endpoint", "status", "-w", "json").stdout)[0]["Status"]["header"]["revision"]
    assert rev == st["toRevision"], (rev, st)
    stop(p)
    log("bump-revision: %d -> %d, older revisions compacted" % (snap_rev, rev))

    # A bump killed (SIGKILL, outside a container) takes its private etcd with it (review L8):
    # an etcd on PATH that never serves, so the bump is still waiting for it when killed.
    fake = os.path.join(TMP, "fake-etcd-bin")
    etcd_pid = os.path.join(TMP, "fake-etcd.pid")
    write(os.path.join(fake, "etcd"), "#!/bin/sh\necho $$ > %s\nexec sleep 600\n" % etcd_pid, 0o755)
    bump = subprocess.Popen([BIN, "bump-revision", "--data-dir", node2.data, "--name", "master-2",
                             "--revision-json", os.path.join(node2.backup_data, "revision.json")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, PATH=fake + ":" + os.environ["PATH"]))
    deadline = time.monotonic() + 30
    while not (os.path.exists(etcd_pid) and open(etcd_pid).read().strip()) and time.monotonic() < deadline:
        time.sleep(0.05)
    pid = int(open(etcd_pid).read())
    bump.kill()
    bump.wait()

    def gone():
        try:
            with open("/proc/%d/stat" % pid) as f:
                return f.read().split(") ", 1)[1][0] in "ZX"  # a zombie waiting for init is gone too
        except FileNotFoundError:
            return True
    deadline = time.monotonic() + 10
    while not gone() and time.monotonic() < deadline:
        time.sleep(0.05)
    if not gone():
        os.kill(pid, signal.SIGKILL)
        raise AssertionError("the private etcd (pid %d) outlived the killed bump-revision" % pid)
    log("bump-revision killed: its private etcd went with it")

    # The quorum-restore path: the member copied aside, the quorum pod in place.
    node3 = Node("master-0", src, good)
    before = digest(node3.root)
    r = node3.restore("--quorum-restore")  # no member to ask: refused, nothing changed
    assert r.returncode == 1 and "cannot check that this member has the highest raft index" in r.stderr, r.stderr
    assert digest(node3.root) == before
    r = node3.restore("--quorum-restore", "--force")
    assert r.returncode == 0, r.stderr
    assert open(os.path.join(node3.config, "manifests/etcd-pod.yaml")).read() == \
        "quorum restore pod of master-0\n"
    copies = [f for f in os.listdir(node3.backup_data) if f.startswith("member-before-quorum-restore-")]
    assert len(copies) == 1, copies
    assert digest(os.path.join(node3.backup_data, copies[0])) == digest(os.path.join(node3.data, "member"))
    assert node3.restore("--quorum-restore", good).returncode == 2
    empty = Node("master-3", src, good)
    shutil.rmtree(empty.data)
    before = digest(empty.root)
    r = empty.restore("--quorum-restore", "--force")
    assert r.returncode == 1 and "runs on the member whose data survived" in r.stderr
    assert digest(empty.root) == before
    log("quorum-restore path: copied aside, pod in place; refused without data")
    check_restore_from_store(src, good, snap, snap_rev, data)
    log("PASS")


def check_restore_from_store(src, good, snap, snap_rev, data):
    if not os.path.isdir(os.path.join(S3DIR, "node_modules", "s3rver")):
        sys.exit("test/s3/node_modules is missing: run hack/install-deps.sh (npm ci in test/s3)")
    ak, sk = "AKIARESTORE", "restore/s3cr3t"
    peer = subprocess.Popen(["node", "--openssl-legacy-provider", os.path.join(S3DIR, "s3-peer.js"), "--address",
                             "127.0.85.1", "--port", "0", "--dir", os.path.join(TMP, "s3-store"), "--access-key", ak,
                             "--secret-key", sk, "--bucket", "etcd-backups"], stdout=subprocess.PIPE, text=True)
    PROCS.append(peer)
    line = peer.stdout.readline().split()
    assert line and line[0] == "listening", line

    def creds(name, secret):
        d = os.path.join(TMP, name)
        for k, v in (("accessKeyID", ak), ("secretAccessKey", secret), ("endpoint", line[1]),
                     ("s3ForcePathStyle", "true"), ("insecureHTTP", "true"), ("backupKey", BACKUP_KEY)):
            write(os.path.join(d, k), v + "\n", 0o600)
        return d
    good_creds, bad_creds = creds("s3-creds", sk), creds("s3-bad-creds", "wrong")
    store = ["--s3-bucket", "etcd-backups", "--s3-prefix", "clusters/restore"]
    created = int(time.time()) - 60
    name = "Full-00000000-%08d-%d" % (snap_rev, created)
    tarball = os.path.join(good, "static_kuberesources_2026-11-25_101500.tar.gz")
    sums = os.path.join(TMP, "store-checksums.json")
    write(sums, checksums(snap, tarball, snap_rev, created, key=BACKUP_KEY))
    for path, key in ((tarball, "kuberesources/%s.tar.gz" % name), (snap, "v2/" + name),
                      (sums, "checksums/%s.json" % name)):
        r = subprocess.run([BIN, "s3", "put", path, key, "--credentials-dir", good_creds, "--bucket", "etcd-backups",
                            "--prefix", "clusters/restore"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr

    node = Node("master-4", src, good)
    fetched = os.path.join(TMP, "fetched")
    before = digest(node.root)
    r = node.restore("--s3-credentials-dir", bad_creds, *store, fetched)
    assert r.returncode == 1 and "SignatureDoesNotMatch" in r.stderr and "nothing on the node was changed" in \
        r.stderr, r.stderr
    assert digest(node.root) == before
    assert not os.path.isdir(fetched) or not os.listdir(fetched), os.listdir(fetched)
    r = node.restore("--s3-credentials-dir", good_creds, *store, "--s3-backup", name, fetched)
    assert r.returncode == 0, r.stderr
    got = sorted(os.listdir(fetched))
    assert [g.split("_")[0] for g in got] == ["checksums", "snapshot", "static"], got
    assert "match the checksum file" in r.stderr, r.stderr
    assert open(os.path.join(node.config, "manifests/etcd-pod.yaml")).read() == "restore pod of master-4\n"
    assert open(os.path.join(node.backup_data, "snapshot.db"), "rb").read() == data
    assert open(os.path.join(node.config, "static-pod-resources/etcd-pod-1/etcd-pod.yaml")).read() == \
        "from the backup\n"
    time.sleep(1.1)
    r = node.restore("--s3-credentials-dir", good_creds, *store, fetched)  # again: latest is the same one
    assert r.returncode == 0 and "not fetched again" in r.stderr, r.stderr
    assert sorted(os.listdir(fetched)) == got
    log("restore from the store: fetched, verified, restored; again: used as fetched")

    # A directory that holds another backup: refused, nothing changed, nothing left behind.
    node5 = Node("master-5", src, good)
    before, before_good = digest(node5.root), sorted(os.listdir(good))
    r = node5.restore("--s3-credentials-dir", good_creds, *store, good)
    assert r.returncode == 1 and "holds another backup" in r.stderr, r.stderr
    assert digest(node5.root) == before and sorted(os.listdir(good)) == before_good, os.listdir(good)
    assert node5.restore("--quorum-restore", "--s3-credentials-dir", good_creds, *store).returncode == 2
    assert node5.restore("--s3-bucket", "etcd-backups", fetched).returncode == 2
    log("restore from the store: refused beside another backup, and with bad flags")


if __name__ == "__main__":
    try:
        main()
        # Proof that the shim ran: the restores above rename dozens of things.
        assert DURABLE["renames"] >= 10, DURABLE
        log("durable: %(renames)d renames and links in %(runs)d runs, each directory fsynced after" % DURABLE)
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.kill()
                p.wait()
        if os.environ.get("KEEP_TEST_DIRS", "") not in ("", "0"):
            log("kept %s" % TMP)
        else:
            shutil.rmtree(TMP, ignore_errors=True)
