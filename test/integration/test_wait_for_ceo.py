#!/usr/bin/env python3
"""`cluster-etcd-operator wait-for-ceo`, as the installer's bootkube.sh runs
it, against kube-apiserver (with-kube.sh exports KUBECONFIG), with the
real kubectl writing etcds/cluster:
- without etcds/cluster, and while EtcdBootstrapMemberRemoved is False, it
  waits, says what for, and --timeout ends it with exit 1;
- it returns 0 once EtcdBootstrapMemberRemoved turns True while it waits;
- it returns 0 at once for an Unmanaged etcds/cluster (upstream's rule);
- no kubeconfig: exit 2 naming the flag.
Usage: test_wait_for_ceo.py BIN"""
import json
import os
import subprocess
import sys
import time

BIN = sys.argv[1]
ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
CRD = os.path.join(ROOT, "manifests", "crds", "0000_12_etcd_01_etcds.crd.yaml")


def kubectl(*args, input=None):
    r = subprocess.run(["kubectl"] + list(args), capture_output=True, text=True, input=input)
    assert r.returncode == 0, "kubectl %s: %s" % (" ".join(args), r.stderr)
    return r.stdout


def wait_for_ceo(*extra):
    return subprocess.Popen([BIN, "wait-for-ceo"] + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def finish(p, timeout=30):
    out, err = p.communicate(timeout=timeout)
    print("wait-for-ceo -> %d\n%s" % (p.returncode, err.strip()), flush=True)
    return p.returncode, err


def condition(status):
    body = {"status": {"conditions": [{"type": "EtcdBootstrapMemberRemoved", "status": status,
                                       "reason": "BootstrapMemberRemoved" if status == "True" else "Waiting",
                                       "message": "test says %s" % status,
                                       "lastTransitionTime": "2026-11-25T00:00:00Z"}]}}
    kubectl("patch", "etcd", "cluster", "--subresource=status", "--type=merge", "-p", json.dumps(body))


def main():
    kubectl("apply", "-f", CRD)
    for _ in range(50):  # the CRD's API appears
        if subprocess.run(["kubectl", "get", "etcds"], capture_output=True).returncode == 0:
            break
        time.sleep(0.2)

    rc, err = finish(wait_for_ceo("--timeout", "3s"))
    assert rc == 1 and "still waiting for etcds/cluster" in err, err

    kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "operator.openshift.io/v1", "kind": "Etcd",
                                                  "metadata": {"name": "cluster"},
                                                  "spec": {"managementState": "Managed"}}))
    condition("False")
    rc, err = finish(wait_for_ceo("--timeout", "3s"))
    assert rc == 1 and "EtcdBootstrapMemberRemoved=True (it is False: test says False)" in err, err

    p = wait_for_ceo("--kubeconfig", os.environ["KUBECONFIG"])  # no timeout: it waits as long as it takes
    time.sleep(3)
    assert p.poll() is None, "wait-for-ceo returned while the bootstrap member was still there"
    condition("True")
    rc, err = finish(p)
    assert rc == 0 and "the bootstrap is done: EtcdBootstrapMemberRemoved=True" in err, err

    condition("False")
    kubectl("patch", "etcd", "cluster", "--type=merge", "-p", '{"spec":{"managementState":"Unmanaged"}}')
    rc, err = finish(wait_for_ceo("--timeout", "10s"))
    assert rc == 0 and "Unmanaged" in err, err

    env = dict(os.environ)
    env.pop("KUBECONFIG")
    r = subprocess.run([BIN, "wait-for-ceo"], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "--kubeconfig" in r.stderr, r.stderr
    print("ok")


if __name__ == "__main__":
    main()
