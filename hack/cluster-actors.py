#!/usr/bin/env python3
"""The installer's part of an OpenShift install, for the demo
(hack/local-up.sh): it writes the kube-system/bootstrap ConfigMap (status
complete) once etcds/cluster says EtcdRunningInCluster=True, as the installer
does when bootstrap is done. The kube-apiserver's part (following
etcd-endpoints, publishing config-<N> revisions) is the API simulator's own
(storage mode b). Runs until SIGTERM. Usage: cluster-actors.py KUBECONFIG"""
import json
import signal
import subprocess
import sys
import time

KUBECONFIG = sys.argv[1]
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


def running_in_cluster():
    for c in ((get("etcd", "cluster") or {}).get("status") or {}).get("conditions", []):
        if c.get("type") == "EtcdRunningInCluster":
            return c.get("status") == "True"
    return False


def main():
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    complete = False
    while running:
        if not complete and running_in_cluster():
            r = kubectl("apply", "-f", "-", input=json.dumps({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "bootstrap", "namespace": "kube-system"},
                "data": {"status": "complete"}}))
            if r.returncode == 0:
                print("installer: bootstrap complete", flush=True)
                complete = True
            else:
                print("installer: writing kube-system/bootstrap failed, retrying: %s" % r.stderr.strip(),
                      flush=True)
        time.sleep(1)


if __name__ == "__main__":
    main()
