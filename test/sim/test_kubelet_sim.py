#!/usr/bin/env python3
"""Integration tests of kubelet-sim against Kubernetes' own control plane.

etcd (TLS) and kube-apiserver, kube-controller-manager and kube-scheduler as
test/kube/test_control_plane.py's start_control_plane() runs them (test/kube/control-plane,
binaries from hack/build-kube.sh), on a random 127.x.y network of their own. Each kubelet-sim
is its node: a client certificate of CN system:node:<name>, O system:nodes (`control-plane
node-kubeconfig`), under the Node authorizer and NodeRestriction; masters run with
--no-role-labels and the test, as admin (client certificate), sets their role labels. So
every behaviour checked here is kube-apiserver's: its pod validation and admission
(ServiceAccount), graceful deletion (deletionTimestamp, then the kubelet's final delete),
kube-controller-manager's ServiceAccounts, Job and volume binding, kube-scheduler's placement.
At the end the audit log must show no request of any kubelet-sim refused (403).

node-a (a master) carries the static pod, API pod and etcd tests in order; node-b covers
SIGTERM shutdown, a restart on the same root and SIGKILL (every container process must die
with the kubelet). Everything started is stopped by PID and every temp dir removed, also when
a test fails.

Run: python3 test/sim/test_kubelet_sim.py [-k name]
(KUBELET_SIM_TEST_KEEP=1 keeps the temp dir with the kubelet logs and node roots.)
"""

import http.client
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from types import SimpleNamespace

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "test", "kube"))

import test_control_plane as kube  # noqa: E402  (puts test/e2e on sys.path)
from e2e import ApiClient  # noqa: E402

KUBELET = os.path.join(HERE, "kubelet-sim")
ETCD = shutil.which("etcd") or "/usr/bin/etcd"

W = None        # test_control_plane.World: etcd and the control plane, stopped by PID
KDIR = None     # the control plane's directory
C = None        # the admin's client
TMP = None
NODES = {}
FAILED = []
_ADDR = iter(range(20, 250))


def _pdeathsig():
    import ctypes
    # a test killed by ctest must not leave kubelets behind; their containers follow them
    ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)


def address():
    """A fresh address in the control plane's 127.x.y network."""
    return "%s.%d" % (W.net, next(_ADDR))


class Resp:
    def __init__(self, status, body):
        self.status = status
        self.json = body
        self.raw = json.dumps(body)[:2000]

    def __repr__(self):
        return "<Resp %d %s>" % (self.status, self.raw[:300])


class Api:
    """kube-apiserver as the admin (the control plane's kubeconfig: a client certificate of
    system:admin in system:masters)."""

    def __init__(self, kubeconfig):
        self.c = ApiClient(kubeconfig)

    def request(self, method, path, body=None, content_type="application/json"):
        return Resp(*self.c.call(method, path, body, content_type))

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, body):
        return self.request("POST", path, body)

    def put(self, path, body):
        return self.request("PUT", path, body)

    def patch(self, path, body):
        return self.request("PATCH", path, body, "application/merge-patch+json")

    def delete(self, path, body=None):
        return self.request("DELETE", path, body)

    def close(self):
        conn = getattr(self.c.local, "conn", None)
        if conn is not None:
            conn.close()


def node_kubeconfig(name):
    """The node's own credentials: CN system:node:NAME, O system:nodes."""
    return subprocess.run([sys.executable, kube.CP, "node-kubeconfig", KDIR, name], capture_output=True,
                          text=True, check=True).stdout.strip()


class Kubelet:
    def __init__(self, name, ip=None, root=None, master=True, extra=()):
        self.name = name
        self.ip = ip or address()
        self.root = root or os.path.join(TMP, name)
        os.makedirs(self.root, exist_ok=True)
        self.extra = list(extra)
        self.master = master
        self.kubeconfig = node_kubeconfig(name)
        self.proc = None
        self.registered = None      # the Node as the kubelet registered it (before the admin's labels)
        self.start()

    def start(self):
        cmd = [sys.executable, KUBELET, "--node-name", self.name, "--node-ip", self.ip,
               "--root", self.root, "--kubeconfig", self.kubeconfig,
               "--heartbeat-period", "2", "--backoff-base", "0.5", "--sync-period", "0.5",
               "-v"] + (["--master", "--no-role-labels"] if self.master else []) + self.extra
        self.logf = open(os.path.join(TMP, self.name + ".log"), "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.logf, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, preexec_fn=_pdeathsig)
        ready = os.path.join(self.root, "kubelet-sim.ready")
        deadline = time.monotonic() + 60
        while not os.path.exists(ready):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("kubelet-sim %s did not become ready:\n%s" %
                                   (self.name, self.tail()))
            time.sleep(0.05)
        if self.registered is None:
            self.registered = C.get("/api/v1/nodes/" + self.name).json
        if self.master:
            # NodeRestriction forbids a kubelet the node-role labels: the admin sets them, as the
            # installer does
            r = C.patch("/api/v1/nodes/" + self.name, {"metadata": {"labels": {
                "node-role.kubernetes.io/master": "", "node-role.kubernetes.io/control-plane": ""}}})
            if r.status != 200:
                raise RuntimeError("labelling node %s: %r" % (self.name, r))

    def tail(self, n=60):
        try:
            with open(os.path.join(TMP, self.name + ".log"), "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""

    def manifest_path(self, fname):
        return os.path.join(self.root, "etc/kubernetes/manifests", fname)

    def write_manifest(self, fname, pod):
        d = os.path.join(self.root, "etc/kubernetes/manifests")
        tmp = os.path.join(d, "." + fname + ".tmp")
        with open(tmp, "w") as f:
            json.dump(pod, f)
        os.replace(tmp, os.path.join(d, fname))

    def remove_manifest(self, fname):
        os.unlink(self.manifest_path(fname))

    def host(self, p):
        return os.path.join(self.root, p.lstrip("/"))

    def stop(self, sig=signal.SIGTERM, timeout=45):
        rc = None
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                rc = self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = self.proc.wait(5)
        self.logf.close()
        return rc


def setUpModule():
    global W, KDIR, C, TMP
    if os.geteuid() != 0:
        raise unittest.SkipTest("kubelet-sim needs root (mount namespaces)")
    try:
        W = kube.World()
    except SystemExit as e:  # Kubernetes not built
        raise RuntimeError("hack/build-kube.sh --bin-dir: %s" % e)
    TMP = tempfile.mkdtemp(prefix="kubelet-sim-test-")
    try:
        KDIR, admin, _, _ = kube.start_control_plane(W, kas_node_names="")
        C = Api(admin)
    except BaseException:
        _cleanup(True)
        raise


def _cleanup(failed):
    for k in NODES.values():
        try:
            k.stop(timeout=40)
        except Exception:  # noqa: BLE001 - keep cleaning up
            pass
    denied = []
    if KDIR and NODES:
        # what kube-apiserver refused a kubelet-sim, once they stopped (their shutdown included)
        out = subprocess.run([sys.executable, kube.CP, "denials", KDIR], capture_output=True,
                             text=True).stdout.splitlines()
        denied = [ln for ln in out if ln.split(" ", 1)[0] in
                  ["system:node:" + n for n in NODES]]
    if C is not None:
        C.close()
    if W is not None:
        W.close(failed or bool(denied))
    if TMP and not os.environ.get("KUBELET_SIM_TEST_KEEP"):
        shutil.rmtree(TMP, ignore_errors=True)
    elif TMP:
        sys.stderr.write("kept %s\n" % TMP)
    return denied


def tearDownModule():
    denied = _cleanup(bool(FAILED))
    # kubelet-sim asked kube-apiserver for nothing a kubelet may not (Node authorizer, NodeRestriction)
    if denied:
        raise AssertionError("kube-apiserver refused kubelet-sim:\n" + "\n".join(denied))


def node(name):
    if name not in NODES:
        NODES[name] = Kubelet(name)
    return NODES[name]


# -- helpers ------------------------------------------------------------------------
def wait_for(fn, timeout=30, what="condition", interval=0.2):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except (KeyError, IndexError, TypeError, AttributeError, OSError):
            last = None
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("timed out after %ss waiting for %s (last: %r)" % (timeout, what, last))


def get_pod(ns, name):
    r = C.get("/api/v1/namespaces/%s/pods/%s" % (ns, name))
    return r.json if r.status == 200 else None


def cond(pod, ctype):
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c["type"] == ctype:
            return c["status"]
    return None


def cstatus(pod, name, init=False):
    key = "initContainerStatuses" if init else "containerStatuses"
    for c in (pod.get("status") or {}).get(key) or []:
        if c["name"] == name:
            return c
    return None


def pids_with(marker):
    """PIDs whose command line contains marker (bytes)."""
    out = []
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        try:
            with open("/proc/%s/cmdline" % d, "rb") as f:
                cl = f.read()
            with open("/proc/%s/stat" % d) as f:
                if f.read().rsplit(")", 1)[-1].split()[0] == "Z":
                    continue
        except OSError:
            continue
        if marker in cl:
            out.append(int(d))
    return out


def free_port(ip):
    s = socket.socket()
    s.bind((ip, 0))
    p = s.getsockname()[1]
    s.close()
    return p


def http_get(ip, port, path):
    c = http.client.HTTPConnection(ip, port, timeout=3)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def fieldref(name, path):
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def static_pod(name, containers, init=(), volumes=(), labels=None, ns="default", grace=5):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": labels or {}},
            "spec": {"hostNetwork": True, "terminationGracePeriodSeconds": grace,
                     "initContainers": list(init), "containers": list(containers),
                     "volumes": list(volumes)}}


class Base(unittest.TestCase):
    maxDiff = None

    def run(self, result=None):
        result = super().run(result)
        if result is not None and (result.failures or result.errors):
            FAILED.append(self.id())  # the control plane's logs are shown at the end
        return result

    def node_log(self, k):
        return "\n--- kubelet log ---\n" + k.tail()

    def _api_pod(self, ns, name, ctr, policy="Never", k=None, sa=None):
        k = k or self.k
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
                "spec": {"nodeName": k.name, "restartPolicy": policy, "containers": [ctr],
                         "terminationGracePeriodSeconds": 5}}
        if sa:
            body["spec"]["serviceAccountName"] = sa
        r = C.post("/api/v1/namespaces/%s/pods" % ns, body)
        self.assertEqual(r.status, 201, r.raw)
        return r.json

    def _ns(self, name):
        r = C.post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": name}})
        self.assertIn(r.status, (201, 409), r.raw)
        # kube-controller-manager gives the namespace its ServiceAccount `default` a little
        # later; until then the ServiceAccount admission plugin refuses pods that use it
        wait_for(lambda: C.get("/api/v1/namespaces/%s/serviceaccounts/default" % name).status == 200,
                 60, "ServiceAccount %s/default" % name)


class NodeA(Base):
    """Static pods, probes, restarts and API pods on one master node."""

    @classmethod
    def setUpClass(cls):
        fake = os.path.join(TMP, "fake-operator")
        with open(fake, "w") as f:
            f.write('#!/bin/sh\necho "operator $*"\n')
        os.chmod(fake, 0o755)
        NODES["node-a"] = cls.k = Kubelet("node-a", extra=[
            "--operator-binary", fake, "--map", "image-tool=" + shutil.which("echo")])

    def test_01_node_registration_and_heartbeat(self):
        k = self.k
        # as registered by the kubelet: the master taint, but no role labels (NodeRestriction
        # refuses a kubelet those; the admin set them since)
        reg = k.registered["metadata"]["labels"]
        self.assertNotIn("node-role.kubernetes.io/master", reg)
        self.assertNotIn("node-role.kubernetes.io/control-plane", reg)
        self.assertIn({"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"},
                      k.registered["spec"]["taints"])
        n = C.get("/api/v1/nodes/node-a").json
        labels = n["metadata"]["labels"]
        self.assertEqual(labels.get("node-role.kubernetes.io/master"), "")
        self.assertEqual(labels.get("node-role.kubernetes.io/control-plane"), "")
        self.assertEqual(labels.get("kubernetes.io/hostname"), "node-a")
        self.assertIn({"type": "InternalIP", "address": k.ip}, n["status"]["addresses"])
        self.assertIn({"type": "Hostname", "address": "node-a"}, n["status"]["addresses"])
        ready = [c for c in n["status"]["conditions"] if c["type"] == "Ready"][0]
        self.assertEqual(ready["status"], "True")
        self.assertEqual(ready["reason"], "KubeletReady")
        first = ready["lastHeartbeatTime"]

        def beat():
            n2 = C.get("/api/v1/nodes/node-a").json
            r2 = [c for c in n2["status"]["conditions"] if c["type"] == "Ready"][0]
            return r2["lastHeartbeatTime"] != first and r2["status"] == "True" and \
                r2["lastTransitionTime"] == ready["lastTransitionTime"]
        wait_for(beat, 8, "a newer heartbeat")
        # its Lease in kube-node-lease, owned by its Node (renewals: test/kube's kube-control-plane)
        lease = wait_for(lambda: (lambda r: r.status == 200 and r.json)(C.get(
            "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/node-a")), 20, "Lease node-a")
        self.assertEqual(lease["spec"]["holderIdentity"], "node-a")
        self.assertEqual([(o["kind"], o["name"], o["uid"]) for o in lease["metadata"]["ownerReferences"]],
                         [("Node", "node-a", n["metadata"]["uid"])])

    def test_02_static_pod_lifecycle(self):
        k = self.k
        port = free_port(k.ip)
        mnt = os.path.join(TMP, "mnt-a", "data")  # the mountPath, on the real filesystem
        env = [fieldref("NODE_NAME", "spec.nodeName"), fieldref("POD_IP", "status.podIP"),
               fieldref("POD_NAME", "metadata.name"), fieldref("POD_NS", "metadata.namespace"),
               fieldref("HOST_IP", "status.hostIP"),
               {"name": "COMPOSED", "value": "$(POD_NAME)@$(NODE_NAME)"}]
        setup = {"name": "setup", "image": "quay.io/x/tools",
                 "command": ["/bin/sh", "-c"],
                 "args": ["echo \"$(NODE_NAME) $(POD_IP) $(HOST_IP) $(POD_NAME) $(POD_NS) "
                          "$(COMPOSED)\" '$$(ESCAPED)' '$(UNDEFINED)' \"$(hostname)\" "
                          "> %s/hello" % mnt],
                 "env": env, "volumeMounts": [{"name": "data", "mountPath": mnt}]}
        web = {"name": "web", "image": "quay.io/x/python",
               "command": ["python3", "-m", "http.server", "--bind", "$(POD_IP)", str(port),
                           "--directory", mnt],
               "env": env, "volumeMounts": [{"name": "data", "mountPath": mnt, "readOnly": True}],
               "readinessProbe": {"httpGet": {"port": port, "path": "/hello"},
                                  "periodSeconds": 1}}
        vol = {"name": "data", "hostPath": {"path": "/var/lib/web-data",
                                            "type": "DirectoryOrCreate"}}
        k.write_manifest("web.json", static_pod("web", [web], [setup], [vol],
                                                {"app": "web", "revision": "1"}))

        def ready(rev):
            def f():
                p = get_pod("default", "web-node-a")
                if p and p["metadata"]["labels"].get("revision") == rev and \
                        cond(p, "Ready") == "True":
                    return p
            return f
        try:
            p = wait_for(ready("1"), 30, "web-node-a Ready with revision 1")
        except AssertionError as e:
            raise AssertionError(str(e) + self.node_log(k))
        md = p["metadata"]
        self.assertEqual(md["labels"], {"app": "web", "revision": "1"})
        self.assertEqual(md["annotations"]["kubernetes.io/config.source"], "file")
        self.assertEqual(md["annotations"]["kubernetes.io/config.mirror"],
                         md["annotations"]["kubernetes.io/config.hash"])
        self.assertEqual(md["ownerReferences"][0]["kind"], "Node")
        self.assertEqual(p["spec"]["nodeName"], "node-a")
        st = p["status"]
        self.assertEqual(st["phase"], "Running")
        self.assertEqual((st["podIP"], st["hostIP"]), (k.ip, k.ip))
        for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready"):
            self.assertEqual(cond(p, t), "True", t)
        ic = cstatus(p, "setup", init=True)
        self.assertEqual(ic["state"]["terminated"]["exitCode"], 0)
        self.assertEqual(ic["state"]["terminated"]["reason"], "Completed")
        self.assertTrue(ic["ready"])
        c = cstatus(p, "web")
        self.assertTrue(c["ready"])
        self.assertTrue(c["started"])
        self.assertEqual(c["restartCount"], 0)
        self.assertIn("running", c["state"])
        # the init container wrote into the hostPath volume through its bind mount ...
        want = "node-a %s %s web-node-a default web-node-a@node-a $(ESCAPED) $(UNDEFINED) " \
               "node-a\n" % (k.ip, k.ip)
        with open(k.host("/var/lib/web-data/hello")) as f:
            self.assertEqual(f.read(), want)
        # ... which the real filesystem never saw, and the main container serves it
        self.assertEqual(os.listdir(mnt), [])
        self.assertEqual(http_get(k.ip, port, "/hello"), (200, want.encode()))
        logf = k.host("/var/log/pods/default_web-node-a/web/0.log")
        self.assertTrue(os.path.exists(logf))
        old_uid, old_cid = md["uid"], c["containerID"]

        # a new revision replaces the pod (and its mirror)
        k.write_manifest("web.json", static_pod("web", [web], [setup], [vol],
                                                {"app": "web", "revision": "2"}))
        p2 = wait_for(ready("2"), 30, "web-node-a Ready with revision 2")
        self.assertNotEqual(p2["metadata"]["uid"], old_uid)
        self.assertNotEqual(cstatus(p2, "web")["containerID"], old_cid)
        self.assertEqual(cstatus(p2, "web")["restartCount"], 0)

        # a deleted mirror pod comes back: kube-apiserver deletes it gracefully (a
        # deletionTimestamp: the pod is bound to a node); the kubelet deletes that one for good
        # and creates it again
        r = C.delete("/api/v1/namespaces/default/pods/web-node-a")
        self.assertEqual(r.status, 200, r.raw)
        self.assertTrue(r.json["metadata"].get("deletionTimestamp"), r.raw)
        wait_for(lambda: (lambda p: p and p["metadata"]["uid"] != p2["metadata"]["uid"] and
                          not p["metadata"].get("deletionTimestamp") and p)(ready("2")()), 30,
                 "mirror pod recreated")

        # the manifest goes away: mirror pod deleted, server stopped
        k.remove_manifest("web.json")
        wait_for(lambda: get_pod("default", "web-node-a") is None, 15, "mirror pod deleted")

        def closed():
            try:
                socket.create_connection((k.ip, port), timeout=0.5).close()
                return False
            except OSError:
                return True
        wait_for(closed, 10, "web server stopped")
        self.assertFalse(os.path.exists(k.host("/var/lib/kubelet/pods/%s" %
                                               md["annotations"]["kubernetes.io/config.hash"])))

    def test_03_crash_loop(self):
        k = self.k
        crash = {"name": "crash", "image": "x", "command": ["sh", "-c", "echo crashing; exit 3"]}
        k.write_manifest("crash.json", static_pod("crash", [crash], labels={"revision": "7"}))
        seen_backoff = []

        def looping():
            p = get_pod("default", "crash-node-a")
            c = cstatus(p, "crash")
            if c and "waiting" in c["state"] and \
                    c["state"]["waiting"].get("reason") == "CrashLoopBackOff":
                seen_backoff.append(c["state"]["waiting"])
            return p if seen_backoff and c["restartCount"] >= 3 and "waiting" in c["state"] \
                else None
        p = wait_for(looping, 30, "restartCount >= 3, in CrashLoopBackOff")
        c = cstatus(p, "crash")
        self.assertEqual(c["lastState"]["terminated"]["exitCode"], 3)
        self.assertEqual(c["lastState"]["terminated"]["reason"], "Error")
        self.assertFalse(c["ready"])
        self.assertEqual(p["status"]["phase"], "Running")
        self.assertEqual(cond(p, "Ready"), "False")
        self.assertTrue(seen_backoff, "never saw CrashLoopBackOff")
        self.assertIn("back-off", seen_backoff[0]["message"])
        for i in range(3):
            with open(k.host("/var/log/pods/default_crash-node-a/crash/%d.log" % i)) as f:
                self.assertEqual(f.read(), "crashing\n")
        k.remove_manifest("crash.json")
        wait_for(lambda: get_pod("default", "crash-node-a") is None, 15, "crash pod gone")

    def test_04_liveness_and_startup_probes(self):
        k = self.k
        mnt = os.path.join(TMP, "mnt-a", "probe")
        marker = "99%06d" % random.randint(0, 999999)
        alive = k.host("/var/lib/probe-data/alive")
        os.makedirs(os.path.dirname(alive), exist_ok=True)
        ctr = {"name": "sleeper", "image": "x", "command": ["sleep", marker],
               "volumeMounts": [{"name": "probe", "mountPath": mnt}],
               "startupProbe": {"exec": {"command": ["cat", mnt + "/alive"]},
                                "periodSeconds": 1, "failureThreshold": 30},
               "livenessProbe": {"exec": {"command": ["sh", "-c", "test -f %s/alive" % mnt]},
                                 "periodSeconds": 1, "failureThreshold": 2}}
        vol = {"name": "probe", "hostPath": {"path": "/var/lib/probe-data"}}
        k.write_manifest("probe.json", static_pod("probe", [ctr], volumes=[vol], grace=3))

        def state(started, restarts):
            def f():
                p = get_pod("default", "probe-node-a")
                c = cstatus(p, "sleeper")
                return p if c and c["started"] == started and c["restartCount"] == restarts \
                    and "running" in c["state"] else None
            return f
        wait_for(state(False, 0), 15, "running, not started")
        time.sleep(1.5)
        p = get_pod("default", "probe-node-a")
        self.assertFalse(cstatus(p, "sleeper")["started"])
        self.assertEqual(cond(p, "Ready"), "False")
        with open(alive, "w") as f:
            f.write("yes\n")
        p = wait_for(state(True, 0), 15, "startup probe passed")
        wait_for(lambda: cond(get_pod("default", "probe-node-a"), "Ready") == "True", 10,
                 "Ready")
        self.assertEqual(len(pids_with(b"sleep\0" + marker.encode())), 1)
        os.unlink(alive)   # liveness fails twice -> SIGTERM -> restart
        p = wait_for(lambda: (lambda p: p if cstatus(p, "sleeper")["restartCount"] == 1 else
                              None)(get_pod("default", "probe-node-a")), 20, "restart by liveness")
        c = cstatus(p, "sleeper")
        self.assertEqual(c["lastState"]["terminated"]["exitCode"], 143)   # sleep got SIGTERM
        with open(alive, "w") as f:
            f.write("yes\n")
        wait_for(state(True, 1), 15, "running again after the restart")
        time.sleep(2.5)
        self.assertEqual(cstatus(get_pod("default", "probe-node-a"), "sleeper")["restartCount"], 1)
        k.remove_manifest("probe.json")
        wait_for(lambda: not pids_with(b"sleep\0" + marker.encode()), 10, "sleep stopped")

    def test_05_api_pods(self):
        ns = "kubelet-test"
        self._ns(ns)
        script = r"""
import json, os, ssl, sys, urllib.request
d = "/var/run/secrets/kubernetes.io/serviceaccount"
tok = open(d + "/token").read()
assert open(d + "/namespace").read() == os.environ["MY_NS"], "namespace file"
ctx = ssl.create_default_context(cafile=d + "/ca.crt")
url = "https://%s:%s/api/v1/namespaces/%s/pods/%s" % (
    os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"],
    os.environ["MY_NS"], os.environ["MY_NAME"])
req = urllib.request.Request(url, headers={"Authorization": "Bearer " + tok})
pod = json.load(urllib.request.urlopen(req, context=ctx))
print("in-cluster ok", pod["metadata"]["name"], pod["status"]["phase"], os.environ["NODE"])
import base64
claims = json.loads(base64.urlsafe_b64decode(tok.split(".")[1] + "=="))
print("token of", claims["sub"], "bound to", claims["kubernetes.io"]["pod"]["name"])
# own PID namespace with its /proc, own UTS namespace
procs = [p for p in os.listdir("/proc") if p.isdigit()]
print("pid", os.getpid(), "procs", len(procs), "hostname", os.uname().nodename)
"""
        # the kubelet asks a token for the pod's own ServiceAccount: RBAC applies to it
        rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/%s" % ns
        for path, body in (
                ("/api/v1/namespaces/%s/serviceaccounts" % ns, {
                    "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "installer-sa"}}),
                (rbac + "/roles", {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                                   "metadata": {"name": "pod-reader"},
                                   "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
                (rbac + "/rolebindings", {
                    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": "pod-reader"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
                    "subjects": [{"kind": "ServiceAccount", "name": "installer-sa", "namespace": ns}]})):
            r = C.post(path, body)
            self.assertIn(r.status, (201, 409), r)
        ok = self._api_pod(ns, "installer-1-node-a", {
            "name": "installer", "image": "x", "command": ["python3", "-c", script],
            "env": [fieldref("MY_NS", "metadata.namespace"), fieldref("MY_NAME", "metadata.name"),
                    fieldref("NODE", "spec.nodeName")]}, sa="installer-sa")
        # a pod of a ServiceAccount that does not exist is refused (the ServiceAccount
        # admission plugin), so no kubelet ever sees one ...
        r = C.post("/api/v1/namespaces/%s/pods" % ns, {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "no-account"},
            "spec": {"nodeName": "node-a", "serviceAccountName": "missing", "restartPolicy": "Never",
                     "containers": [{"name": "c", "image": "x", "command": ["true"]}]}})
        self.assertEqual(r.status, 403, r.raw)
        self.assertIn("error looking up service account %s/missing" % ns, r.json["message"])
        # ... but one whose ServiceAccount was deleted since: it goes to node-t, whose kubelet
        # starts only then
        r = C.post("/api/v1/namespaces/%s/serviceaccounts" % ns, {
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "short-lived"}})
        self.assertEqual(r.status, 201, r.raw)
        nosa = self._api_pod(ns, "no-account", {"name": "c", "image": "x", "command": ["true"]},
                             sa="short-lived", k=SimpleNamespace(name="node-t"))
        r = C.delete("/api/v1/namespaces/%s/serviceaccounts/short-lived" % ns)
        self.assertEqual(r.status, 200, r.raw)
        NODES["node-t"] = kt = Kubelet("node-t", master=False)
        bad = self._api_pod(ns, "installer-2-node-a", {
            "name": "installer", "image": "x", "terminationMessagePolicy":
            "FallbackToLogsOnError", "command": ["sh", "-c", "echo boom: no revision; exit 7"]})
        marker = "98%06d" % random.randint(0, 999999)
        long = self._api_pod(ns, "long-running", {"name": "c", "image": "x",
                                                  "command": ["sleep", marker]})

        def phase(name, want):
            return lambda: (get_pod(ns, name) or {}).get("status", {}).get("phase") == want
        try:
            wait_for(phase("installer-1-node-a", "Succeeded"), 30, "installer-1 Succeeded")
        except AssertionError as e:
            raise AssertionError(str(e) + json.dumps(get_pod(ns, "installer-1-node-a")) +
                                 self.node_log(self.k))
        p = get_pod(ns, "installer-1-node-a")
        c = cstatus(p, "installer")
        self.assertEqual(c["state"]["terminated"]["exitCode"], 0)
        self.assertEqual(c["state"]["terminated"]["reason"], "Completed")
        self.assertEqual(cond(p, "Ready"), "False")
        with open(self.k.host("/var/log/pods/%s_installer-1-node-a/installer/0.log" % ns)) as f:
            self.assertEqual(f.read(), "in-cluster ok installer-1-node-a Running node-a\n"
                             "token of system:serviceaccount:%s:installer-sa bound to installer-1-node-a\n"
                             "pid 2 procs 2 hostname installer-1-node-a\n" % ns)
        # no ServiceAccount, no token: the pod does not start (kubelet: FailedMount)
        self.assertTrue(nosa["metadata"]["uid"])

        def waiting_for_token():
            st = cstatus(get_pod(ns, "no-account") or {}, "c") or {}
            return "failed to fetch token for service account %s/short-lived" % ns in \
                ((st.get("state") or {}).get("waiting") or {}).get("message", "")
        try:
            wait_for(waiting_for_token, 30, "no-account waiting for its token")
        except AssertionError as e:
            raise AssertionError(str(e) + self.node_log(kt))
        C.delete("/api/v1/namespaces/%s/pods/no-account" % ns)
        wait_for(lambda: get_pod(ns, "no-account") is None, 30, "no-account deleted by node-t")
        self.assertEqual(kt.stop(), 0, kt.tail())
        self.assertEqual(p["metadata"]["uid"], ok["metadata"]["uid"])

        wait_for(phase("installer-2-node-a", "Failed"), 30, "installer-2 Failed")
        c = cstatus(get_pod(ns, "installer-2-node-a"), "installer")
        self.assertEqual(c["state"]["terminated"]["exitCode"], 7)
        self.assertEqual(c["state"]["terminated"]["reason"], "Error")
        self.assertIn("boom: no revision", c["state"]["terminated"]["message"])
        self.assertEqual(c["restartCount"], 0)
        self.assertTrue(bad["metadata"]["uid"])

        wait_for(phase("long-running", "Running"), 30, "long-running Running")
        self.assertTrue(long["metadata"]["uid"])
        self.assertEqual(len(pids_with(b"sleep\0" + marker.encode())), 1)
        # graceful deletion: kube-apiserver marks the pod (deletionTimestamp), the kubelet stops
        # its containers and then deletes it for good
        r = C.delete("/api/v1/namespaces/%s/pods/long-running" % ns)
        self.assertEqual(r.status, 200, r.raw)
        self.assertEqual(r.json["metadata"].get("deletionGracePeriodSeconds"), 5, r.raw)
        wait_for(lambda: not pids_with(b"sleep\0" + marker.encode()), 10,
                 "deleted pod's process stopped")
        wait_for(lambda: get_pod(ns, "long-running") is None, 15, "long-running deleted by the kubelet")
        # finished pods are not run again (e.g. after later watch events)
        time.sleep(1)
        self.assertEqual(get_pod(ns, "installer-1-node-a")["status"]["phase"], "Succeeded")
        self.assertEqual(cstatus(get_pod(ns, "installer-1-node-a"), "installer")["restartCount"], 0)

    def test_11_job_with_a_claimed_volume(self):
        """A Job whose pod claims a hostPath volume: kube-controller-manager binds the claim
        and runs the Job, kube-scheduler places the pod on this node (nodeSelector, a
        toleration), the kubelet mounts the volume's node path and runs the pod, the Job
        completes; what the pod wrote is on the node."""
        ns = "kubelet-jobs"
        self._ns(ns)
        r = C.post("/api/v1/persistentvolumes", {"apiVersion": "v1", "kind": "PersistentVolume",
                                                 "metadata": {"name": "backup-a"}, "spec": {
            "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "",
            "hostPath": {"path": "/var/backups/a", "type": "DirectoryOrCreate"}}})
        self.assertEqual(r.status, 201, r.raw)
        r = C.post("/api/v1/namespaces/%s/persistentvolumeclaims" % ns, {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "backups"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                     "resources": {"requests": {"storage": "100Mi"}}}})
        self.assertEqual(r.status, 201, r.raw)
        r = C.post("/apis/batch/v1/namespaces/%s/jobs" % ns, {
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "write-once"},
            "spec": {"backoffLimit": 0, "template": {"spec": {
                "restartPolicy": "Never", "nodeSelector": {"node-role.kubernetes.io/master": "",
                                                           "kubernetes.io/hostname": self.k.name},
                "tolerations": [{"operator": "Exists"}],
                "containers": [{"name": "w", "image": "x", "command": [
                    "sh", "-c", "echo written by $(hostname) > /backup/out"],
                    "volumeMounts": [{"name": "b", "mountPath": "/backup"}]}],
                "volumes": [{"name": "b", "persistentVolumeClaim": {"claimName": "backups"}}]}}}})
        self.assertEqual(r.status, 201, r.raw)

        def complete():
            j = C.get("/apis/batch/v1/namespaces/%s/jobs/write-once" % ns).json
            return any(c["type"] == "Complete" and c["status"] == "True"
                       for c in (j.get("status") or {}).get("conditions") or [])
        try:
            wait_for(complete, 60, "the Job to complete")
        except AssertionError as e:
            pods = C.get("/api/v1/namespaces/%s/pods" % ns).json["items"]
            raise AssertionError(str(e) + json.dumps(pods)[:3000] + self.node_log(self.k))
        pod = C.get("/api/v1/namespaces/%s/pods?labelSelector=job-name%%3Dwrite-once" % ns).json["items"][0]
        self.assertEqual(pod["spec"]["nodeName"], self.k.name)
        with open(self.k.host("/var/backups/a/out")) as f:
            self.assertEqual(f.read(), "written by %s\n" % pod["metadata"]["name"])
        C.delete("/apis/batch/v1/namespaces/%s/jobs/write-once" % ns,
                 {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
        C.delete("/api/v1/namespaces/%s/persistentvolumeclaims/backups" % ns)
        C.delete("/api/v1/persistentvolumes/backup-a")

    def test_06_api_pod_on_failure_and_bad_command(self):
        ns = "kubelet-test"
        self._ns(ns)
        # OnFailure: restarted until it succeeds (the counter lives in an emptyDir)
        mnt = os.path.join(TMP, "scratch-mnt")
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "retry", "namespace": ns},
                "spec": {"nodeName": "node-a", "restartPolicy": "OnFailure",
                         "volumes": [{"name": "scratch", "emptyDir": {}}],
                         "containers": [{"name": "c", "image": "x", "command": [
                             "sh", "-c", "echo x >> %s/n; test $(wc -l < %s/n) -ge 3" %
                             (mnt, mnt)],
                             "volumeMounts": [{"name": "scratch", "mountPath": mnt}]}]}}
        self.assertEqual(C.post("/api/v1/namespaces/%s/pods" % ns, body).status, 201)
        self._api_pod(ns, "no-such-binary", {"name": "c", "image": "x",
                                             "command": ["/usr/bin/does-not-exist"]})
        # file volumes: mounted inside another volume (the mount point is created there),
        # never created on the real filesystem
        nest = os.path.join(TMP, "nest-mnt")
        with open(self.k.host("/etc/app.conf"), "w") as f:
            f.write("conf-from-host\n")
        vols = [{"name": "dir", "hostPath": {"path": "/var/lib/app"}},
                {"name": "conf", "hostPath": {"path": "/etc/app.conf", "type": "File"}}]
        for name, mp in (("file-nested", nest + "/sub/app.conf"),
                         ("file-real", os.path.join(TMP, "nowhere", "app.conf"))):
            body = {"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": name, "namespace": ns},
                    "spec": {"nodeName": "node-a", "restartPolicy": "Never", "volumes": vols,
                             "containers": [{"name": "c", "image": "x",
                                             "command": ["cat", mp],
                                             "volumeMounts": [
                                                 {"name": "dir", "mountPath": nest},
                                                 {"name": "conf", "mountPath": mp}]}]}}
            self.assertEqual(C.post("/api/v1/namespaces/%s/pods" % ns, body).status, 201)
        wait_for(lambda: get_pod(ns, "retry")["status"]["phase"] == "Succeeded", 30,
                 "retry Succeeded")
        self.assertEqual(cstatus(get_pod(ns, "retry"), "c")["restartCount"], 2)
        wait_for(lambda: get_pod(ns, "no-such-binary")["status"]["phase"] == "Failed", 30,
                 "no-such-binary Failed")
        t = cstatus(get_pod(ns, "no-such-binary"), "c")["state"]["terminated"]
        self.assertEqual((t["exitCode"], t["reason"]), (128, "StartError"))
        self.assertIn("does-not-exist", t["message"])
        wait_for(lambda: get_pod(ns, "file-nested")["status"]["phase"] == "Succeeded", 30,
                 "file-nested Succeeded")
        with open(self.k.host("/var/log/pods/%s_file-nested/c/0.log" % ns)) as f:
            self.assertEqual(f.read(), "conf-from-host\n")
        self.assertTrue(os.path.isfile(self.k.host("/var/lib/app/sub/app.conf")))
        self.assertFalse(os.path.exists(os.path.join(nest, "sub")))
        wait_for(lambda: get_pod(ns, "file-real")["status"]["phase"] == "Failed", 30,
                 "file-real Failed")
        t = cstatus(get_pod(ns, "file-real"), "c")["state"]["terminated"]
        self.assertEqual(t["reason"], "StartError")
        self.assertIn("never files", t["message"])
        self.assertFalse(os.path.exists(os.path.join(TMP, "nowhere", "app.conf")))

    def test_07_command_mapping(self):
        ns = "kubelet-test"
        self._ns(ns)
        self._api_pod(ns, "installer-3-node-a", {
            "name": "installer", "image": "quay.io/openshift/cluster-etcd-operator",
            "command": ["cluster-etcd-operator", "installer"],
            "args": ["--revision=3", "--node=$(NODE)"], "env": [fieldref("NODE", "spec.nodeName")]})
        self._api_pod(ns, "abs-path", {"name": "c", "image": "x",
                                       "command": ["/usr/bin/cluster-etcd-operator", "readyz"]})
        self._api_pod(ns, "mapped", {"name": "c", "image": "x",
                                     "command": ["/opt/image/bin/image-tool", "mapped"]})
        self._api_pod(ns, "etcd-version", {"name": "c", "image": "x",
                                           "command": ["etcdctl", "version"]})
        for name, want in (("installer-3-node-a", "operator installer --revision=3 --node=node-a\n"),
                           ("abs-path", "operator readyz\n"), ("mapped", "mapped\n"),
                           ("etcd-version", "etcdctl version:")):
            wait_for(lambda: get_pod(ns, name)["status"]["phase"] == "Succeeded", 20,
                     name + " Succeeded")
            with open(self.k.host("/var/log/pods/%s_%s/%s/0.log" % (
                    ns, name, "installer" if name.startswith("installer") else "c"))) as f:
                self.assertTrue(f.read().startswith(want), name)

    def test_10_node_shell_and_crictl(self):
        """hack/node-shell.sh: the node's filesystem where a host has it, its hostname,
        and crictl answering from this node's running containers."""
        k = self.k
        shell = [os.path.join(REPO, "hack", "node-shell.sh"), "--root", k.root, k.name]
        nap = {"name": "nap", "image": "x", "command": ["sleep", "1000"],
               "volumeMounts": [{"name": "d", "mountPath": "/var/lib/nap-data"}]}
        k.write_manifest("nap.json", static_pod("nap", [nap], volumes=[
            {"name": "d", "hostPath": {"path": "/var/lib/nap-data", "type": "DirectoryOrCreate"}}], grace=1))
        wait_for(lambda: cstatus(get_pod("default", "nap-node-a"), "nap")["state"].get("running"), 30,
                 "nap running")
        with open(k.host("/var/lib/nap-data/marker"), "w") as f:
            f.write("on node-a\n")

        def sh(script):
            return subprocess.run(shell + ["sh", "-c", script], capture_output=True, text=True, timeout=30)
        r = sh('hostname; echo "$NODE_SHELL_IP"; cat /var/lib/nap-data/marker; ls /etc/kubernetes/manifests; '
               'crictl ps --label io.kubernetes.container.name=nap -q; crictl ps --name "^nap$"')
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[:3], ["node-a", k.ip, "on node-a"])
        self.assertIn("nap.json", lines)
        ids = [l for l in lines[4:] if len(l) == 13 and " " not in l]
        self.assertEqual(len(ids), 1, r.stdout)
        self.assertTrue(any("CONTAINER_RUNNING" in l and "nap-node-a" in l for l in lines), r.stdout)
        # Exit status comes back; a move between /var/lib dirs is a rename (one mount).
        self.assertEqual(sh("exit 7").returncode, 7)
        r = sh("mkdir -p /var/lib/nap-b && mv /var/lib/nap-data/marker /var/lib/nap-b/ && echo moved")
        self.assertEqual((r.returncode, r.stdout), (0, "moved\n"), r.stderr)
        self.assertTrue(os.path.exists(k.host("/var/lib/nap-b/marker")))
        # Gone from crictl once the kubelet stopped it.
        k.remove_manifest("nap.json")
        wait_for(lambda: sh("crictl ps --label io.kubernetes.container.name=nap -q").stdout == "", 30,
                 "nap gone from crictl ps")
        # A node that is not one, and a runtime that is not running, are errors.
        r = subprocess.run([shell[0], "--root", TMP, "nowhere", "true"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("not a simulated node", r.stderr)
        dead = os.path.join(TMP, "dead-runtime.json")
        with open(dead, "w") as f:
            json.dump({"kubeletPid": 2 ** 22 + 1, "containers": []}, f)
        r = subprocess.run([os.path.join(REPO, "test", "sim", "node-bin", "crictl"), "ps", "-q"],
                           capture_output=True, text=True, env=dict(os.environ, CRICTL_SIM_RUNTIME_FILE=dead))
        self.assertEqual(r.returncode, 1)
        self.assertIn("not running", r.stderr)

    def test_09_sigterm_ignored_until_grace(self):
        k = self.k
        marker = "96%06d" % random.randint(0, 999999)
        ctr = {"name": "stubborn", "image": "x",
               "command": ["sh", "-c", "trap '' TERM; sleep %s & wait; sleep %s" % (marker, marker)]}
        k.write_manifest("stubborn.json", static_pod("stubborn", [ctr], grace=2))
        mk = b"sleep\0" + marker.encode()
        wait_for(lambda: len(pids_with(mk)) == 1, 15, "stubborn running")
        time.sleep(0.5)
        t0 = time.monotonic()
        k.remove_manifest("stubborn.json")
        wait_for(lambda: not pids_with(mk), 15, "stubborn killed")
        took = time.monotonic() - t0
        self.assertGreater(took, 1.5)   # SIGTERM was ignored ...
        self.assertLess(took, 10)       # ... SIGKILL came after the 2 s grace period
        self.assertIn("grace period over, SIGKILL", k.tail(200))

    def test_08_etcd_static_pod(self):
        if not os.path.exists(ETCD) or not shutil.which("etcdctl"):
            self.skipTest("etcd/etcdctl not installed (hack/install-deps.sh)")
        k = self.k
        real_before = sorted(os.listdir("/var/lib/etcd")) if os.path.isdir("/var/lib/etcd") \
            else None
        ctr = {"name": "etcd", "image": "quay.io/openshift/etcd",
               "command": ["etcd"],
               "args": ["--name=$(NODE_NAME)", "--data-dir=/var/lib/etcd",
                        "--listen-client-urls=http://$(POD_IP):2379",
                        "--advertise-client-urls=http://$(POD_IP):2379",
                        "--listen-peer-urls=http://$(POD_IP):2380",
                        "--initial-advertise-peer-urls=http://$(POD_IP):2380",
                        "--initial-cluster=$(NODE_NAME)=http://$(POD_IP):2380",
                        "--listen-metrics-urls=http://$(POD_IP):9978"],
               "env": [fieldref("NODE_NAME", "spec.nodeName"), fieldref("POD_IP", "status.podIP"),
                       {"name": "ETCDCTL_API", "value": "3"}],
               "volumeMounts": [{"name": "data-dir", "mountPath": "/var/lib/etcd"}],
               "readinessProbe": {"exec": {"command": [
                   "/bin/sh", "-c", "etcdctl --endpoints=http://$POD_IP:2379 endpoint health "
                   "&& test -d /var/lib/etcd/member"]},
                   "periodSeconds": 1, "timeoutSeconds": 5},
               "livenessProbe": {"tcpSocket": {"port": 2379}, "periodSeconds": 2,
                                 "initialDelaySeconds": 2}}
        pod = static_pod("etcd", [ctr], volumes=[{"name": "data-dir", "hostPath": {
            "path": "/var/lib/etcd", "type": "DirectoryOrCreate"}}],
            labels={"app": "etcd", "k8s-app": "etcd", "etcd": "true", "revision": "1"},
            ns="openshift-etcd", grace=10)
        self._ns("openshift-etcd")
        k.write_manifest("etcd-pod.yaml", pod)
        try:
            p = wait_for(lambda: (lambda p: p if cond(p, "Ready") == "True" else None)(
                get_pod("openshift-etcd", "etcd-node-a")), 40, "etcd-node-a Ready")
        except AssertionError as e:
            raise AssertionError(str(e) + self.node_log(k))
        self.assertEqual(p["metadata"]["labels"]["revision"], "1")
        self.assertTrue(os.path.isdir(k.host("/var/lib/etcd/member")))
        if real_before is not None:
            self.assertEqual(sorted(os.listdir("/var/lib/etcd")), real_before)
        out = subprocess.run(["etcdctl", "--endpoints=http://%s:2379" % k.ip, "put", "k", "v"],
                             env=dict(os.environ, ETCDCTL_API="3"), capture_output=True,
                             timeout=20)
        self.assertEqual(out.returncode, 0, out.stderr)
        k.remove_manifest("etcd-pod.yaml")
        wait_for(lambda: get_pod("openshift-etcd", "etcd-node-a") is None, 20, "etcd mirror gone")
        wait_for(lambda: not pids_with(b"--listen-client-urls=http://%s:2379" % k.ip.encode()),
                 20, "etcd stopped")


class ProbeChecks(Base):
    """probes.check() against local servers: https (unverified), named ports, failures."""

    def test_http_https_tcp(self):
        import http.server
        import ssl
        import threading
        from types import SimpleNamespace
        from kubeletsim import probes
        ip = address()
        d = tempfile.mkdtemp(prefix="kubelet-sim-probe-", dir=TMP)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", d + "/k.pem",
                        "-out", d + "/c.pem", "-days", "1", "-subj", "/CN=probe"],
                       check=True, capture_output=True)

        class H(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                code = 200 if self.path == "/readyz" and \
                    self.headers.get("X-Probe") == "yes" else 503
                self.send_response(code)
                self.end_headers()
                self.wfile.write(b"not ready" if code != 200 else b"ok")

            def log_message(self, *a):
                pass
        srv = http.server.ThreadingHTTPServer((ip, 0), H)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(d + "/c.pem", d + "/k.pem")
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
        port = srv.server_address[1]
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        try:
            node_ = SimpleNamespace(ip=ip)
            c = SimpleNamespace(spec={"ports": [{"name": "readyz", "containerPort": port}]})
            hdr = [{"name": "X-Probe", "value": "yes"}]
            ok = {"httpGet": {"scheme": "HTTPS", "port": "readyz", "path": "/readyz",
                              "httpHeaders": hdr}, "timeoutSeconds": 2}
            self.assertEqual(probes.check(node_, c, ok, {}), (True, ""))
            bad = {"httpGet": {"scheme": "HTTPS", "port": port, "path": "/readyz"}}
            res = probes.check(node_, c, bad, {})
            self.assertFalse(res[0])
            self.assertIn("503", res[1])
            plain = {"httpGet": {"scheme": "HTTP", "port": port, "path": "/readyz"}}
            self.assertFalse(probes.check(node_, c, plain, {})[0])
            self.assertTrue(probes.check(node_, c, {"tcpSocket": {"port": port}}, {})[0])
            self.assertFalse(probes.check(node_, c, {"tcpSocket": {"port": "nope"}}, {})[0])
        finally:
            srv.shutdown()
            srv.server_close()


    def test_startup_probe_step(self):
        """--startup-probe-step: a startup probe checked sooner and more often, failing at
        the deadline its spec sets; other probes keep the kubelet's timing."""
        from types import SimpleNamespace
        from kubeletsim import probes

        def timing(kind, probe, step):
            worker = SimpleNamespace(node=SimpleNamespace(startup_probe_step=step))
            return probes.Prober(worker, SimpleNamespace(name="c"), kind, probe, {}, 0).timing()
        etcd = {"initialDelaySeconds": 10, "periodSeconds": 10, "failureThreshold": 18}
        self.assertEqual(timing("startup", etcd, 0), (10.0, 10.0, 18))
        # first check at 0.5 s, then every 0.5 s: killed after 0.5 + 0.5 x 379 = 190 s, as 10 + 10 x 18
        self.assertEqual(timing("startup", etcd, 0.5), (0.5, 0.5, 379))
        self.assertEqual(timing("liveness", etcd, 0.5), (10.0, 10.0, 18))
        self.assertEqual(timing("readiness", {"periodSeconds": 1}, 0.5), (0.0, 1.0, 3))
        # a probe already finer than the step is left alone
        self.assertEqual(timing("startup", {"periodSeconds": 0.2, "failureThreshold": 5}, 0.5),
                         (0.0, 0.2, 5))


class StrictImages(Base):
    """--image: a container runs with only its image's commands (hack/image-rootfs.py
    builds the root filesystem from images/base/Containerfile), a command the image lacks
    fails as a runtime says, volumes still show the node's files, and an image the
    kubelet does not have is ErrImagePull."""

    @classmethod
    def setUpClass(cls):
        cls.rootfs = os.path.join(TMP, "image-base")
        subprocess.run([sys.executable, os.path.join(REPO, "hack", "image-rootfs.py"),
                        os.path.join(REPO, "images", "base", "Containerfile"), REPO, cls.rootfs],
                       check=True, capture_output=True)
        NODES["node-s"] = cls.k = Kubelet("node-s", extra=[
            "--image", "example.com/base:*=" + cls.rootfs])

    def _result(self, ns, name):
        wait_for(lambda: get_pod(ns, name)["status"]["phase"] in ("Succeeded", "Failed"), 30,
                 name + " done")
        return cstatus(get_pod(ns, name), "c")["state"]["terminated"]

    def test_image_commands_only(self):
        ns = "kubelet-strict"
        self._ns(ns)
        os.makedirs(self.k.host("/usr/local/bin"), exist_ok=True)
        tool = self.k.host("/usr/local/bin/node-tool.sh")
        with open(tool, "w") as f:
            f.write("#!/bin/sh\necho node-tool ran\n")
        os.chmod(tool, 0o755)
        img = "example.com/base:1"
        self._api_pod(ns, "shell", {"name": "c", "image": img, "command": [
            "bash", "-c", "echo $PATH | tr : '\\n' | grep -c %s; command -v etcd || echo no etcd; "
            "etcdctl version; echo status $?" % self.rootfs]})
        self._api_pod(ns, "missing", {"name": "c", "image": img, "command": ["etcd", "--version"]})
        self._api_pod(ns, "missing-abs", {"name": "c", "image": img, "command": ["/usr/bin/etcd"]})
        self._api_pod(ns, "mapped-name", {"name": "c", "image": img,
                                          "command": ["cluster-etcd-operator", "--version"]})
        # a hostPath volume over /usr/local/bin: the node's files there are on PATH
        body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "volume", "namespace": ns},
                "spec": {"nodeName": self.k.name, "restartPolicy": "Never",
                         "volumes": [{"name": "bin", "hostPath": {"path": "/usr/local/bin"}}],
                         "containers": [{"name": "c", "image": img, "command": ["node-tool.sh"],
                                         "volumeMounts": [{"name": "bin", "mountPath": "/usr/local/bin"}]}]}}
        r = C.post("/api/v1/namespaces/%s/pods" % ns, body)
        self.assertEqual(r.status, 201, r.raw)
        self._api_pod(ns, "unknown-image", {"name": "c", "image": "example.com/other:1",
                                            "command": ["true"]})

        self.assertEqual(self._result(ns, "shell")["exitCode"], 0)
        with open(self.k.host("/var/log/pods/%s_shell/c/0.log" % ns)) as f:
            out = f.read()
        self.assertIn("no etcd", out)            # not in the image, though on the host
        self.assertIn("status 127", out)         # etcdctl: command not found
        self.assertNotIn("sim-bin", out)
        t = self._result(ns, "missing")
        self.assertEqual((t["exitCode"], t["reason"]), (128, "StartError"))
        self.assertIn('exec: "etcd": executable file not found in $PATH', t["message"])
        t = self._result(ns, "missing-abs")
        self.assertIn("stat /usr/bin/etcd: no such file or directory", t["message"])
        t = self._result(ns, "mapped-name")      # the node's command map is not consulted
        self.assertEqual(t["reason"], "StartError")
        self.assertEqual(self._result(ns, "volume")["exitCode"], 0)
        with open(self.k.host("/var/log/pods/%s_volume/c/0.log" % ns)) as f:
            self.assertEqual(f.read(), "node-tool ran\n")
        wait_for(lambda: (cstatus(get_pod(ns, "unknown-image"), "c") or {}).get("state", {})
                 .get("waiting", {}).get("reason") == "ErrImagePull", 20, "ErrImagePull")
        self.assertIn('Failed to pull image "example.com/other:1"',
                      cstatus(get_pod(ns, "unknown-image"), "c")["state"]["waiting"]["message"])


class NodeB(Base):
    """Shutdown, restart on the same root, and SIGKILL of the kubelet."""

    def test_shutdown_restart_and_kill(self):
        k = node("node-b")
        marker = "97%06d" % random.randint(0, 999999)
        ctr = {"name": "c", "image": "x",
               "command": ["sh", "-c", "sleep %s & sleep %s; wait" % (marker, marker)]}
        k.write_manifest("a.json", static_pod("a", [ctr], labels={"revision": "1"}, grace=2))
        k.write_manifest("b.json", static_pod("b", [ctr], labels={"revision": "1"}, grace=2))
        self._ns("kubelet-test-b")
        self._api_pod("kubelet-test-b", "api", dict(ctr), policy="Always", k=k)
        mk = b"sleep\0" + marker.encode()

        def running(n):
            return lambda: len(pids_with(mk)) == n
        wait_for(running(6), 20, "3 pods x 2 sleeps")
        for name in ("a-node-b", "b-node-b"):
            wait_for(lambda: cond(get_pod("default", name), "Ready") == "True", 15, name)

        # SIGTERM: containers stopped, node NotReady, exit 0
        self.assertEqual(k.stop(signal.SIGTERM), 0, k.tail())
        self.assertEqual(pids_with(mk), [])
        self.assertEqual(pids_with(k.root.encode()), [])
        n = C.get("/api/v1/nodes/node-b").json
        ready = [c for c in n["status"]["conditions"] if c["type"] == "Ready"][0]
        self.assertNotEqual(ready["status"], "True")
        p = get_pod("default", "a-node-b")
        self.assertEqual(cond(p, "Ready"), "False")
        self.assertIn("terminated", cstatus(p, "c")["state"])

        # restart on the same root with b's manifest removed meanwhile: a comes back, b's
        # orphaned mirror pod is deleted, the API pod runs again (restartPolicy Always)
        k.remove_manifest("b.json")
        k.start()
        wait_for(lambda: cond(get_pod("default", "a-node-b"), "Ready") == "True", 20,
                 "a-node-b Ready again")
        wait_for(lambda: get_pod("default", "b-node-b") is None, 15, "orphaned mirror deleted")
        wait_for(running(4), 20, "a and api running again")

        # SIGKILL: nothing of the node may survive (PDEATHSIG + PID namespaces)
        k.proc.send_signal(signal.SIGKILL)
        k.proc.wait(10)
        wait_for(lambda: not pids_with(mk) and not pids_with(k.root.encode()), 10,
                 "every container process gone with the kubelet")


if __name__ == "__main__":
    unittest.main(verbosity=2)
