#!/usr/bin/env python3
"""The other actors of an OpenShift install, for the demo (hack/local-up.sh):
the kube-apiserver's view of etcd (a new config-<N> revision and
kubeapiservers/cluster status whenever etcd-endpoints changes, as
shared/reference/ceo-contracts.md describes) and the installer's
kube-system/bootstrap ConfigMap once etcds/cluster says EtcdRunningInCluster.
Runs until SIGTERM. Usage: cluster-actors.py KUBECONFIG NODE[,NODE...]"""
import json
import signal
import subprocess
import sys
import time

KUBECONFIG, NODES = sys.argv[1], sys.argv[2].split(",")
CACHE = KUBECONFIG + ".kubectl-cache"
running = True


def stop(*_):
    global running
    running = False


def kubectl(*args, input=None):
    return subprocess.run(["kubectl", "--kubeconfig", KUBECONFIG, "--cache-dir", CACHE] + list(args),
                          capture_output=True, text=True, input=input)


def get(*args):
    r = kubectl("get", "-o", "json", *args)
    return json.loads(r.stdout) if r.returncode == 0 else None


def publish(n, servers):
    cfg = json.dumps({"apiServerArguments": {"etcd-servers": servers}})
    kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "config-%d" % n, "namespace": "openshift-kube-apiserver"},
        "data": {"config.yaml": cfg}}))
    kas = get("kubeapiservers.operator.openshift.io", "cluster")
    if not (kas or {}).get("status", {}).get("nodeStatuses"):
        kubectl("patch", "kubeapiservers.operator.openshift.io", "cluster", "--subresource=status", "--type=merge",
                "-p", json.dumps({"status": {"nodeStatuses": [{"nodeName": m} for m in NODES]}}))
    kubectl("patch", "kubeapiservers.operator.openshift.io", "cluster", "--subresource=status", "--type=merge",
            "-p", json.dumps({"status": {"latestAvailableRevision": n,
                                         "nodeStatuses": [{"nodeName": m, "currentRevision": n} for m in NODES]}}))
    print("kube-apiserver revision %d: %s" % (n, ", ".join(servers)), flush=True)


def main():
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    revision, servers, complete = 0, None, False
    while running:
        cm = get("configmap", "-n", "openshift-etcd", "etcd-endpoints")
        if cm:
            ips = list((cm.get("data") or {}).values())
            ann = (cm["metadata"].get("annotations") or {}).get("alpha.installer.openshift.io/etcd-bootstrap")
            want = sorted("https://%s:2379" % ip for ip in set(ips + ([ann] if ann else [])))
            if want != servers:
                revision += 1
                publish(revision, want)
                servers = want
        if not complete:
            etcd = get("etcd", "cluster") or {}
            for c in etcd.get("status", {}).get("conditions", []):
                if c.get("type") == "EtcdRunningInCluster" and c.get("status") == "True":
                    kubectl("apply", "-f", "-", input=json.dumps({
                        "apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "bootstrap", "namespace": "kube-system"},
                        "data": {"status": "complete"}}))
                    print("installer: bootstrap complete", flush=True)
                    complete = True
        time.sleep(1)


if __name__ == "__main__":
    main()
