#!/usr/bin/env python3
"""The disaster-recovery tools on a host that carries none of our build's libraries (issue 35,
item 6): RHCOS has bash, coreutils, tar and gzip, but no Debian libcurl, OpenSSL 3, c-ares,
cJSON, libmicrohttpd, libsystemd or libyaml.

1. `install-host-tools`, run as the etcd pod's etcd-resources-copy container runs it (the
   node's /usr/local/bin mounted at /usr/local/bin), puts the binary, every library it runs
   with and its loader in /usr/local/bin/.cluster-etcd-operator-<digest>/ and a script
   /usr/local/bin/cluster-etcd-operator that starts it through them. Run again (also through
   that script) it changes nothing; a different build gets a new copy, the one before is kept
   (a command may have just started it) and older ones go.
2. A node shell whose root holds only a base OS: bash, coreutils, sed, grep, tar, gzip and
   their own libraries, copied from this machine, and none of ours (checked: the copied
   binary started with the root's own loader fails naming a library it lacks). There, as the
   backup runbook says, cluster-backup.sh takes a backup of a real etcd over TLS with the
   node's certificates: the snapshot verified, the static pods' tarball, the checksum file.
3. A copy that does not start (its loader replaced by a broken file) is refused and the
   installed script keeps naming the copy that works.
Needs root (mount namespaces, chroot), as kubelet-sim and hack/node-shell.sh do.
Usage: test_host_tools.py CLUSTER_ETCD_OPERATOR"""
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

BIN = os.path.abspath(sys.argv[1])
TMP = tempfile.mkdtemp(prefix="ceo-host-tools-")
PROCS = []
OURS = ("libcurl", "libssl", "libcrypto", "libcares", "libcjson", "libmicrohttpd", "libsystemd", "libyaml")
# What a base OS has that the scripts and the backup use (RHCOS has all of them).
BASE_TOOLS = ["bash", "sh", "env", "id", "basename", "dirname", "sed", "grep", "cat", "ls", "mkdir", "mv", "rm",
              "cp", "tar", "gzip", "sleep", "date", "true"]


def log(msg):
    print("[host-tools] %s" % msg, flush=True)


def run(argv, check=True, **kw):
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120, **kw)
    if check and r.returncode != 0:
        raise AssertionError("%s: exit %d\n%s%s" % (" ".join(argv), r.returncode, r.stdout, r.stderr))
    return r


def in_namespace(script, *args):
    """sh -c SCRIPT in a private mount namespace (nothing it mounts outlives it)."""
    return run(["unshare", "--mount", "--propagation", "private", "sh", "-euc", script, "sh"] + list(args),
               check=False)


def install(node, binary=BIN):
    """As the etcd-resources-copy container: the node's /usr/local/bin at /usr/local/bin."""
    r = in_namespace('mount --bind "$1/usr/local/bin" /usr/local/bin && exec "$2" install-host-tools '
                     '--dir /usr/local/bin', node, binary)
    return r


def copies(node):
    return sorted(os.path.basename(p) for p in glob.glob(os.path.join(node, "usr/local/bin/.cluster-etcd-operator-*")))


def script_copy(node):
    with open(os.path.join(node, "usr/local/bin/cluster-etcd-operator")) as f:
        return [ln[2:].rsplit("/", 1)[1] for ln in f.read().splitlines() if ln.startswith("d=")][0]


def ldd(path):
    """The files of `path`'s shared libraries and its loader, as this machine resolves them."""
    out = run(["ldd", path], check=False).stdout
    files = []
    for line in out.splitlines():
        parts = line.split()
        if "=>" in parts and len(parts) >= 3 and parts[2].startswith("/"):
            files.append(parts[2])
        elif parts and parts[0].startswith("/"):
            files.append(parts[0])
    return files


def base_root(root):
    """A root with BASE_TOOLS and their libraries only."""
    for d in ("bin", "usr/bin", "lib", "lib64", "usr/lib", "dev", "proc", "tmp", "etc", "root"):
        os.makedirs(os.path.join(root, d), exist_ok=True)
    for tool in BASE_TOOLS:
        src = shutil.which(tool)
        assert src, "this machine has no %s" % tool
        real = os.path.realpath(src)
        for dst in ("bin/" + tool, "usr/bin/" + tool):
            shutil.copy2(real, os.path.join(root, dst))
        for lib in ldd(real):
            dst = os.path.join(root, lib.lstrip("/"))
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if not os.path.exists(dst):
                shutil.copy2(os.path.realpath(lib), dst)
    with open(os.path.join(root, "etc/passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/bash\n")
    with open(os.path.join(root, "etc/group"), "w") as f:
        f.write("root:x:0:\n")
    libs = [os.path.basename(p) for p in glob.glob(os.path.join(root, "**/*.so*"), recursive=True)]
    theirs = [lib for lib in libs if lib.startswith(OURS)]
    assert not theirs, "the base root has libraries of our build: %s" % theirs
    log("base root: %d tools, %d libraries (%s)" % (len(BASE_TOOLS), len(libs), ", ".join(sorted(libs))))


def on_base_root(root, node, script):
    """bash -c SCRIPT chrooted into the base root, the node's directories bound where a host has
    them, as root (the runbooks' sudo -E)."""
    binds = ["etc/kubernetes", "var/lib", "usr/local/bin", "home/core"]
    setup = "".join('mkdir -p "$1/%s" "$2/%s" && mount --bind "$2/%s" "$1/%s" && ' % (d, d, d, d) for d in binds)
    return in_namespace(setup + 'mount --rbind /dev "$1/dev" && mount -t proc proc "$1/proc" && '
                        'exec chroot "$1" /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root '
                        '/bin/bash -c "$3"', root, node, script)


def openssl(*args):
    run(["openssl"] + list(args))


def make_certs(d, ip):
    os.makedirs(d, exist_ok=True)
    p = lambda n: os.path.join(d, n)  # noqa: E731
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", p("ca.key"), "-out", p("ca.crt"), "-days", "2", "-subj", "/CN=etcd-signer",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    for name, ext in (("serving", "subjectAltName=IP:%s\nextendedKeyUsage=serverAuth,clientAuth" % ip),
                      ("client", "extendedKeyUsage=clientAuth")):
        openssl("req", *ec, "-keyout", p(name + ".key"), "-out", p(name + ".csr"), "-subj", "/CN=etcd-" + name)
        with open(p(name + ".ext"), "w") as f:
            f.write(ext + "\n")
        openssl("x509", "-req", "-in", p(name + ".csr"), "-CA", p("ca.crt"), "-CAkey", p("ca.key"), "-days", "2",
                "-set_serial", str(int(time.time() * 1000)), "-extfile", p(name + ".ext"), "-out", p(name + ".crt"))


def free_ip():
    """A loopback address whose etcd ports are free: the scripts name https://IP:2379."""
    for last in range(2, 250):
        ip = "127.91.%d.%d" % (os.getpid() % 200, last)
        ok = True
        for port in (2379, 2380, 2381):
            with socket.socket() as s:
                try:
                    s.bind((ip, port))
                except OSError:
                    ok = False
        if ok:
            return ip
    raise AssertionError("no free loopback address for etcd")


def start_etcd(ip, certs):
    c = lambda n: os.path.join(certs, n)  # noqa: E731
    tls = ["--cert-file", c("serving.crt"), "--key-file", c("serving.key"), "--trusted-ca-file", c("ca.crt"),
           "--client-cert-auth"]
    logf = open(os.path.join(TMP, "etcd.log"), "w")
    p = subprocess.Popen(["etcd", "--name", "m0", "--data-dir", os.path.join(TMP, "etcd-data"),
                          "--listen-client-urls", "https://%s:2379" % ip,
                          "--listen-client-http-urls", "https://%s:2381" % ip,
                          "--advertise-client-urls", "https://%s:2379" % ip,
                          "--listen-peer-urls", "http://%s:2380" % ip,
                          "--initial-advertise-peer-urls", "http://%s:2380" % ip,
                          "--initial-cluster", "m0=http://%s:2380" % ip] + tls, stdout=logf, stderr=subprocess.STDOUT)
    PROCS.append(p)
    ctl = ["etcdctl", "--endpoints", "https://%s:2379" % ip, "--cacert", c("ca.crt"), "--cert", c("client.crt"),
           "--key", c("client.key")]
    for _ in range(100):
        if run(ctl + ["put", "/kubernetes.io/x", "v"], check=False).returncode == 0:
            return
        time.sleep(0.1)
    raise AssertionError("etcd on %s did not start" % ip)


def node_files(node, ip, certs):
    """What the etcd pod and the installer leave on a master: the scripts and etcd.env, the
    certificates, the static pods' manifests and revision directories."""
    etc = os.path.join(node, "etc/kubernetes")
    res = os.path.join(etc, "static-pod-resources")
    scripts = os.path.join(res, "etcd-certs/configmaps/etcd-scripts")
    secrets = os.path.join(res, "etcd-certs/secrets/etcd-all-certs")
    for d in (scripts, secrets, os.path.join(etc, "manifests"), os.path.join(node, "usr/local/bin"),
              os.path.join(node, "home/core/assets"), os.path.join(node, "var/lib/etcd")):
        os.makedirs(d, exist_ok=True)
    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    shutil.copy(os.path.join(repo, "manifests/etcd-scripts/cluster-backup.sh"), os.path.join(node, "usr/local/bin"))
    with open(os.path.join(repo, "manifests/etcd-scripts/etcd-common-tools")) as f:
        tools = f.read().replace("NODE_NAME", "master-0")
    with open(os.path.join(scripts, "etcd-common-tools"), "w") as f:
        f.write(tools)
    for name in ("ca.crt", "client.crt", "client.key"):
        shutil.copy(os.path.join(certs, name), secrets)
    in_pod = "/etc/kubernetes/static-pod-certs/secrets/etcd-all-certs/"
    with open(os.path.join(scripts, "etcd.env"), "w") as f:
        f.write("export NODE_NODE_ENVVAR_NAME_ETCD_URL_HOST=%s\nexport NODE_NODE_ENVVAR_NAME_ETCD_NAME=master-0\n"
                "export ETCDCTL_CACERT=%sca.crt\nexport ETCDCTL_CERT=%sclient.crt\nexport ETCDCTL_KEY=%sclient.key\n"
                % (ip, in_pod, in_pod, in_pod))
    for pod in ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"):
        os.makedirs(os.path.join(res, "%s-pod-3" % pod), exist_ok=True)
        with open(os.path.join(res, "%s-pod-3" % pod, "%s-pod.yaml" % pod), "w") as f:
            f.write("revision 3\n")
        with open(os.path.join(etc, "manifests", "%s-pod.yaml" % pod), "w") as f:
            f.write("volumes:\n- hostPath:\n    path: /etc/kubernetes/static-pod-resources/%s-pod-3\n" % pod)


def check_install(node):
    r = install(node)
    assert r.returncode == 0, "install-host-tools failed: %s" % r.stderr
    first = copies(node)
    assert len(first) == 1 and script_copy(node) == first[0], (first, r.stderr)
    lib = os.path.join(node, "usr/local/bin", first[0], "lib")
    have = sorted(os.listdir(lib))
    need = {os.path.basename(p) for p in ldd(BIN)}
    assert need <= set(have), "the copy lacks %s" % sorted(need - set(have))
    log("installed %s: %d files in lib/ (every library ldd names, and the loader)" % (first[0], len(have)))
    r = install(node)
    assert r.returncode == 0 and copies(node) == first and "already" in r.stderr, (copies(node), r.stderr)
    log("run again: nothing changed")
    # Started through the script it installed (the copy's loader runs it, so /proc/self/exe is
    # the loader): it still knows itself, and changes nothing.
    r = in_namespace('mount --bind "$1/usr/local/bin" /usr/local/bin && exec /usr/local/bin/cluster-etcd-operator '
                     'install-host-tools --dir /usr/local/bin', node)
    assert r.returncode == 0 and copies(node) == first and "already" in r.stderr, (copies(node), r.stderr)
    log("run through its own script: nothing changed")
    return first[0]


def check_new_builds(node, current):
    """Two more builds (the binary with bytes appended: another digest) installed one after the
    other: the last one's copy and the one before are kept, the first goes."""
    names = [current]
    for i in range(2):
        other = os.path.join(TMP, "build-%d" % i)
        os.makedirs(other, exist_ok=True)
        b = os.path.join(other, "cluster-etcd-operator")
        shutil.copy2(BIN, b)
        with open(b, "ab") as f:
            f.write(b"\0build %d\n" % i)
        r = install(node, b)
        assert r.returncode == 0, r.stderr
        names.append(script_copy(node))
    assert len(set(names)) == 3, names
    assert copies(node) == sorted(names[1:]), "kept %s, expected the last two of %s" % (copies(node), names)
    log("new builds: the script names the newest copy, the one before is kept, the oldest removed")
    return names[-1]


def check_broken_copy_refused(node):
    """A build whose copy cannot start (its loader replaced by garbage) changes nothing."""
    before = script_copy(node)
    other = os.path.join(TMP, "build-broken")
    os.makedirs(other, exist_ok=True)
    b = os.path.join(other, "cluster-etcd-operator")
    shutil.copy2(BIN, b)
    with open(b, "ab") as f:
        f.write(b"\0broken\n")
    # Installed once (the script names its copy), the script put back to the good copy by hand,
    # then that copy's loader broken: installed again, it finds its copy there, starts it as the
    # script would, and must refuse to switch to it.
    r = install(node, b)
    assert r.returncode == 0, r.stderr
    broken = script_copy(node)
    with open(os.path.join(node, "usr/local/bin/cluster-etcd-operator")) as f:
        text = f.read()
    with open(os.path.join(node, "usr/local/bin/cluster-etcd-operator"), "w") as f:
        f.write(text.replace(broken, before))
    loader = [p for p in glob.glob(os.path.join(node, "usr/local/bin", broken, "lib", "ld-linux*"))][0]
    with open(loader, "wb") as f:
        f.write(b"not a loader\n")
    r = install(node, b)
    assert r.returncode == 1, "a copy that does not start was installed: %s" % r.stderr
    assert "does not start through its own loader" in r.stderr, r.stderr
    assert script_copy(node) == before, "the script no longer names the copy that works"
    log("a copy that does not start is refused; the script still names %s" % before)
    shutil.rmtree(os.path.join(node, "usr/local/bin", broken))


def main():
    if os.geteuid() != 0:
        print("SKIP: needs root (mount namespaces, chroot), as kubelet-sim does")
        sys.exit(77)
    node = os.path.join(TMP, "master-0")
    ip = free_ip()
    certs = os.path.join(TMP, "certs")
    make_certs(certs, ip)
    start_etcd(ip, certs)
    node_files(node, ip, certs)

    current = check_install(node)
    check_broken_copy_refused(node)
    current = check_new_builds(node, current)

    root = os.path.join(TMP, "base-root")
    base_root(root)
    # The root really lacks our libraries: the binary started by the root's own loader fails.
    r = on_base_root(root, node, "/usr/local/bin/%s/cluster-etcd-operator --version" % current)
    assert r.returncode != 0 and "error while loading shared libraries" in r.stderr, (r.returncode, r.stderr)
    log("on the base root, the binary alone: %s" % r.stderr.strip().splitlines()[-1])
    r = on_base_root(root, node, "cluster-etcd-operator --version")
    assert r.returncode == 0 and r.stdout.startswith("cluster-etcd-operator "), (r.returncode, r.stdout, r.stderr)
    # The runbook's backup (backup.md): sudo -E /usr/local/bin/cluster-backup.sh DIR, here as root.
    r = on_base_root(root, node, "/usr/local/bin/cluster-backup.sh --force /home/core/assets/backup")
    assert r.returncode == 0, "cluster-backup.sh on the base root: exit %d\n%s%s" % (r.returncode, r.stdout, r.stderr)
    out = os.listdir(os.path.join(node, "home/core/assets/backup"))
    snaps = [f for f in out if f.startswith("snapshot_") and f.endswith("__POSSIBLY_DIRTY__.db")]
    tars = [f for f in out if f.startswith("static_kuberesources_")]
    assert len(snaps) == 1 and len(tars) == 1, out
    status = run(["etcdutl" if shutil.which("etcdutl") else "etcdctl", "snapshot", "status", "-w", "json",
                  os.path.join(node, "home/core/assets/backup", snaps[0])], check=False)
    assert status.returncode == 0 and json.loads(status.stdout)["totalKey"] >= 1, status.stdout + status.stderr
    listed = run(["tar", "-tzf", os.path.join(node, "home/core/assets/backup", tars[0])]).stdout
    assert "static-pod-resources/etcd-pod-3/etcd-pod.yaml" in listed, listed
    log("cluster-backup.sh on the base root: %s" % ", ".join(sorted(out)))
    log("ok")


if __name__ == "__main__":
    try:
        main()
    finally:
        for p in PROCS:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    p.kill()
        if os.environ.get("KEEP_TEST_DIRS") != "1":
            shutil.rmtree(TMP, ignore_errors=True)
