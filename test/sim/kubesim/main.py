"""Command line, startup and shutdown of kube-apiserver-sim.

Startup order matters: bind the listener first (port 0 must be known for the
certificates and DIR/server-url), then storage, the watch cache, CRDs and default
namespaces, then serve, and only then write DIR/ready.  SIGTERM/SIGINT stop the
server, the watch cache and the private etcd (by PID), and remove DIR/ready.
"""

import argparse
import glob
import ipaddress
import json
import os
import signal
import socket
import sys
import threading
import time

from kubeletsim import yaml_lite
from . import cel, pki
from .api import App
from .controllers import Controllers
from .etcd import EtcdClient, EtcdError, prefix_end
from .etcd_proc import PrivateEtcd
from .faults import Faults
from .kasfollow import KasFollower
from .rbac import Rbac
from .resources import Registry
from .server import SimHTTPServer, make_ssl_context
from .simops import SimOps
from .store import Store, WriteOpts
from .watchhub import WatchHub

_log_lock = threading.Lock()
_verbose = False


def log(msg):
    t = time.time()
    stamp = time.strftime("%m%d %H:%M:%S", time.localtime(t)) + ".%06d" % int((t % 1) * 1e6)
    with _log_lock:
        sys.stderr.write("I%s %d sim] %s\n" % (stamp, os.getpid(), msg))
        sys.stderr.flush()


def parse_args(argv):
    p = argparse.ArgumentParser(prog="kube-apiserver-sim",
                                description="Kubernetes API simulator backed by etcd (tests only)")
    p.add_argument("--dir", required=True, help="state directory (certs, kubeconfig, etcd data)")
    p.add_argument("--listen", default="127.0.0.1:0", help="IP:PORT in 127.0.0.0/8; port 0 = free")
    p.add_argument("--kubeconfig-server", help="the URL DIR/kubeconfig names, when clients reach this "
                   "server through a front (hack/sim-up.sh SIM_HTTP2); DIR/kubeconfig-direct names "
                   "this server itself")
    p.add_argument("--crd-dir", action="append", default=[], help="apply every CRD YAML/JSON in DIR")
    p.add_argument("--etcd-endpoints", help="comma-separated external etcd URLs (mode b)")
    p.add_argument("--etcd-cacert")
    p.add_argument("--etcd-cert")
    p.add_argument("--etcd-key")
    p.add_argument("--etcd-local-file",
                   help="file of the masters' addresses, one a line: each master's kube-apiserver also "
                        "reaches https://localhost:2379 there (certificate checked for localhost)")
    p.add_argument("--kas-node-names", default="", help="node names for kubeapiservers status")
    p.add_argument("--etcd-wait", type=float, default=30.0,
                   help="seconds to wait for etcd to answer at startup (default 30)")
    p.add_argument("--compact-keep", type=int, default=0,
                   help="compact etcd every 5 s keeping the last N revisions (0 = never)")
    p.add_argument("--compact-interval", type=float, default=5.0, help=argparse.SUPPRESS)
    p.add_argument("--plain-http", action="store_true", help="serve plain HTTP, no auth (debug)")
    p.add_argument("-v", "--verbose", action="store_true", help="log every request")
    a = p.parse_args(argv)
    host, _, port = a.listen.rpartition(":")
    try:
        ip = ipaddress.ip_address(host)
        a.port = int(port)
    except ValueError:
        p.error("--listen must be IP:PORT")
    if ip not in ipaddress.ip_network("127.0.0.0/8"):
        p.error("--listen must be a loopback address in 127.0.0.0/8")
    a.ip = str(ip)
    if a.etcd_endpoints:
        a.etcd_endpoints = [e.strip() for e in a.etcd_endpoints.split(",") if e.strip()]
    a.kas_node_names = [n for n in a.kas_node_names.split(",") if n]
    for d in a.crd_dir:
        if not os.path.isdir(d):
            # fail fast: tests against a simulator without its CRDs fail confusingly later
            p.error("--crd-dir %s: no such directory" % d)
    return a


def _write(path, text, mode=0o644):
    tmp = path + ".tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "w") as f:
        f.write(text)
    os.replace(tmp, path)


def load_crds_from_etcd(etcd, registry):
    crdt = registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    p = crdt.prefix()
    _, kvs, _, _ = etcd.range(p, prefix_end(p))
    for kv in kvs:
        try:
            registry.install_crd(json.loads(kv.value))
        except (ValueError, KeyError, TypeError) as e:
            log("skipping unreadable CRD %s: %s" % (kv.key, e))


def apply_crd_dirs(dirs, store, registry):
    crdt = registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    opts = WriteOpts("kube-apiserver-sim")
    n = 0
    for d in dirs:
        files = sorted(glob.glob(os.path.join(d, "*.yaml")) + glob.glob(os.path.join(d, "*.yml"))
                       + glob.glob(os.path.join(d, "*.json")))
        if not files:
            log("warning: no CRD files in %s" % d)
        for f in files:
            with open(f, "rb") as fh:
                docs = yaml_lite.load_all(fh.read())
            for doc in docs:
                if not isinstance(doc, dict) or doc.get("kind") != "CustomResourceDefinition":
                    continue
                name = (doc.get("metadata") or {}).get("name")
                cur, _ = store.read(crdt, None, name)
                if cur is None:
                    store.create(crdt, None, doc, opts)
                elif cur.get("spec") != doc.get("spec"):
                    doc.setdefault("metadata", {})["resourceVersion"] = \
                        cur["metadata"]["resourceVersion"]
                    store.update(crdt, None, name, doc, opts)
                n += 1
    if dirs:
        log("applied %d CRDs" % n)


def ensure_namespaces(store, registry, names):
    nst = registry.lookup("", "v1", "namespaces")
    opts = WriteOpts("kube-apiserver-sim")
    for n in names:
        if store.read(nst, None, n)[0] is None:
            try:
                store.create(nst, None, {"apiVersion": "v1", "kind": "Namespace",
                                         "metadata": {"name": n}}, opts)
            except Exception as e:  # a concurrent creator is fine
                if "already exists" not in str(e):
                    raise


def write_kubeconfigs(d, url, front_url, token, plain_http):
    """DIR/kubeconfig names the URL clients use: this server, or the front before it."""
    pki.write_kubeconfig(d, front_url or url, token, plain_http)
    if front_url:
        pki.write_kubeconfig(d, url, token, plain_http, name="kubeconfig-direct")


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    os.makedirs(a.dir, exist_ok=True)
    d = os.path.abspath(a.dir)
    for f in ("ready",):
        if os.path.exists(os.path.join(d, f)):
            os.unlink(os.path.join(d, f))
    _write(os.path.join(d, "sim.pid"), "%d\n" % os.getpid())

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((a.ip, a.port))
    port = sock.getsockname()[1]
    scheme = "http" if a.plain_http else "https"
    url = "%s://%s:%d" % (scheme, a.ip, port)

    token = pki.ensure_pki(d, a.ip)
    private = None
    try:
        if a.etcd_endpoints:
            etcd = EtcdClient(a.etcd_endpoints, a.etcd_cacert, a.etcd_cert, a.etcd_key, log=log,
                              local_file=a.etcd_local_file)
            log("using external etcd %s" % ",".join(a.etcd_endpoints))
            # Like a kube-apiserver on a bootstrap host, which is configured before the
            # etcd it uses runs (a kubelet starts both): clients get the kubeconfig now
            # and see connection refused until DIR/ready appears.
            write_kubeconfigs(d, url, a.kubeconfig_server, token, a.plain_http)
            _write(os.path.join(d, "server-url"), url + "\n")
        else:
            private = PrivateEtcd(a.ip, os.path.join(d, "etcd"), os.path.join(d, "etcd.log"), log)
            client_url = private.start()
            _write(os.path.join(d, "etcd.pid"), "%d\n" % private.pid)
            _write(os.path.join(d, "etcd-url"), client_url + "\n")
            etcd = EtcdClient([client_url], log=log)
        _wait_etcd(etcd, stop, a.etcd_wait)

        registry = Registry()
        hub = WatchHub(etcd, log)
        hub.run_in_background(etcd.current_revision() - 1000)
        faults = Faults()
        store = Store(etcd, registry, cel.evaluate, log)
        ctrls = Controllers(store, registry, hub, log, a.compact_keep, a.compact_interval)
        store.after_write.append(ctrls.after_write)
        authz = Rbac(store, registry, token, log)
        store.after_write.append(authz.after_write)
        load_crds_from_etcd(etcd, registry)
        ensure_namespaces(store, registry, ["default", "kube-system", "kube-public",
                                            "kube-node-lease"])
        apply_crd_dirs(a.crd_dir, store, registry)
        ctrls.start()

        holder = {}
        simops = SimOps(lambda: holder["app"], etcd, hub, faults, log)
        app = App(registry, store, hub, faults, token, a.plain_http, "%s:%d" % (a.ip, port), log,
                  a.verbose, simops, authz)
        holder["app"] = app
        ssl_ctx = None if a.plain_http else make_ssl_context(
            os.path.join(d, "server.crt"), os.path.join(d, "server.key"), os.path.join(d, "ca.crt"))
        httpd = SimHTTPServer(sock, app, ssl_ctx)
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.25},
                         name="http", daemon=True).start()

        follower = None
        if a.etcd_endpoints:
            follower = KasFollower(store, registry, hub, etcd, a.etcd_endpoints, a.kas_node_names, log)
            follower.start()

        hub.ready.wait(10)
        write_kubeconfigs(d, url, a.kubeconfig_server, token, a.plain_http)
        _write(os.path.join(d, "server-url"), url + "\n")
        _write(os.path.join(d, "ready"), url + "\n")
        log("serving on %s (dir %s, storage %s)" % (url, d, ",".join(etcd.endpoints)))

        while not stop.wait(1.0):
            if private and private.proc.poll() is not None:
                log("private etcd exited with status %s; stopping" % private.proc.returncode)
                break
        log("shutting down")
        try:
            os.unlink(os.path.join(d, "ready"))
        except OSError:
            pass
        httpd.shutdown()
        hub.stop()
        ctrls.stop()
        if follower:
            follower.stop()
    finally:
        if private:
            private.stop()
            log("private etcd stopped")
    return 0


def _wait_etcd(etcd, stop, timeout=30.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            etcd.current_revision()
            return
        except EtcdError as e:
            if time.monotonic() > deadline or stop.is_set():
                raise SystemExit("etcd not reachable: %s" % e)
            time.sleep(0.2)
