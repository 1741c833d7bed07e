"""Shared pieces of the e2e scenarios (Python 3 stdlib): temp dirs, Kubernetes' own
control plane, kubelet simulators, render, kubectl, and cleanup of everything by
PID however a scenario ends."""
import base64
import http.client
import json
import os
import random
import re
import shutil
import signal
import ssl
import stat
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.parse

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# Kubernetes' own control plane (test/kube/control-plane).
KUBE_CP = os.path.join(ROOT, "test", "kube", "control-plane")
# The API faults of e2e/chaos in front of that kube-apiserver, for the operator alone.
FAULT_PROXY = os.path.join(ROOT, "test", "kube", "api-fault-proxy")
KUBELET = os.path.join(ROOT, "test", "sim", "kubelet-sim")
# Strict images: what each image reference runs (images/<name>/Containerfile, built into
# <build>/images/<name> by hack/image-rootfs.py); an image not listed cannot be pulled.
IMAGES = [("quay.io/openshift/etcd[@:]*", "etcd"),
          ("quay.io/openshift/etcd-3.6[@:]*", "etcd-3.6"),
          ("quay.io/openshift/*cluster-etcd-operator[@:]*", "operator"),
          ("quay.io/openshift/*:sim", "base")]

# The reads the scenarios poll with (get_json, every 0.5 s while they wait) go straight to the
# API over a kept-alive connection: a kubectl process costs about 0.2 s of CPU, and on the
# 2-core CI machine the polls alone took a third of it. kubectl stays the client of every
# write, every runbook command, the watches and any read this table does not know.
# kubectl's resource name -> (API group/version path, plural, namespaced).
API_RESOURCES = {
    "configmap": ("/api/v1", "configmaps", True),
    "secret": ("/api/v1", "secrets", True),
    "pods": ("/api/v1", "pods", True),
    "events": ("/api/v1", "events", True),
    "endpoints": ("/api/v1", "endpoints", True),
    "service": ("/api/v1", "services", True),
    "pvc": ("/api/v1", "persistentvolumeclaims", True),
    "namespace": ("/api/v1", "namespaces", False),
    "job": ("/apis/batch/v1", "jobs", True),
    "cronjob": ("/apis/batch/v1", "cronjobs", True),
    "deployment": ("/apis/apps/v1", "deployments", True),
    "pdb": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "clusterrole": ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    "rolebinding": ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    "etcd": ("/apis/operator.openshift.io/v1", "etcds", False),
    "kubeapiservers.operator.openshift.io": ("/apis/operator.openshift.io/v1", "kubeapiservers", False),
    "etcdbackup": ("/apis/operator.openshift.io/v1alpha1", "etcdbackups", False),
    "etcdbackups": ("/apis/operator.openshift.io/v1alpha1", "etcdbackups", False),
    "co": ("/apis/config.openshift.io/v1", "clusteroperators", False),
    "backup.config.openshift.io": ("/apis/config.openshift.io/v1alpha1", "backups", False),
    "machine": ("/apis/machine.openshift.io/v1beta1", "machines", True),
}


class ApiClient:
    """Requests with the kubeconfig's server, CA and token, as kubectl would send them: one
    kept-alive connection per thread, opened again (kubeconfig read again) when it breaks;
    429 and 5xx answers with Retry-After are retried as client-go does."""

    def __init__(self, kubeconfig):
        self.kubeconfig = kubeconfig
        self.local = threading.local()

    def _connect(self):
        with open(self.kubeconfig) as f:
            text = f.read()
        field = lambda k: re.search(r"^\s*%s: (\S+)$" % k, text, re.M).group(1)  # noqa: E731
        url = urllib.parse.urlsplit(field("server"))
        ctx = ssl.create_default_context(cadata=base64.b64decode(field("certificate-authority-data")).decode())
        if re.search(r"^\s*token: ", text, re.M):
            self.local.token = field("token")
        else:  # a client certificate (the real control plane's admin kubeconfig)
            self.local.token = None
            base = os.path.dirname(os.path.abspath(self.kubeconfig))
            ctx.load_cert_chain(*(os.path.join(base, field(k)) for k in ("client-certificate", "client-key")))
        self.local.conn = http.client.HTTPSConnection(url.hostname, url.port, context=ctx, timeout=60)

    def call(self, method, path, body=None, content_type="application/json"):
        """(status, parsed body or None). Only GETs are sent again after a broken connection.
        content_type: of the body (a PATCH's: application/merge-patch+json, ...)."""
        data = None if body is None else json.dumps(body).encode()
        for attempt in range(10):
            if getattr(self.local, "conn", None) is None:
                self._connect()
            try:
                headers = {"Accept": "application/json", "User-Agent": "e2e"}
                if self.local.token:
                    headers["Authorization"] = "Bearer " + self.local.token
                if data is not None:
                    headers["Content-Type"] = content_type
                self.local.conn.request(method, path, body=data, headers=headers)
                resp = self.local.conn.getresponse()
                answer = resp.read()
            except (OSError, http.client.HTTPException):
                self.local.conn.close()
                self.local.conn = None
                if attempt or method != "GET":
                    raise
                continue  # a kept-alive connection the server closed: once more on a new one
            retry = resp.getheader("Retry-After")
            if (resp.status == 429 or resp.status >= 500) and retry and retry.isdigit():
                time.sleep(min(int(retry), 10))
                continue
            try:
                return resp.status, json.loads(answer)
            except ValueError:
                return resp.status, None
        return resp.status, None


def api_path(args):
    """The API path of `kubectl get -o json ARGS`, or None when ARGS hold what it does not know."""
    args = list(args)
    if not args or args[0] not in API_RESOURCES:
        return None
    prefix, plural, namespaced = API_RESOURCES[args.pop(0)]
    ns, name, query = "default", None, {}
    while args:
        a = args.pop(0)
        if a == "-n" and args:
            ns = args.pop(0)
        elif a == "-A":
            ns = None
        elif a == "-l" and args:
            query["labelSelector"] = args.pop(0)
        elif a == "--field-selector" and args:
            query["fieldSelector"] = args.pop(0)
        elif not a.startswith("-") and name is None:
            name = a
        else:
            return None
    if name and (ns is None or query):
        return None
    path = prefix + ("/namespaces/%s" % ns if namespaced and ns else "") + "/" + plural
    path += "/" + urllib.parse.quote(name, safe=":") if name else ""
    return path + ("?" + urllib.parse.urlencode(query) if query else "")


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def _terminated(signum, frame):
    raise SystemExit(128 + signum)



def drop_large_files(path, limit):
    """Removes the regular files under path larger than limit bytes; returns the bytes freed."""
    freed = 0
    for d, _, files in os.walk(path):
        for f in files:
            p = os.path.join(d, f)
            try:
                st = os.lstat(p)
                if stat.S_ISREG(st.st_mode) and st.st_size > limit:
                    os.unlink(p)
                    freed += st.st_size
            except OSError:
                continue
    return freed


def tree_bytes(path):
    """Bytes of the regular files under path (files that vanish meanwhile count nothing)."""
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            try:
                st = os.lstat(os.path.join(d, f))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total

class Env:
    """One scenario's world. Use as a context manager: everything started is
    stopped on exit, test failures included."""

    def __init__(self, build_dir):
        self.build = os.path.abspath(build_dir)
        self.binary = os.path.join(self.build, "cluster-etcd-operator")
        self.probe = os.path.join(self.build, "test", "e2e", "etcd-probe")
        self.dir = tempfile.mkdtemp(prefix="ceo-e2e-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
        self.net = "127.%d.%d" % (random.randint(20, 250), random.randint(1, 250))
        self.procs = []
        self.kube_dir = None  # the real control plane's (start_kube)
        self.fault_proxy = None  # {"url", "control"} of start_fault_proxy()
        # Kubernetes' own kube-apiserver, kube-controller-manager and kube-scheduler
        # (hack/build-kube.sh) and the kubectl of the same release.
        self.kube_bin = kube_bin_dir()
        self.kubectl_bin = os.path.join(self.kube_bin, "kubectl")
        # the runbooks' `kubectl`, run word for word, is that release's too
        os.environ["PATH"] = self.kube_bin + os.pathsep + os.environ.get("PATH", "")
        self.kubeconfig = None
        self.kubectl_cache = os.path.join(self.dir, "kubectl-cache")
        self.client = None  # ApiClient of get_json and api()
        # Each master's kube-apiserver reaches its own etcd at https://localhost:2379: the control
        # plane's forwarder that stands for it (LocalEtcd) reads the masters' addresses from this
        # file (start_kubelet keeps it current).
        self.local_etcd_file = os.path.join(self.dir, "masters-local-etcd")
        self.master_addresses = {}
        self.on_exit = []  # called first on exit (e.g. stopping a supervisor that restarts processes)

    def __enter__(self):
        # SIGTERM (a CI runner or a user stopping ctest) would end Python at
        # once, leaving the control plane, etcd members and kubelets running:
        # turn it into an exception so __exit__ stops them.
        signal.signal(signal.SIGTERM, _terminated)
        return self

    def __exit__(self, *exc):
        # A second SIGTERM (ctest stopping its whole process group, then the test) must not
        # cut the cleanup short: what is still running would stay.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        for fn in reversed(self.on_exit):
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - keep stopping the rest
                log("stopping: %s" % e)
        for p, name in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        # The operator and the pods run with their ServiceAccounts' tokens: a request the
        # RBAC that render and the operator wrote does not allow fails the scenario, as it
        # would break a real cluster (kube-apiserver's audit log has every denial).
        denied = self.rbac_denials()
        if denied and exc[0] is None:
            log("RBAC denied %d request(s), first ones:\n  %s" % (len(denied), "\n  ".join(denied[:10])))
            exc = (AssertionError, None, None)
        # Why it failed comes first and again last: a CI log that keeps only part of the
        # output keeps one of them, not only the logs' tails in between.
        why = failure_summary(exc) if exc[0] is not None and exc[1] is not None else None
        if why:
            log("FAILED: %s" % why)
        if exc[0] is not None or keep_test_dirs():
            log("scenario directory kept: %s" % self.dir)
            if not keep_test_dirs():
                # A failed scenario keeps its logs, not its databases: in a suite run the
                # next tests need the memory (/dev/shm is RAM; e2e/dr's data is 10 GB or more).
                freed = drop_large_files(self.dir, 64 << 20)
                if freed:
                    log("removed its files over 64 MiB (%.1f GB: databases, snapshots); "
                        "KEEP_TEST_DIRS=1 keeps them" % (freed / 1e9))
            if self.dir.startswith("/dev/shm/"):
                log("it holds %.1f GB of memory (/dev/shm is RAM) until removed: rm -rf %s" % (
                    tree_bytes(self.dir) / 1e9, self.dir))
            logs = [os.path.join(self.dir, f) for f in sorted(os.listdir(self.dir)) if f.endswith(".log")]
            if self.kube_dir and os.path.isdir(self.kube_dir):
                logs += [os.path.join(self.kube_dir, f) for f in sorted(os.listdir(self.kube_dir))
                         if f.endswith(".log") and not f.startswith("audit")]
            for path in logs:
                tail = open(path, errors="replace").read()[-3000:]
                sys.stdout.write("---- %s (tail) ----\n%s\n" % (os.path.relpath(path, self.dir), tail))
        if why:
            log("FAILED: %s" % why)
        if not keep_test_dirs() and exc[0] is None:
            shutil.rmtree(self.dir, ignore_errors=True)
        if denied and exc[0] is AssertionError and exc[1] is None:
            raise AssertionError("RBAC denied %d request(s): %s" % (len(denied), denied[0]))
        return False

    def rbac_denials(self):
        """The requests the authorizer refused: the real API's 403s (its audit log of ServiceAccounts'
        and nodes' requests)."""
        if not self.kube_dir or not os.path.isdir(self.kube_dir):
            return []
        r = subprocess.run([sys.executable, KUBE_CP, "denials", self.kube_dir], capture_output=True, text=True)
        return r.stdout.splitlines()

    def ip(self, host):
        return "%s.%d" % (self.net, host)

    def start_kube(self, etcd_servers, etcd_tls, node_names=(), goaway_chance=None):
        """Kubernetes' own control plane on this world's address .1 (test/kube/control-plane): returns
        once its admin kubeconfig exists; wait_kube_ready() then waits until it serves with the
        CRDs. It runs kube-apiserver on etcd_servers (it retries until that etcd answers), follows
        the etcd-endpoints the operator publishes for node_names as the kube-apiserver operator
        does, and records every request of ServiceAccounts and nodes (rbac_denials)."""
        self.kube_dir = os.path.join(self.dir, "kube")
        cacert, cert, key = etcd_tls
        argv = [sys.executable, KUBE_CP, "run", "--dir", self.kube_dir, "--ip", self.ip(1), "--bin-dir", self.kube_bin,
                "--etcd-servers", ",".join(etcd_servers), "--etcd-cacert", cacert, "--etcd-cert", cert,
                "--etcd-key", key, "--kas-node-names", ",".join(node_names),
                "--etcd-local-file", self.local_etcd_file]
        if goaway_chance is None:
            goaway_chance = os.environ.get("E2E_GOAWAY_CHANCE", "0")
        argv += ["--goaway-chance", str(goaway_chance)]
        self.kube_proc = self.spawn("control-plane", argv)
        self.kubeconfig = os.path.join(self.kube_dir, "kubeconfig")

        def written():
            if self.kube_proc.poll() is not None:
                raise AssertionError("control-plane exited %d (control-plane.log)" % self.kube_proc.returncode)
            return os.path.exists(self.kubeconfig)
        wait_for("the control plane's kubeconfig", written, 60)
        log("control plane started (%s)" % self.kubeconfig)

    def wait_kube_ready(self, timeout):
        def ready():
            if self.kube_proc.poll() is not None:
                raise SystemExit("control-plane exited %d" % self.kube_proc.returncode)
            return os.path.exists(os.path.join(self.kube_dir, "ready"))
        wait_for("kube-apiserver to serve with the CRDs", ready, timeout)
        log("kube-apiserver up: %s" % self.kubectl("version").stdout.strip().replace("\n", "; "))

    def start_fault_proxy(self):
        """test/kube/api-fault-proxy in front of the real control plane's kube-apiserver, on this
        world's address .3, with a serving certificate of the control plane's CA: from now on the
        operator's kubeconfig names it as its server (Cluster.operator_kubeconfig), while the
        kubelets, kubectl and the test's own reads go to kube-apiserver directly. Its control API
        (self.fault_proxy["control"], plain HTTP on loopback) injects the faults."""
        assert self.kube_dir, "start_kube first: the proxy stands in front of kube-apiserver"
        ip, d = self.ip(3), os.path.join(self.dir, "fault-proxy")
        r = subprocess.run([sys.executable, KUBE_CP, "serving-cert", self.kube_dir, "fault-proxy", ip],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("a serving certificate for the fault proxy: %s" % r.stderr.strip())
        crt, key = r.stdout.split()
        p = self.spawn("fault-proxy", [sys.executable, FAULT_PROXY, "--listen", ip + ":0", "--control", ip + ":0",
                                       "--upstream", open(os.path.join(self.kube_dir, "server-url")).read().strip(),
                                       "--upstream-ca", os.path.join(self.kube_dir, "ca.crt"), "--cert", crt,
                                       "--key", key, "--dir", d])

        def up():
            if p.poll() is not None:
                raise AssertionError("api-fault-proxy exited %d (fault-proxy.log)" % p.returncode)
            return os.path.exists(os.path.join(d, "pid"))
        wait_for("the fault proxy to serve", up, 30)
        self.fault_proxy = {"url": open(os.path.join(d, "url")).read().strip(),
                            "control": open(os.path.join(d, "control-url")).read().strip()}
        log("fault proxy %s in front of kube-apiserver (control API %s)" % (
            self.fault_proxy["url"], self.fault_proxy["control"]))
        return self.fault_proxy

    def kube_pid(self, name="kube-apiserver"):
        """The PID of the control plane's process `name` now."""
        return int(open(os.path.join(self.kube_dir, name + ".pid")).read())

    def kubectl(self, *args, check=True, input=None):
        r = subprocess.run([self.kubectl_bin, "--kubeconfig", self.kubeconfig, "--cache-dir", self.kubectl_cache]
                           + list(args), capture_output=True, text=True, input=input)
        if check and r.returncode != 0:
            raise AssertionError("kubectl %s: %s" % (" ".join(args), r.stderr.strip()))
        return r

    def get_json(self, *args):
        """What `kubectl get -o json ARGS` prints, None where it fails (API_RESOURCES)."""
        path = api_path(args)
        if path is None:
            r = self.kubectl("get", "-o", "json", *args, check=False)
            return json.loads(r.stdout) if r.returncode == 0 else None
        try:
            status, body = self.api().call("GET", path)
        except (OSError, http.client.HTTPException):
            return None
        return body if status == 200 else None

    def api(self):
        """The ApiClient of this world's API server (of its current kubeconfig)."""
        if self.client is None or self.client.kubeconfig != self.kubeconfig:
            self.client = ApiClient(self.kubeconfig)
        return self.client

    def spawn(self, name, argv, env=None):
        logf = open(os.path.join(self.dir, name + ".log"), "w")
        p = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, env=env)
        self.procs.append((p, name))
        return p

    def start_kubelet(self, node, ip, master):
        root = os.path.join(self.dir, "nodes", node)
        os.makedirs(root, exist_ok=True)
        kubeconfig = self.node_kubeconfig(node) if self.kube_dir else self.kubeconfig
        argv = [KUBELET, "--node-name", node, "--node-ip", ip, "--root", root, "--kubeconfig", kubeconfig,
                "--operator-binary", self.binary, "--backoff-base", "0.5", "--backoff-max", "5",
                "--startup-probe-step", "0.5"]
        images = os.path.join(os.path.dirname(self.binary), "images")
        for pattern, name in IMAGES:
            argv += ["--image", "%s=%s" % (pattern, os.path.join(images, name))]
        if master:
            argv.append("--master")
            if self.kube_dir:
                # NodeRestriction forbids a kubelet node-role labels: the admin sets them, as the
                # installer does (label_master).
                argv.append("--no-role-labels")
                threading.Thread(target=self.label_master, args=(node,), daemon=True).start()
            self.master_addresses[node] = ip
            with open(self.local_etcd_file + ".tmp", "w") as f:
                f.write("".join("%s\n" % a for _, a in sorted(self.master_addresses.items())))
            os.rename(self.local_etcd_file + ".tmp", self.local_etcd_file)
        self.spawn("kubelet-" + node, argv)
        return root

    def node_kubeconfig(self, node):
        """A kubelet's credentials on the real control plane: a client certificate of CN
        system:node:NODE, O system:nodes (the Node authorizer and NodeRestriction apply)."""
        r = subprocess.run([sys.executable, KUBE_CP, "node-kubeconfig", self.kube_dir, node],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError("control-plane node-kubeconfig %s: %s" % (node, r.stderr.strip()))
        return r.stdout.strip()

    def label_master(self, node, timeout=300):
        """The master's role labels, set by the admin once the kubelet registered the Node."""
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            r = self.kubectl("label", "--overwrite", "node", node, "node-role.kubernetes.io/master=",
                             "node-role.kubernetes.io/control-plane=", check=False)
            if r.returncode == 0:
                log("node %s labelled a master" % node)
                return
            time.sleep(0.5)
        log("node %s: not labelled a master within %d s (%s)" % (node, timeout, r.stderr.strip()))

    def stop_kubelet(self, node, timeout=60):
        """SIGTERM to the node's kubelet-sim: it stops its containers, then exits (the host
        going down with its pods). Returns once it has."""
        for p, name in self.procs:
            if name == "kubelet-" + node and p.poll() is None:
                p.send_signal(signal.SIGTERM)
                p.wait(timeout=timeout)

    def render(self, out, bootstrap_ip, hostname="bootstrap", extra=(), inputs=None, speed="Slower"):
        data = os.path.join(ROOT, "test", "data", "render")
        inputs = inputs or {}
        argv = [self.binary, "render", "--asset-output-dir", out,
                "--etcd-image", "quay.io/openshift/etcd@sha256:0123456789abcdef",
                "--network-config-file", inputs.get("network", os.path.join(data, "network.yaml")),
                "--cluster-configmap-file", inputs.get("cluster", os.path.join(data, "cluster-config.yaml")),
                "--infra-config-file", inputs.get("infra", os.path.join(data, "infrastructure.yaml")),
                "--bootstrap-ip", bootstrap_ip, "--hostname", hostname, "--listen-on-node-ip",
                "--control-plane-hardware-speed", speed] + list(extra)
        return subprocess.run(argv, capture_output=True, text=True)


def kube_bin_dir():
    """Where hack/build-kube.sh put Kubernetes' binaries (it says how to build them when it has not)."""
    r = subprocess.run(["bash", os.path.join(ROOT, "hack", "build-kube.sh"), "--bin-dir"], capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise SystemExit(r.stderr.strip())
    return r.stdout.strip()


def keep_test_dirs():
    """KEEP_TEST_DIRS set to anything but "" or "0": keep every test's directory."""
    return os.environ.get("KEEP_TEST_DIRS", "") not in ("", "0")


def failure_summary(exc):
    """The exception and the test's own frames it came through (file:line function), innermost
    last: what a failed scenario prints before and after its logs' tails."""
    frames = traceback.extract_tb(exc[2]) if exc[2] is not None else []
    where = " <- ".join("%s:%d %s" % (os.path.basename(f.filename), f.lineno, f.name)
                        for f in reversed(frames[-4:]))
    text = "".join(traceback.format_exception_only(exc[0], exc[1])).strip()
    return "%s%s" % (text, " (at %s)" % where if where else "")


def wait_for(what, pred, timeout, interval=0.5):
    t0 = time.monotonic()
    last = None
    while time.monotonic() - t0 < timeout:
        try:
            v = pred()
            if v:
                return v
        except Exception as e:  # keep trying; report the last reason
            last = e
        time.sleep(interval)
    raise AssertionError("timed out after %ds waiting for %s%s" % (timeout, what, " (%s)" % last if last else ""))


def tree_digest(path):
    """Every file's path, mode and bytes: to prove a directory was left untouched."""
    out = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for f in sorted(filenames):
            p = os.path.join(dirpath, f)
            st = os.stat(p)
            out.append((os.path.relpath(p, path), st.st_mode, open(p, "rb").read()))
    return out
