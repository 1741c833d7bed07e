#!/usr/bin/env python3
"""with-kube.py [--fault-proxy] CMD [ARGS...]: runs CMD against Kubernetes' own control plane
(test/kube/control-plane on a TLS etcd of its own, client certificates required, on a random
127.a.b.0/24: test_control_plane.py's World and start_control_plane), as with-sim.sh runs a
test against the API simulator, and stops everything it started, by PID, however CMD ends
(its exit, ctest's timeout, ^C: SIGTERM/SIGINT/SIGHUP reach CMD first; a SIGKILL of this
launcher reaches its children through PR_SET_PDEATHSIG).

CMD gets:
- KUBECONFIG: the admin's (client certificate) straight to kube-apiserver; with --fault-proxy,
  test/kube/api-fault-proxy's in front of it, with --sim-in-band (a POST of /sim/faults,
  /sim/drop-watches, /sim/latency, /sim/compact, a GET of /sim/writes through the test's own
  Kubernetes client reaches the proxy's controls, as on the simulator) and the token of a
  cluster-admin ServiceAccount (the proxy passes tokens on, not client certificates);
- KUBE_DIR: a scratch directory for the test's own files (removed afterwards; KEEP_TEST_DIRS=1
  keeps it), with the control plane's in KUBE_DIR/kube;
- PATH starting with the pinned release's binaries (kubectl matches the server).
On failure the tail of every log is printed. Exit status: CMD's (128+N for a signal N).
"""
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from test_control_plane import World, _die_with_parent, start_control_plane, start_fault_proxy  # noqa: E402

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


def main(argv):
    proxy = bool(argv) and argv[0] == "--fault-proxy"
    cmd = argv[1:] if proxy else argv
    if not cmd:
        sys.exit(__doc__)
    w = World()
    child = None
    status = 1

    def on_signal(signum, _frame):
        raise SystemExit(128 + signum)
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    try:
        t0 = time.monotonic()
        kdir, kc, etcd_url, _ = start_control_plane(w, kas_node_names="")
        if proxy:
            kc = start_proxy(w, kdir, etcd_url)
        log("control plane%s serving after %.1f s" % (" and fault proxy" if proxy else "", time.monotonic() - t0))
        env = dict(os.environ, KUBECONFIG=kc, KUBE_DIR=w.dir, PATH=w.bin + os.pathsep + os.environ.get("PATH", ""))
        child = subprocess.Popen(cmd, env=env, preexec_fn=_die_with_parent)
        status = child.wait()
        child = None
        status = 128 - status if status < 0 else status
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
