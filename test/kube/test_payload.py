#!/usr/bin/env python3
"""The release payload (manifests/operator) made and applied as OpenShift's release tooling
does (test/kube/cvo-apply: `oc adm release new`'s image and version substitution, the CVO's
file order, profiles and create-only), on Kubernetes' own control plane (with-kube.sh), and the
operator coming up from it: kube-controller-manager makes its pod, kube-scheduler places it on
a master, a kubelet-sim with strict images runs the image the release named.

- build: every literal pull spec of image-references replaced, none left; a tag without an
  image refused (exit 2, naming it);
- apply: every document the profile includes accepted by the real server's validation
  (the OpenShift CRDs' schemas, the hardened pod spec, the NetworkPolicies, the FlowSchema);
  a document of another profile left out; create-only objects created once; an older upstream
  release's binding of the operator to cluster-admin deleted, and our own older backups' ClusterRole and
  binding (openshift-etcd-backup) too (`kubectl auth can-i` as the
  operator: least privilege only);
- the operator's namespace enforces the restricted Pod Security Standard (a bare pod is refused),
  and the operator's pod is admitted there;
- the operator's pod runs the release's operator image with IMAGE set to its etcd image, reads
  the payload's GenericOperatorConfig (--config: its servingInfo.bindAddress is where the
  kubelet probes it), becomes Ready, takes its lease and reports in clusteroperators/etcd,
  which the apply created with its relatedObjects;
- applied again after a cluster-admin's edits: the create-only etcds/cluster keeps the admin's
  spec, the Deployment's fields are put back.

Usage (ctest kube/payload): with-kube.sh python3 test_payload.py BIN"""
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse

BIN = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
CVO = os.path.join(HERE, "cvo-apply")
PAYLOAD = os.path.join(ROOT, "manifests", "operator")
KUBE_DIR = os.environ["KUBE_DIR"]
OP_IMAGE = "quay.io/openshift/cluster-etcd-operator@sha256:payload"
ETCD_IMAGE = "quay.io/openshift/etcd@sha256:payload"
VERSION = "4.99.0-payload"


def log(msg):
    print("[%s] payload: %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def run(argv, check=True, input=None):
    p = subprocess.run(argv, capture_output=True, text=True, input=input)
    if check and p.returncode != 0:
        raise AssertionError("%s -> %d\n%s%s" % (" ".join(argv), p.returncode, p.stdout, p.stderr))
    return p


def kubectl(*args, check=True, input=None):
    return run(["kubectl"] + list(args), check=check, input=input)


def get(*args):
    p = kubectl("get", *args, "-o", "json", check=False)
    return json.loads(p.stdout) if p.returncode == 0 else None


def wait_for(what, pred, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(1)
    raise AssertionError("timed out after %ds waiting for %s" % (timeout, what))


def node_ip():
    """An address of the control plane's own 127.a.b.0/24 that it does not use."""
    server = kubectl("config", "view", "--minify", "-o", "jsonpath={.clusters[0].cluster.server}").stdout
    host = urllib.parse.urlsplit(server).hostname
    return ".".join(host.split(".")[:3] + ["77"])


def build(out):
    log("build: the release's images and version into the payload")
    bad = run([CVO, "build", "--payload", PAYLOAD, "--image", "etcd=" + ETCD_IMAGE, "--out", out + "-bad"],
              check=False)
    assert bad.returncode == 2 and "cluster-etcd-operator" in bad.stderr, bad.stderr
    p = run([CVO, "build", "--payload", PAYLOAD, "--image", "etcd=" + ETCD_IMAGE,
             "--image", "cluster-etcd-operator=" + OP_IMAGE, "--version", VERSION, "--out", out])
    print(p.stdout, end="")
    text = "".join(open(os.path.join(out, f)).read() for f in os.listdir(out))
    for literal in ("quay.io/openshift/origin-etcd", "quay.io/openshift/origin-cluster-etcd-operator",
                    "0.0.1-snapshot"):
        assert literal not in text, "%s left in the built payload" % literal
    assert OP_IMAGE in text and ETCD_IMAGE in text


def set_bind_address(out, addr):
    """The pod shares the host's network here (kubelet-sim has no pod network namespace), so
    the operator listens on its node's address rather than 0.0.0.0: set through the payload's
    own GenericOperatorConfig, which is what --config must read."""
    path = os.path.join(out, "0000_20_etcd-operator_03_configmap.yaml")
    text = open(path).read()
    new = text.replace("    kind: GenericOperatorConfig\n",
                       "    kind: GenericOperatorConfig\n    servingInfo:\n      bindAddress: %s:8443\n" % addr, 1)
    assert new != text, "no GenericOperatorConfig in %s" % path
    with open(path, "w") as f:
        f.write(new)


def cvo_apply(out):
    p = run([CVO, "apply", "--dir", out, "--timeout", "90"])
    print(p.stdout, end="")
    return {m.group(1): m.group(2) for m in re.finditer(r"^\S+: (.+?): (\w[^\n]*)$", p.stdout, re.M)}


def start_kubelet(name, ip):
    d = os.path.join(KUBE_DIR, "nodes", name)
    os.makedirs(d, exist_ok=True)
    images = os.path.join(os.path.dirname(BIN), "images")
    argv = ["bash", os.path.join(ROOT, "hack", "kubelet-sim.sh"), "start", d, "--node-name", name,
            "--node-ip", ip, "--master", "--no-role-labels", "--operator-binary", BIN,
            "--backoff-base", "0.5", "--backoff-max", "5",
            "--image", "quay.io/openshift/*cluster-etcd-operator[@:]*=%s" % os.path.join(images, "operator"),
            "--image", "quay.io/openshift/etcd[@:]*=%s" % os.path.join(images, "etcd")]
    run(argv)
    kubectl("label", "node", name, "node-role.kubernetes.io/master=", "node-role.kubernetes.io/control-plane=")
    return d


def main():
    assert os.path.isdir(os.path.join(os.path.dirname(BIN), "images", "operator")), \
        "no operator image root under %s (make images)" % os.path.dirname(BIN)
    out = os.path.join(KUBE_DIR, "payload")
    build(out)
    ip = node_ip()
    set_bind_address(out, ip)

    # What the installer and the other operators' payloads create before ours runs: the
    # namespaces our RBAC names, and an etcds/cluster a cluster-admin already configured.
    kubectl("apply", "-f", os.path.join(ROOT, "manifests", "local-up", "00-namespaces.yaml"))
    kubectl("apply", "-f", os.path.join(ROOT, "manifests", "bootstrap", "00_openshift-etcd-ns.yaml"))
    kubectl("create", "namespace", "openshift-kube-apiserver")  # the kube-apiserver operator's payload
    kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "operator.openshift.io/v1", "kind": "Etcd", "metadata": {"name": "cluster"},
        "spec": {"managementState": "Managed", "logLevel": "Debug"}}))

    # A cluster upgraded from an older upstream release: its binding of the operator to
    # cluster-admin, which this payload deletes.
    kubectl("create", "clusterrolebinding", "system:openshift:operator:etcd-operator", "--clusterrole=cluster-admin",
            "--serviceaccount=openshift-etcd-operator:etcd-operator")
    # And one of ours from before 2026-11-30: the backups' ClusterRole and binding under their
    # old name (upstream's names now), which this payload deletes.
    kubectl("create", "clusterrole", "openshift-etcd-backup", "--verb=get,create",
            "--resource=etcdbackups.operator.openshift.io")
    kubectl("create", "clusterrolebinding", "openshift-etcd-backup", "--clusterrole=openshift-etcd-backup",
            "--serviceaccount=openshift-etcd:etcd-backup-sa")

    log("apply: the payload as the CVO applies it")
    first = cvo_apply(out)
    assert first.get("Etcd cluster") == "kept (create-only)", first
    assert first.get("Secret openshift-etcd-operator/etcd-client") == "created", first
    assert first.get("Deployment openshift-etcd-operator/etcd-operator") == "created", first
    assert first.get("ClusterOperator etcd") == "created", first
    assert first.get("FlowSchema openshift-etcd-operator") == "created", first
    assert first.get("NetworkPolicy openshift-etcd-operator/default-deny") == "created", first
    assert first.get("ClusterRoleBinding system:openshift:operator:etcd-operator") == "deleted", first
    assert first.get("ClusterRoleBinding openshift-etcd-backup") == "deleted", first
    assert first.get("ClusterRole openshift-etcd-backup") == "deleted", first
    assert all(v != "excluded" and "fail" not in v for v in first.values()), first
    # Through the real authorizer: least privilege, no cluster-admin left over.
    sa = "--as=system:serviceaccount:openshift-etcd-operator:etcd-operator"
    for verb, what, want in (("list", "nodes", "yes"),
                             ("update", "etcds.operator.openshift.io/cluster --subresource=status", "yes"),
                             ("update", "etcds.operator.openshift.io/cluster", "no"),  # the spec is the admin's
                             ("delete", "nodes", "no"), ("delete", "namespaces", "no"),
                             ("list", "secrets -n default", "no")):
        # The authorizer reads RBAC from its own cache: a deletion reaches it a moment later.
        got = wait_for("can-i %s %s: %s" % (verb, what, want), lambda: (lambda g: g if g == want else None)(
            kubectl("auth", "can-i", sa, verb, *what.split(), check=False).stdout.strip()), 15)
        assert got == want
    assert get("etcd", "cluster")["spec"].get("logLevel") == "Debug"
    co = get("clusteroperator", "etcd")
    assert {(r["resource"], r["name"]) for r in co["status"]["relatedObjects"]} >= {
        ("etcds", "cluster"), ("namespaces", "openshift-etcd"), ("namespaces", "openshift-etcd-operator")}, co
    # The hardened pod spec, as kube-apiserver stored it (a field it drops would be gone here).
    dep = get("deployment", "-n", "openshift-etcd-operator", "etcd-operator")
    spec = dep["spec"]["template"]["spec"]
    c = spec["containers"][0]
    assert spec.get("hostUsers") is False, spec
    assert spec["securityContext"]["runAsNonRoot"] is True, spec
    assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", spec
    assert c["securityContext"]["readOnlyRootFilesystem"] is True, c
    assert c["securityContext"]["capabilities"]["drop"] == ["ALL"], c
    assert c["securityContext"]["allowPrivilegeEscalation"] is False, c
    env = {e["name"]: e.get("value") for e in c["env"]}
    assert c["image"] == OP_IMAGE and env["IMAGE"] == ETCD_IMAGE and env["OPERATOR_IMAGE"] == OP_IMAGE, c
    assert env["OPERATOR_IMAGE_VERSION"] == VERSION, env

    # The namespace enforces the restricted Pod Security Standard: a pod without our hardening is
    # refused there, so the operator's pod below is admitted because it meets it.
    bare = kubectl("-n", "openshift-etcd-operator", "run", "unhardened", "--image=quay.io/openshift/cluster-etcd-operator:unhardened", "--restart=Never",
                   "--command", "--", "sleep", "1", check=False)
    assert bare.returncode != 0 and "violates PodSecurity \"restricted" in bare.stderr, bare.stderr

    log("the operator's pod: placed on a master, run from the release's image")
    kdir = start_kubelet("master-0", ip)
    try:
        pod = wait_for("the operator's pod to be Ready", lambda: next((
            p for p in (get("pods", "-n", "openshift-etcd-operator", "-l", "app=etcd-operator") or {}).get("items", [])
            if any(cd["type"] == "Ready" and cd["status"] == "True" for cd in p["status"].get("conditions", []))),
            None), 150)
        name = pod["metadata"]["name"]
        assert pod["spec"]["nodeName"] == "master-0", pod["spec"]
        assert pod["status"]["containerStatuses"][0]["image"] == OP_IMAGE, pod["status"]
        # kubelet-sim serves no kubelet API (kubectl logs): the container's log on the node.
        cdir = os.path.join(kdir, "var", "log", "pods", "openshift-etcd-operator_" + name, "etcd-operator")
        logs = "".join(open(os.path.join(cdir, f)).read() for f in sorted(os.listdir(cdir)))
        assert "on %s:8443" % ip in logs, logs[-3000:]  # servingInfo.bindAddress of --config
        lease = wait_for("the operator's lease", lambda: (get(
            "lease", "-n", "openshift-etcd-operator", "openshift-cluster-etcd-operator-lock") or {}).get(
            "spec", {}).get("holderIdentity", "").startswith(name) and True, 60)
        assert lease
        co = wait_for("the operator's conditions in clusteroperators/etcd", lambda: (
            lambda o: o if {cd["type"] for cd in o["status"].get("conditions", [])} >= {
                "Available", "Progressing", "Degraded"} else None)(get("clusteroperator", "etcd")), 60)
        log("operator %s Ready, leading, reporting: %s" % (name, ", ".join(
            "%s=%s" % (cd["type"], cd["status"]) for cd in co["status"]["conditions"])))

        log("apply again after a cluster-admin's edits")
        kubectl("patch", "etcd", "cluster", "--type=merge", "-p", '{"spec":{"logLevel":"Trace"}}')
        kubectl("-n", "openshift-etcd-operator", "patch", "deployment", "etcd-operator", "--type=merge",
                "-p", '{"spec":{"template":{"spec":{"priorityClassName":"system-node-critical"}}}}')
        again = cvo_apply(out)
        assert again.get("Etcd cluster") == "kept (create-only)", again
        assert again.get("Deployment openshift-etcd-operator/etcd-operator") == "configured", again
        assert again.get("ClusterOperator etcd") == "kept (the operator's)", again
        assert again.get("ClusterRoleBinding system:openshift:operator:etcd-operator") == "absent (delete)", again
        assert get("etcd", "cluster")["spec"]["logLevel"] == "Trace"
        dep = get("deployment", "-n", "openshift-etcd-operator", "etcd-operator")
        assert dep["spec"]["template"]["spec"]["priorityClassName"] == "system-cluster-critical", dep
    finally:
        run(["bash", os.path.join(ROOT, "hack", "kubelet-sim.sh"), "stop", kdir], check=False)
        for f in ("kubelet-sim.log",):
            p = os.path.join(kdir, f)
            if os.path.exists(p):
                print("---- tail of %s" % p)
                print("".join(open(p).readlines()[-25:]), end="")
    shutil.rmtree(out + "-bad", ignore_errors=True)
    log("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
