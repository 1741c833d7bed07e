#!/usr/bin/env python3
"""with-kube.py [--fault-proxy | --http2-front N] [--no-watch-cache] CMD [ARGS...]: runs CMD
against Kubernetes' own control plane (test/kube/control-plane on a TLS etcd of its own, client certificates
required, on a random 127.a.b.0/24: test_control_plane.py's World and start_control_plane),
and stops everything it started, by PID, however CMD ends (its exit, ctest's timeout, ^C:
SIGTERM/SIGINT/SIGHUP reach CMD first; a SIGKILL of this launcher reaches its children through
PR_SET_PDEATHSIG).

CMD gets:
- KUBECONFIG: the admin's (client certificate) straight to kube-apiserver; with --fault-proxy,
  test/kube/api-fault-proxy's in front of it, with --sim-in-band (a POST of /sim/faults,
  /sim/drop-watches, /sim/latency, /sim/compact, a GET of /sim/writes through the test's own
  Kubernetes client reaches the proxy's controls) and the token of a
  cluster-admin ServiceAccount (the proxy passes tokens on, not client certificates);
- KUBE_DIR: a scratch directory for the test's own files (removed afterwards; KEEP_TEST_DIRS=1
  keeps it), with the control plane's in KUBE_DIR/kube;
- with --http2-front N (implies --fault-proxy): KUBECONFIG names nghttpx (Debian's
  nghttp2-proxy) in front of the fault proxy, serving the API over HTTP/2 as kube-apiserver
  does (ALPN h2 and http/1.1, a certificate of the control plane's CA) and ending every client
  connection with a GOAWAY after N streams (kube-apiserver's --goaway-chance ends a fraction
  of them too). Its backend is the fault proxy (HTTP/1.1 over TLS), so the /sim/* controls
  still answer through the test's client. nghttpx logs the protocol of every request
  (KUBE_DIR/h2-front/access.log); CMD passes only if every request went over HTTP/2 and
  there were more than N of them (kube-apiserver logs no request's protocol: its audit events
  have none, so the front is what shows it);
- with --no-watch-cache, kube-apiserver runs with --watch-cache=false: every watch is served by
  etcd itself, so a watch resuming from a resourceVersion etcd has compacted gets 410 Gone (with
  the watch cache, kube-apiserver answers it from its own history instead);
- PATH starting with the pinned release's binaries (kubectl matches the server).
On failure the tail of every log is printed. Exit status: CMD's (128+N for a signal N).
"""
import base64
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_control_plane import CP, World, _die_with_parent, start_control_plane, start_fault_proxy, wait_for  # noqa: E402

SA_NS, SA = "kube-system", "integration-test"


def log(msg):
    sys.stderr.write("[%s] with-kube: %s\n" % (time.strftime("%H:%M:%S"), msg))
    sys.stderr.flush()


def start_proxy(w, kdir, etcd_url):
    """The fault proxy with its controls in band, able to compact etcd; its kubeconfig."""
    pdir = start_fault_proxy(w, kdir, etcd_url)
    admin = os.path.join(kdir, "kubeconfig")
    w.kubectl(admin, "-n", SA_NS, "create", "serviceaccount", SA)
    w.kubectl(admin, "create", "clusterrolebinding", SA, "--clusterrole=cluster-admin",
              "--serviceaccount=%s:%s" % (SA_NS, SA))
    token = w.kubectl(admin, "-n", SA_NS, "create", "token", SA, "--duration=24h").stdout.strip()
    ca = base64.b64encode(open(os.path.join(kdir, "ca.crt"), "rb").read()).decode()
    kc = os.path.join(w.dir, "kubeconfig")
    with open(kc, "w") as f:
        f.write("apiVersion: v1\nkind: Config\ncurrent-context: test\nclusters:\n- name: proxy\n  cluster:\n"
                "    server: %s\n    certificate-authority-data: %s\nusers:\n- name: test\n  user:\n"
                "    token: %s\ncontexts:\n- name: test\n  context:\n    cluster: proxy\n    user: test\n"
                "    namespace: default\n" % (open(os.path.join(pdir, "url")).read().strip(), ca, token))
    return kc


def start_h2_front(w, kdir, kc, streams):
    """nghttpx in front of the fault proxy (its kubeconfig kc): HTTP/2 with a GOAWAY after
    every `streams` streams of a client connection; the kubeconfig naming it."""
    ip = w.net + ".4"
    crt, key = subprocess.run([sys.executable, CP, "serving-cert", kdir, "h2-front", ip], capture_output=True,
                              text=True, check=True).stdout.split()
    hdir = os.path.join(w.dir, "h2-front")
    os.makedirs(hdir)
    s = socket.socket()
    s.bind((ip, 0))
    port = s.getsockname()[1]
    s.close()
    text = open(kc).read()
    backend = re.search(r"server: https://([0-9.]+):([0-9]+)", text)
    front = "https://%s:%d" % (ip, port)
    # Watches stay open for minutes: no read or write timeout on a stream.
    p = w.spawn("h2-front", ["nghttpx", "--conf=/dev/null", "--frontend=%s,%d" % (ip, port),
                             "--backend=%s,%s;;tls" % backend.groups(), "--insecure",
                             "--frontend-max-requests=%d" % streams, "--workers=1", "--no-via",
                             "--no-server-rewrite", "--no-ocsp", "--frontend-read-timeout=10m",
                             "--backend-read-timeout=10m", "--backend-write-timeout=10m",
                             "--stream-read-timeout=0", "--stream-write-timeout=0",
                             "--backend-keep-alive-timeout=10m",
                             "--accesslog-file=" + os.path.join(hdir, "access.log"),
                             "--accesslog-format=$alpn \"$request\" $status",
                             "--errorlog-file=" + os.path.join(hdir, "error.log"), key, crt])  # key first

    def h2():
        assert p.poll() is None, "nghttpx exited %s" % p.returncode
        r = subprocess.run(["curl", "-sk", "--http2", "-o", "/dev/null", "-w", "%{http_version}", front + "/healthz"],
                           capture_output=True, text=True)
        return r.stdout == "2"
    wait_for("the HTTP/2 front to answer over HTTP/2", h2, 30, interval=0.1)
    kc_front = os.path.join(w.dir, "kubeconfig-h2")
    with open(kc_front, "w") as f:
        f.write(text.replace(backend.group(0), "server: " + front))
    return kc_front


def check_h2(w, streams):
    """Every request through the front went over HTTP/2, and more than one connection's worth."""
    lines = open(os.path.join(w.dir, "h2-front", "access.log")).read().splitlines()
    other = [line for line in lines if not line.startswith("h2 ")]
    log("%d requests through the HTTP/2 front, %d of them not over HTTP/2; GOAWAY after every %d streams "
        "of a connection: at least %d sent" % (len(lines), len(other), streams, len(lines) // streams))
    if other or len(lines) <= streams:
        for line in other[:5]:
            sys.stderr.write(line + "\n")
        log("expected every request over HTTP/2 and more than one connection's worth")
        return False
    return True


def main(argv):
    proxy, h2, watch_cache = False, 0, True
    while argv and argv[0].startswith("--"):
        if argv[0] == "--fault-proxy":
            proxy, argv = True, argv[1:]
        elif argv[0] == "--no-watch-cache":
            watch_cache, argv = False, argv[1:]
        elif argv[0] == "--http2-front" and len(argv) > 1 and argv[1].isdigit() and int(argv[1]) > 0:
            proxy, h2, argv = True, int(argv[1]), argv[2:]
        else:
            sys.exit(__doc__)
    cmd = argv
    if not cmd:
        sys.exit(__doc__)
    if h2 and not shutil.which("nghttpx"):
        sys.exit("with-kube: nghttpx not found (hack/install-deps.sh installs nghttp2-proxy)")
    w = World()
    child = None
    status = 1

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    try:
        t0 = time.monotonic()
        kdir, kc, etcd_url, _ = start_control_plane(w, kas_node_names="", watch_cache=watch_cache)
        if proxy:
            kc = start_proxy(w, kdir, etcd_url)
        if h2:
            kc = start_h2_front(w, kdir, kc, h2)
        log("control plane%s serving after %.1f s" % (" and fault proxy" if proxy else "", time.monotonic() - t0)
            + (" behind an HTTP/2 front" if h2 else ""))
        env = dict(os.environ, KUBECONFIG=kc, KUBE_DIR=w.dir, PATH=w.bin + os.pathsep + os.environ.get("PATH", ""))
        child = subprocess.Popen(cmd, env=env, preexec_fn=_die_with_parent)
        status = child.wait()
        child = None
        status = 128 - status if status < 0 else status
        if status == 0 and h2 and not check_h2(w, h2):
            status = 1
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else 1
        if child is not None and child.poll() is None:
            child.terminate()
            try:
                child.wait(timeout=10)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
    finally:
        keep = os.environ.get("KEEP_TEST_DIRS", "0") not in ("", "0")
        if keep:  # World.close removes its directory: keep a copy of what matters
            def skip(d, names):  # etcd's data, and sockets (haproxy's), which cannot be copied
                return [n for n in names if n == "etcd" or not (os.path.isdir(os.path.join(d, n)) or
                                                                os.path.isfile(os.path.join(d, n)))]
            shutil.copytree(w.dir, w.dir + "-kept", ignore=skip, dirs_exist_ok=True)
            log("kept %s-kept" % w.dir)
        w.close(status != 0)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
