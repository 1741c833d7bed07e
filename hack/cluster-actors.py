#!/usr/bin/env python3
"""The installer's part of an OpenShift install, for the demo
(hack/local-up.sh): it writes the kube-system/bootstrap ConfigMap (status
complete) once etcds/cluster says EtcdRunningInCluster=True, as the installer
does when bootstrap is done; then, once EtcdBootstrapMemberRemoved=True (what
openshift-install waits for), it destroys the bootstrap host: SIGTERM to that
host's kubelet simulator (the PID local-up recorded), which stops its pods,
then the Node and its mirror pods are deleted, as the node lifecycle
controller and the pod GC would. The kube-apiserver operator's part (following
etcd-endpoints, publishing config-<N> revisions, rolling kube-apiserver onto
them) is test/kube/control-plane's. Runs until SIGTERM.
Usage: cluster-actors.py KUBECONFIG BOOTSTRAP_KUBELET_PIDFILE"""
import json
import os
import signal
import subprocess
import sys
import time

KUBECONFIG = sys.argv[1]
BOOTSTRAP_KUBELET_PIDFILE = sys.argv[2]
CACHE = KUBECONFIG + ".kubectl-cache"
running = True


def stop(*_):
    global running
    running = False


def say(msg, when=None):
    """One line of progress, stamped like the operator's log lines (local-up merges them by time)."""
    print("%s %s" % (time.strftime("%H:%M:%S", time.localtime(when)), msg), flush=True)


def kubectl(*args, input=None):
    return subprocess.run(["kubectl", "--kubeconfig", KUBECONFIG, "--cache-dir", CACHE] + list(args),
                          capture_output=True, text=True, input=input)


def get(*args):
    r = kubectl("get", "-o", "json", *args)
    return json.loads(r.stdout) if r.returncode == 0 else None


def condition_true(t):
    for c in ((get("etcd", "cluster") or {}).get("status") or {}).get("conditions", []):
        if c.get("type") == t:
            return c.get("status") == "True"
    return False


def destroy_bootstrap_host():
    """True once the bootstrap host is gone."""
    try:
        pid = int(open(BOOTSTRAP_KUBELET_PIDFILE).read())
    except (OSError, ValueError):
        pid = None
    if pid:
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        for _ in range(300):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            say("installer: the bootstrap kubelet (pid %d) did not stop in 30 s, retrying" % pid)
            return False
    for args in (("delete", "node", "bootstrap"),
                 ("delete", "pods", "-n", "openshift-etcd", "--field-selector", "spec.nodeName=bootstrap",
                  "--grace-period=0", "--force")):
        r = kubectl(*args, "--ignore-not-found", "--wait=false")
        if r.returncode != 0:
            say("installer: %s failed, retrying: %s" % (" ".join(args[:2]), r.stderr.strip()))
            return False
    say("installer: bootstrap host destroyed")
    return True


def main():
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    complete = destroyed = False
    while running:
        if complete and not destroyed and condition_true("EtcdBootstrapMemberRemoved"):
            destroyed = destroy_bootstrap_host()
        if not complete and condition_true("EtcdRunningInCluster"):
            t = time.time()  # the operator may act on the write before kubectl returns
            r = kubectl("apply", "-f", "-", input=json.dumps({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "bootstrap", "namespace": "kube-system"},
                "data": {"status": "complete"}}))
            if r.returncode == 0:
                say("installer: bootstrap complete", t)
                complete = True
            else:
                say("installer: writing kube-system/bootstrap failed, retrying: %s" % r.stderr.strip())
        time.sleep(1)


if __name__ == "__main__":
    main()
