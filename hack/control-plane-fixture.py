#!/usr/bin/env python3
"""What the other control-plane operators leave on a real master and the
disaster-recovery scripts read, for the simulated control plane (the demo and
the DR e2e tests): the kube-apiserver, kube-controller-manager and
kube-scheduler static pods (a manifest naming its revision directory; the
container only sleeps: test/kube/control-plane runs the API server), the node's
localhost.kubeconfig, and their clusteroperators, settled.

  hack/control-plane-fixture.py KUBECONFIG NODE_ROOT...   (a master's kubelet-sim root each)
Python 3 stdlib and kubectl."""
import json
import os
import shutil
import subprocess
import sys
import time

PODS = (("kube-apiserver", "openshift-kube-apiserver", 4),
        ("kube-controller-manager", "openshift-kube-controller-manager", 3),
        ("kube-scheduler", "openshift-kube-scheduler", 2))


def kubectl(kubeconfig, *args, stdin=None, check=True):
    r = subprocess.run(["kubectl", "--kubeconfig", kubeconfig] + list(args), input=stdin, capture_output=True,
                       text=True)
    if check and r.returncode != 0:
        raise SystemExit("control-plane-fixture: kubectl %s: %s" % (" ".join(args), r.stderr.strip()))
    return r


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def node(kubeconfig, root):
    etc = os.path.join(root, "etc", "kubernetes")
    for name, ns, rev in PODS:
        rdir = os.path.join(etc, "static-pod-resources", "%s-pod-%d" % (name, rev))
        write(os.path.join(rdir, "configmaps", "config", "config.yaml"), "# %s revision %d\n" % (name, rev))
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "namespace": ns, "labels": {"app": name, "revision": str(rev)}},
               "spec": {"hostNetwork": True, "terminationGracePeriodSeconds": 1, "containers": [
                   {"name": name, "image": "quay.io/openshift/%s:sim" % name, "command": ["sleep", "2147483647"],
                    "volumeMounts": [{"name": "resource-dir", "mountPath": "/etc/kubernetes/static-pod-resources"}]}],
                   "volumes": [{"name": "resource-dir", "hostPath": {
                       "path": "/etc/kubernetes/static-pod-resources/%s-pod-%d" % (name, rev)}}]}}
        text = json.dumps(pod, indent=1) + "\n"
        write(os.path.join(rdir, "%s-pod.yaml" % name), text)
        write(os.path.join(etc, "manifests", "%s-pod.yaml" % name), text)
    kc = os.path.join(etc, "static-pod-resources", "kube-apiserver-certs", "secrets", "node-kubeconfigs")
    os.makedirs(kc, exist_ok=True)
    shutil.copy(kubeconfig, os.path.join(kc, "localhost.kubeconfig"))


def main():
    if len(sys.argv) < 3:
        raise SystemExit("usage: hack/control-plane-fixture.py KUBECONFIG NODE_ROOT...")
    kubeconfig, roots = sys.argv[1], sys.argv[2:]
    for _, ns, _ in PODS:
        kubectl(kubeconfig, "create", "namespace", ns, check=False)
    for root in roots:
        node(kubeconfig, root)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for name, _, _ in PODS:
        kubectl(kubeconfig, "apply", "-f", "-", stdin=json.dumps({
            "apiVersion": "config.openshift.io/v1", "kind": "ClusterOperator", "metadata": {"name": name},
            "spec": {}}))
        kubectl(kubeconfig, "patch", "clusteroperator", name, "--subresource=status", "--type=merge", "-p",
                json.dumps({"status": {"conditions": [
                    {"type": t, "status": v, "lastTransitionTime": now, "reason": "AsExpected", "message": ""}
                    for t, v in (("Available", "True"), ("Progressing", "False"), ("Degraded", "False"))]}}))


if __name__ == "__main__":
    main()
