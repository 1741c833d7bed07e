#!/usr/bin/env python3
"""Conformance of test/kube/control-plane, the harness every e2e scenario on Kubernetes' own
control plane stands on. On a TLS etcd of its own (client certificates required), it checks:
- kube-apiserver, kube-controller-manager and kube-scheduler of the pinned release serve
  (`kubectl version` names it), with the OpenShift CRDs established;
- a node's kubeconfig authenticates as system:node:<name> in system:nodes, and the Node
  authorizer and NodeRestriction hold it to its own objects (403s the `denials` command lists);
- ServiceAccount tokens (TokenRequest) authenticate and RBAC applies to them;
- kube-controller-manager runs: the ServiceAccount controller gives a new namespace its
  `default` account;
- the kube-apiserver operator's part: a changed etcd-endpoints ConfigMap publishes
  config-N and rolls kube-apiserver (a new PID) onto the new etcd-servers with no request
  refused through the load balancer meanwhile, and every node reaches currentRevision N; the
  masters' localhost etcd (--etcd-local-file) ends etcd-servers and reaches a healthy member;
- kubelet-sim as a kubelet (test/sim/KUBELET-SIM.md): with its node's certificate it registers
  its Node, renews its Lease, reports a static pod's mirror pod and runs a pod bound to it,
  and the server refuses it nothing.
Usage: test_control_plane.py"""
import http.client
import json
import os
import random
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CP = os.path.join(HERE, "control-plane")
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
from e2e import wait_for  # noqa: E402


def log(msg):
    print("[%s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True)


def etcd_pki(d, ip):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
            os.path.join(d, "ca.key"), "-out", os.path.join(d, "ca.crt"), "-days", "2", "-subj", "/CN=etcd-ca")
    for name, ext in (("server", "extendedKeyUsage=serverAuth,clientAuth\nsubjectAltName=IP:%s,IP:127.0.0.1" % ip),
                      ("client", "extendedKeyUsage=clientAuth")):
        with open(os.path.join(d, name + ".ext"), "w") as f:
            f.write("basicConstraints=CA:FALSE\n%s\n" % ext)
        openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                os.path.join(d, name + ".key"), "-out", os.path.join(d, name + ".csr"), "-subj", "/CN=" + name)
        openssl("x509", "-req", "-in", os.path.join(d, name + ".csr"), "-CA", os.path.join(d, "ca.crt"), "-CAkey",
                os.path.join(d, "ca.key"), "-CAcreateserial", "-days", "2", "-extfile", os.path.join(d, name + ".ext"),
                "-out", os.path.join(d, name + ".crt"))


def _die_with_parent():
    import ctypes
    ctypes.CDLL(None).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG


class World:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ceo-kube-cp-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
        self.net = "127.%d.%d" % (random.randint(20, 250), random.randint(1, 250))
        self.procs = []
        r = subprocess.run(["bash", os.path.join(ROOT, "hack", "build-kube.sh"), "--bin-dir"], capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise SystemExit(r.stderr.strip())
        self.bin = r.stdout.strip()

    def spawn(self, name, argv):
        # SIGTERM when the test dies (ctest's timeout kills it): etcd, the control plane (which
        # stops its own children then) and kubelets do not outlive it.
        p = subprocess.Popen(argv, stdout=open(os.path.join(self.dir, name + ".log"), "w"), stderr=subprocess.STDOUT,
                             preexec_fn=_die_with_parent)
        self.procs.append(p)
        return p

    def kubectl(self, kubeconfig, *args, check=True, input=None):
        r = subprocess.run([os.path.join(self.bin, "kubectl"), "--kubeconfig", kubeconfig] + list(args),
                           capture_output=True, text=True, input=input)
        if check and r.returncode != 0:
            raise AssertionError("kubectl %s: %s" % (" ".join(args), r.stderr.strip()))
        return r

    def close(self, failed):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(timeout=40)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        if failed:
            for f in sorted(os.listdir(self.dir)):
                if f.endswith(".log"):
                    sys.stdout.write("---- %s ----\n%s\n" % (f, open(os.path.join(self.dir, f)).read()[-2500:]))
            for f in ("kube-apiserver-a.log", "kube-apiserver-b.log"):
                p = os.path.join(self.dir, "kube", f)
                if os.path.exists(p):
                    sys.stdout.write("---- kube/%s ----\n%s\n" % (f, open(p).read()[-2500:]))
        shutil.rmtree(self.dir, ignore_errors=True)


def in_world(run):
    """run(World) in a World of its own, stopped (logs shown on failure) however run ends."""
    w = World()
    failed = True
    try:
        run(w)
        failed = False
    finally:
        w.close(failed)
    log("ok")


def main():
    in_world(run)


def start_control_plane(w, kas_node_names="n1,n2", local_etcd=False, watch_cache=True):
    """etcd (TLS, client certificates required) and the control plane on it, serving with the
    CRDs: (the control plane's directory, the admin kubeconfig, etcd's URL, etcd's IP). With
    local_etcd, w.dir/masters-local-etcd names etcd as the masters' localhost etcd."""
    ip_etcd, ip_api = w.net + ".5", w.net + ".1"
    pki = os.path.join(w.dir, "etcd-pki")
    os.makedirs(pki)
    etcd_pki(pki, ip_etcd)
    f = lambda n: os.path.join(pki, n)  # noqa: E731
    url = "https://%s:2379" % ip_etcd
    w.spawn("etcd", ["etcd", "--name", "e", "--data-dir", os.path.join(w.dir, "etcd"),
                     "--listen-client-urls", url, "--advertise-client-urls", url,
                     "--listen-peer-urls", "http://%s:2380" % ip_etcd,
                     "--initial-advertise-peer-urls", "http://%s:2380" % ip_etcd,
                     "--initial-cluster", "e=http://%s:2380" % ip_etcd,
                     "--cert-file", f("server.crt"), "--key-file", f("server.key"),
                     "--trusted-ca-file", f("ca.crt"), "--client-cert-auth"])
    kdir = os.path.join(w.dir, "kube")
    cp = w.spawn("control-plane", [sys.executable, CP, "run", "--dir", kdir, "--ip", ip_api, "--bin-dir", w.bin,
                                   "--etcd-servers", url, "--etcd-cacert", f("ca.crt"), "--etcd-cert",
                                   f("client.crt"), "--etcd-key", f("client.key"), "--kas-node-names",
                                   kas_node_names, "--watch-cache", "true" if watch_cache else "false"]
                      + (["--etcd-local-file", os.path.join(w.dir, "masters-local-etcd")] if local_etcd else []))
    if local_etcd:
        with open(os.path.join(w.dir, "masters-local-etcd"), "w") as fh:
            fh.write(ip_etcd + "\n")

    def ready():
        # A control plane that exited never serves: say so now, not when the 240 s are up.
        return "exited" if cp.poll() is not None else os.path.exists(os.path.join(kdir, "ready"))
    if wait_for("the control plane to serve", ready, 240) == "exited":
        raise AssertionError("control-plane exited %s before serving (its log: %s)" % (
            cp.returncode, os.path.join(w.dir, "control-plane.log")))
    return kdir, os.path.join(kdir, "kubeconfig"), url, ip_etcd


def start_fault_proxy(w, kdir, etcd_url):
    """test/kube/api-fault-proxy in front of the control plane in kdir, on the world's address .3,
    its controls in band (--sim-in-band) and able to compact etcd at etcd_url (start_control_plane's
    certificates): the proxy's directory (url, control-url, pid) once it serves."""
    ip = w.net + ".3"
    crt, key = subprocess.run([sys.executable, CP, "serving-cert", kdir, "fault-proxy", ip], capture_output=True,
                              text=True, check=True).stdout.split()
    pki = os.path.join(w.dir, "etcd-pki")
    pdir = os.path.join(w.dir, "proxy")
    p = w.spawn("fault-proxy", [sys.executable, os.path.join(HERE, "api-fault-proxy"), "--listen", ip + ":0",
                                "--control", ip + ":0",
                                "--upstream", open(os.path.join(kdir, "server-url")).read().strip(),
                                "--upstream-ca", os.path.join(kdir, "ca.crt"), "--cert", crt, "--key", key,
                                "--dir", pdir, "--sim-in-band", "--etcd-url", etcd_url,
                                "--etcd-cacert", os.path.join(pki, "ca.crt"),
                                "--etcd-cert", os.path.join(pki, "client.crt"),
                                "--etcd-key", os.path.join(pki, "client.key")])

    def up():
        assert p.poll() is None, "api-fault-proxy exited %s" % p.returncode
        return os.path.exists(os.path.join(pdir, "pid"))
    wait_for("the fault proxy to serve", up, 30, interval=0.1)
    return pdir


def run(w):
    kdir, admin, url, ip_etcd = start_control_plane(w, local_etcd=True)

    # The pinned release, built from k8s.io/kubernetes.
    v = json.loads(w.kubectl(admin, "version", "-o", "json").stdout)
    want = subprocess.run([os.path.join(w.bin, "kube-apiserver"), "--version"], capture_output=True,
                          text=True).stdout.split()[-1]
    assert v["serverVersion"]["gitVersion"] == want == v["clientVersion"]["gitVersion"], v
    assert want.startswith("v1."), want
    log("kube-apiserver %s, kubectl %s" % (v["serverVersion"]["gitVersion"], v["clientVersion"]["gitVersion"]))
    for crd in ("etcds.operator.openshift.io", "clusteroperators.config.openshift.io",
                "kubeapiservers.operator.openshift.io", "etcdbackups.operator.openshift.io"):
        w.kubectl(admin, "get", "crd", crd)
    # The CRDs' real schema validation: a bad enum is refused.
    r = w.kubectl(admin, "apply", "-f", "-", check=False, input=json.dumps({
        "apiVersion": "operator.openshift.io/v1", "kind": "Etcd", "metadata": {"name": "cluster"},
        "spec": {"managementState": "Sometimes"}}))
    assert r.returncode != 0 and "managementState" in r.stderr, r.stderr

    # kube-controller-manager: a new namespace gets its default ServiceAccount.
    w.kubectl(admin, "create", "namespace", "openshift-etcd")
    wait_for("ServiceAccount openshift-etcd/default (kube-controller-manager)", lambda: w.kubectl(
        admin, "-n", "openshift-etcd", "get", "serviceaccount", "default", check=False).returncode == 0, 60)

    # A node's identity: system:node:n1 in system:nodes, held by the Node authorizer and NodeRestriction.
    n1 = subprocess.run([sys.executable, CP, "node-kubeconfig", kdir, "n1"], capture_output=True, text=True,
                        check=True).stdout.strip()
    who = json.loads(w.kubectl(n1, "auth", "whoami", "-o", "json").stdout)["status"]["userInfo"]
    assert who["username"] == "system:node:n1" and "system:nodes" in who["groups"], who
    for node in ("n1", "n2"):
        w.kubectl(admin, "create", "-f", "-", input=json.dumps({
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}))
    w.kubectl(n1, "label", "node", "n1", "topology.kubernetes.io/zone=a")
    r = w.kubectl(n1, "label", "node", "n2", "topology.kubernetes.io/zone=a", check=False)
    assert r.returncode != 0 and "forbidden" in r.stderr.lower(), r.stderr
    w.kubectl(admin, "-n", "openshift-etcd", "create", "secret", "generic", "etcd-signer", "--from-literal=k=v")
    r = w.kubectl(n1, "-n", "openshift-etcd", "get", "secret", "etcd-signer", check=False)
    assert r.returncode != 0 and "forbidden" in r.stderr.lower(), r.stderr

    # A ServiceAccount's token (TokenRequest) authenticates; RBAC grants nothing by default.
    w.kubectl(admin, "-n", "openshift-etcd", "create", "serviceaccount", "probe")
    token = w.kubectl(admin, "-n", "openshift-etcd", "create", "token", "probe").stdout.strip()
    sa = os.path.join(w.dir, "probe.kubeconfig")  # the token alone: no client certificate beside it
    with open(sa, "w") as fh:
        fh.write("apiVersion: v1\nkind: Config\ncurrent-context: p\nclusters:\n- name: k\n  cluster:\n"
                 "    server: %s\n    certificate-authority: %s\nusers:\n- name: p\n  user:\n    token: %s\n"
                 "contexts:\n- name: p\n  context:\n    cluster: k\n    user: p\n" % (
                     open(os.path.join(kdir, "server-url")).read().strip(), os.path.join(kdir, "ca.crt"), token))
    r = w.kubectl(sa, "-n", "openshift-etcd", "get", "configmaps", check=False)
    assert r.returncode != 0 and "system:serviceaccount:openshift-etcd:probe" in r.stderr, r.stderr

    kubelet_as_node(w, kdir, admin)

    # The denials the audit log recorded: ours (nodes, openshift-* ServiceAccounts) only.
    def denied():
        out = subprocess.run([sys.executable, CP, "denials", kdir], capture_output=True, text=True).stdout
        return out.splitlines()
    lines = wait_for("the audit log to record the denials", lambda: len(denied()) >= 3 and denied(), 30)
    # kubelet-sim asked for nothing the Node authorizer and NodeRestriction refuse.
    assert not [ln for ln in lines if ln.startswith("system:node:n3 ")], lines
    assert any("system:node:n1 get /api/v1/namespaces/openshift-etcd/secrets/etcd-signer" in ln for ln in lines), lines
    assert any(ln.startswith("system:node:n1 get /api/v1/nodes/n2") for ln in lines), lines  # not even its read
    assert any(ln.startswith("system:serviceaccount:openshift-etcd:probe list") for ln in lines), lines
    log("denials recorded: %d" % len(lines))

    # The kube-apiserver operator's part: etcd-endpoints changes, a revision rolls.
    w.kubectl(admin, "apply", "-f", "-", input=json.dumps({
        "apiVersion": "operator.openshift.io/v1", "kind": "KubeAPIServer", "metadata": {"name": "cluster"},
        "spec": {"managementState": "Managed"}}))
    w.kubectl(admin, "create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "etcd-endpoints", "namespace": "openshift-etcd"},
        "data": {"1": ip_etcd}}))

    def revision(n):
        kas = json.loads(w.kubectl(admin, "get", "kubeapiservers.operator.openshift.io", "cluster", "-o",
                                   "json").stdout).get("status") or {}
        at = {s["nodeName"]: s.get("currentRevision") for s in kas.get("nodeStatuses") or []}
        return kas.get("latestAvailableRevision") == n and at == {"n1": n, "n2": n}
    wait_for("revision 1 on n1 and n2", lambda: revision(1), 60)
    pid = int(open(os.path.join(kdir, "kube-apiserver.pid")).read())

    # A second URL (the annotation's bootstrap IP, where nothing listens): a new revision, and
    # kube-apiserver rolled onto it while a reader keeps asking through the load balancer.
    errors, stop = [], threading.Event()

    def reader():
        while not stop.is_set():
            r = w.kubectl(admin, "get", "namespace", "openshift-etcd", "-o", "name", check=False)
            if r.returncode != 0:
                errors.append(r.stderr.strip())
            time.sleep(0.2)
    t = threading.Thread(target=reader)
    t.start()
    try:
        w.kubectl(admin, "-n", "openshift-etcd", "annotate", "configmap", "etcd-endpoints",
                  "alpha.installer.openshift.io/etcd-bootstrap=%s.9" % w.net)
        wait_for("revision 2 on n1 and n2", lambda: revision(2), 120)
        time.sleep(2)
    finally:
        stop.set()
        t.join()
    cfg = json.loads(w.kubectl(admin, "-n", "openshift-kube-apiserver", "get", "configmap", "config-2", "-o",
                               "json").stdout)
    servers = json.loads(cfg["data"]["config.yaml"])["apiServerArguments"]["etcd-servers"]
    # The masters' localhost etcd comes last, as the kube-apiserver operator puts it.
    assert servers[:-1] == sorted([url, "https://%s.9:2379" % w.net]), servers
    assert servers[-1].startswith("https://127.0.0.1:"), servers
    local_etcd(w, servers[-1])
    new = int(open(os.path.join(kdir, "kube-apiserver.pid")).read())
    assert new != pid, "kube-apiserver was not restarted (pid %d)" % pid
    args = open("/proc/%d/cmdline" % new).read().split("\0")
    assert "--etcd-servers=" + ",".join(servers) in args, args
    assert not errors, "requests failed while kube-apiserver rolled: %s" % errors[:3]
    log("revision 2 rolled: kube-apiserver pid %d -> %d, no request failed" % (pid, new))
    follow_etcd_tls(w, admin, kdir, revision)


def follow_etcd_tls(w, admin, kdir, revision):
    """The etcd operator publishes a CA bundle trusting a second signer (the first step of a
    signer's rotation) and its client certificate in openshift-config: a revision carries them
    and kube-apiserver restarts with them; the same certificates written otherwise change nothing."""
    pki = os.path.join(w.dir, "etcd-pki")
    f = lambda n: os.path.join(pki, n)  # noqa: E731
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
            f("ca2.key"), "-out", f("ca2.crt"), "-days", "2", "-subj", "/CN=etcd-ca-2")
    ca, ca2 = open(f("ca.crt")).read(), open(f("ca2.crt")).read()
    w.kubectl(admin, "create", "namespace", "openshift-config")
    w.kubectl(admin, "-n", "openshift-config", "create", "secret", "tls", "etcd-client", "--cert", f("client.crt"),
              "--key", f("client.key"))
    w.kubectl(admin, "-n", "openshift-config", "create", "configmap", "etcd-serving-ca",
              "--from-literal=ca-bundle.crt=" + ca + ca2)
    pid = int(open(os.path.join(kdir, "kube-apiserver.pid")).read())
    wait_for("revision 3 on n1 and n2", lambda: revision(3), 120)
    new = int(open(os.path.join(kdir, "kube-apiserver.pid")).read())
    assert new != pid, "kube-apiserver was not restarted for the new bundle (pid %d)" % pid
    args = open("/proc/%d/cmdline" % new).read().split("\0")
    cafile = [a.split("=", 1)[1] for a in args if a.startswith("--etcd-cafile=")]
    assert cafile and os.path.dirname(cafile[0]).startswith(os.path.join(kdir, "etcd-tls-")), args
    assert open(cafile[0]).read() == ca + ca2, "kube-apiserver's --etcd-cafile is not the published bundle"
    w.kubectl(admin, "get", "namespace", "openshift-etcd")  # through etcd, on the new files
    # The same two CAs the other way round: the same trust, no revision.
    w.kubectl(admin, "-n", "openshift-config", "patch", "configmap", "etcd-serving-ca", "--type=merge", "-p",
              json.dumps({"data": {"ca-bundle.crt": ca2 + ca}}))
    time.sleep(4)  # the control plane looks every second
    kas = json.loads(w.kubectl(admin, "get", "kubeapiservers.operator.openshift.io", "cluster", "-o",
                               "json").stdout)["status"]
    assert kas["latestAvailableRevision"] == 3, kas
    assert int(open(os.path.join(kdir, "kube-apiserver.pid")).read()) == new
    log("revision 3: kube-apiserver (pid %d -> %d) reaches etcd with the published bundle; the same "
        "certificates in another order made no revision" % (pid, new))


def local_etcd(w, url):
    """The localhost etcd forwards to a master whose etcd answers, verified as 127.0.0.1 (a name
    every member's certificate holds), and refuses once no master's etcd is listed."""
    pki = os.path.join(w.dir, "etcd-pki")
    ctx = ssl.create_default_context(cafile=os.path.join(pki, "ca.crt"))
    ctx.load_cert_chain(os.path.join(pki, "client.crt"), os.path.join(pki, "client.key"))
    port = int(url.rsplit(":", 1)[1])

    def health():
        c = http.client.HTTPSConnection("127.0.0.1", port, timeout=5, context=ctx)
        try:
            c.request("GET", "/health")
            return json.loads(c.getresponse().read()).get("health")
        except (OSError, http.client.HTTPException, ValueError) as e:
            return "refused: %s" % e
        finally:
            c.close()
    assert wait_for("etcd through the localhost forwarder", lambda: health() == "true" and health(), 20)
    with open(os.path.join(w.dir, "masters-local-etcd"), "w") as fh:
        fh.write("")
    wait_for("the forwarder to refuse with no master listed", lambda: health().startswith("refused"), 20)
    log("localhost etcd %s: forwards to a healthy master, refuses with none" % url)


def kubelet_as_node(w, kdir, admin):
    """kubelet-sim as a kubelet on the real server: its node's certificate, under the Node
    authorizer and NodeRestriction. It registers its Node (the admin labels it, as a kubelet may
    not), renews its Lease in kube-node-lease, creates the mirror pod of a static pod (owned by
    the Node) and runs a pod bound to it with a ConfigMap volume and its ServiceAccount's token."""
    kc = subprocess.run([sys.executable, CP, "node-kubeconfig", kdir, "n3"], capture_output=True, text=True,
                        check=True).stdout.strip()
    root = os.path.join(w.dir, "node-n3")
    os.makedirs(os.path.join(root, "etc", "kubernetes", "manifests"))
    w.spawn("kubelet-n3", [os.path.join(ROOT, "test", "sim", "kubelet-sim"), "--node-name", "n3", "--node-ip",
                           w.net + ".13", "--root", root, "--kubeconfig", kc, "--master", "--no-role-labels",
                           "--heartbeat-period", "2"])
    marker = "kubelet-n3-%d" % os.getpid()
    with open(os.path.join(root, "etc", "kubernetes", "manifests", "sleeper.yaml"), "w") as f:
        json.dump({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sleeper", "namespace": "openshift-etcd"},
                   "spec": {"containers": [{"name": "s", "image": "x", "command": ["sleep", "3600"],
                                            "env": [{"name": "MARK", "value": marker}]}]}}, f)

    def node():
        n = json.loads(w.kubectl(admin, "get", "node", "n3", "-o", "json").stdout)
        return n if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"]["conditions"]) else None
    n = wait_for("node n3 Ready", node, 60)
    assert n["spec"].get("taints") == [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}], n["spec"]
    assert "node-role.kubernetes.io/master" not in n["metadata"]["labels"], n["metadata"]["labels"]
    w.kubectl(admin, "label", "node", "n3", "node-role.kubernetes.io/master=")

    def mirror():
        p = json.loads(w.kubectl(admin, "-n", "openshift-etcd", "get", "pod", "sleeper-n3", "-o", "json",
                                 check=False).stdout or "{}")
        return p if (p.get("status") or {}).get("phase") == "Running" else None
    p = wait_for("mirror pod sleeper-n3 Running", mirror, 60)
    assert p["metadata"]["ownerReferences"][0]["kind"] == "Node", p["metadata"]
    assert "kubernetes.io/config.mirror" in p["metadata"]["annotations"], p["metadata"]

    lease = lambda: json.loads(w.kubectl(admin, "-n", "kube-node-lease", "get", "lease", "n3", "-o",  # noqa: E731
                                         "json", check=False).stdout or "{}").get("spec", {}).get("renewTime")
    first = wait_for("lease kube-node-lease/n3", lease, 30)
    wait_for("lease n3 renewed", lambda: lease() not in (None, first), 30)

    w.kubectl(admin, "-n", "openshift-etcd", "create", "configmap", "n3-config", "--from-literal=greeting=hello")
    w.kubectl(admin, "create", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "reader", "namespace": "openshift-etcd"},
        "spec": {"nodeName": "n3", "restartPolicy": "Never",
                 "containers": [{"name": "c", "image": "x", "command": ["sh", "-c",
                                 "test \"$(cat /cfg/greeting)\" = hello && test -s "
                                 "/var/run/secrets/kubernetes.io/serviceaccount/token"],
                                 "volumeMounts": [{"name": "cfg", "mountPath": "/cfg"}]}],
                 "volumes": [{"name": "cfg", "configMap": {"name": "n3-config"}}]}}))
    phase = lambda: json.loads(w.kubectl(admin, "-n", "openshift-etcd", "get", "pod", "reader", "-o",  # noqa: E731
                                         "json").stdout)["status"].get("phase")
    assert wait_for("pod reader to finish", lambda: phase() in ("Succeeded", "Failed") and phase(), 60) == \
        "Succeeded", w.kubectl(admin, "-n", "openshift-etcd", "get", "pod", "reader", "-o", "yaml").stdout
    log("kubelet-sim as system:node:n3: Node Ready, Lease renewed, mirror pod, a pod with its ConfigMap and token")


if __name__ == "__main__":
    main()
