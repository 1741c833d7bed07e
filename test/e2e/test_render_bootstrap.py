#!/usr/bin/env python3
"""e2e: render, then a kubelet-sim for node `bootstrap` runs the bootstrap
pod; etcd becomes healthy over TLS with the rendered client certificate,
checked with our etcd client (etcd-probe) and with etcdctl; the rendered
cluster manifests are created in the API server (kube-apiserver on the bootstrap etcd,
as on the bootstrap host) the way the installer's
cluster-bootstrap does (namespaces first, then the rest, retrying what is not
ready yet); then render's bad-input cases each fail with their message and
leave the output directory untouched.
Usage: test_render_bootstrap.py BUILD_DIR"""
import glob
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e import Env, log, tree_digest, wait_for  # noqa: E402


def create_like_cluster_bootstrap(env, manifests):
    """Namespaces first, then everything else; retry what fails until it is created."""
    files = sorted(glob.glob(os.path.join(manifests, "*.yaml")))
    nss = [f for f in files if "kind: Namespace" in open(f).read()]
    rest = [f for f in files if f not in nss]
    pending = nss + rest
    deadline = time.monotonic() + 60
    while pending:
        left = []
        for f in pending:
            r = env.kubectl("create", "-f", f, check=False)
            if r.returncode != 0 and "AlreadyExists" not in r.stderr:
                left.append(f)
        if left and time.monotonic() > deadline:
            raise AssertionError("cluster manifests not created: %s" % left)
        pending = left
        if pending:
            time.sleep(1)
    return files


def main():
    build = sys.argv[1]
    with Env(build) as env:
        bootstrap_ip = env.ip(5)
        assets = os.path.join(env.dir, "assets")

        log("render (bootstrap IP %s)" % bootstrap_ip)
        r = env.render(assets, bootstrap_ip)
        assert r.returncode == 0, "render failed: %s" % r.stderr

        tls = os.path.join(assets, "tls")
        ca, cert, key = (os.path.join(tls, f) for f in ("etcd-ca-bundle.crt", "etcd-client.crt", "etcd-client.key"))
        endpoint = "https://%s:2379" % bootstrap_ip
        # As on the bootstrap host: kube-apiserver on the bootstrap etcd before that etcd runs.
        env.start_kube([endpoint], (ca, cert, key))

        # What the installer does with the output: etc-kubernetes/* to the host's /etc/kubernetes.
        root = os.path.join(env.dir, "nodes", "bootstrap")
        shutil.copytree(os.path.join(assets, "etc-kubernetes"), os.path.join(root, "etc", "kubernetes"))
        env.start_kubelet("bootstrap", bootstrap_ip, master=False)
        log("waiting for the bootstrap etcd (our client)")
        probe = subprocess.run([env.probe, ca, cert, key, endpoint, "90"], capture_output=True, text=True)
        assert probe.returncode == 0, "etcd-probe: %s" % probe.stderr
        info = json.loads(probe.stdout)
        assert [m["name"] for m in info["members"]] == ["etcd-bootstrap"], info
        log("etcd-probe: %s" % probe.stdout.strip())

        # An independent client agrees.
        ctl = subprocess.run(["etcdctl", "--endpoints", endpoint, "--cacert", ca, "--cert", cert, "--key", key,
                              "endpoint", "health"], capture_output=True, text=True,
                             env=dict(os.environ, ETCDCTL_API="3"))
        assert ctl.returncode == 0 and "is healthy" in (ctl.stdout + ctl.stderr), ctl.stderr
        ctl = subprocess.run(["etcdctl", "--endpoints", endpoint, "--cacert", ca, "--cert", cert, "--key", key,
                              "member", "list", "-w", "json"], capture_output=True, text=True,
                             env=dict(os.environ, ETCDCTL_API="3"))
        assert ctl.returncode == 0, ctl.stderr
        assert json.loads(ctl.stdout)["members"][0]["name"] == "etcd-bootstrap"

        env.wait_kube_ready(180)
        log("creating the rendered cluster manifests like cluster-bootstrap")
        files = create_like_cluster_bootstrap(env, os.path.join(assets, "manifests"))
        cm = env.get_json("configmap", "-n", "openshift-etcd", "etcd-endpoints")
        assert cm["metadata"]["annotations"]["alpha.installer.openshift.io/etcd-bootstrap"] == bootstrap_ip
        for name in ("etcd-signer", "etcd-client", "etcd-peer-bootstrap", "etcd-all-certs"):
            assert env.get_json("secret", "-n", "openshift-etcd", name), "secret %s missing" % name
        for name in ("etcd-ca-bundle", "etcd-metrics-ca-bundle", "etcd-all-bundles"):
            assert env.get_json("configmap", "-n", "openshift-etcd", name), "configmap %s missing" % name
        assert env.get_json("service", "-n", "openshift-etcd", "etcd")
        # The manifests that start the operator: applied and checked, not run.
        dep = env.get_json("deployment", "-n", "openshift-etcd-operator", "etcd-operator")
        c = dep["spec"]["template"]["spec"]["containers"][0]
        assert c["command"][:2] == ["cluster-etcd-operator", "operator"], c["command"]
        # The payload's literal pull specs replaced as the release build replaces them (image-references).
        env_of = {e["name"]: e.get("value") for e in c.get("env", [])}
        assert env_of.get("IMAGE") == "quay.io/openshift/etcd@sha256:0123456789abcdef", env_of
        assert env_of.get("OPERATOR_IMAGE") == c["image"] != "quay.io/openshift/origin-cluster-etcd-operator", c["image"]
        assert dep["spec"]["template"]["spec"]["serviceAccountName"] == "etcd-operator"
        assert env.get_json("clusterrole", "system:openshift:operator:etcd-operator")
        assert env.get_json("rolebinding", "-n", "openshift-etcd", "etcd-operator")
        log("%d manifests created" % len(files))

        # Once its namespace exists, the kubelet's mirror pod reports the bootstrap pod running.
        wait_for("the bootstrap mirror pod to run", lambda: (env.get_json(
            "pod", "-n", "openshift-etcd", "etcd-bootstrap-member-bootstrap") or {}).get(
            "status", {}).get("phase") == "Running", 30)

        # Bad input: a clear message naming the field, exit 2, and the output untouched.
        before = tree_digest(assets)
        bad_dir = os.path.join(env.dir, "bad-inputs")
        os.makedirs(bad_dir)

        def bad_file(name, text):
            p = os.path.join(bad_dir, name)
            open(p, "w").write(text)
            return p

        cases = [
            ({"network": bad_file("n1.yaml", "kind: Network\nspec: {}\n")}, [], "spec.serviceNetwork"),
            ({"infra": bad_file("i1.yaml", "kind: Infrastructure\nstatus: {}\n")}, [],
             "status.platformStatus.type"),
            ({"cluster": bad_file("c1.yaml", "kind: ConfigMap\ndata: {}\n")}, [], "data.install-config"),
            ({"cluster": bad_file("c2.yaml", "kind: ConfigMap\ndata:\n  install-config: |\n    networking:\n"
                                             "      machineNetwork:\n      - cidr: 10.0.0.0/99\n")}, [],
             "networking.machineNetwork[0].cidr"),
            ({}, ["--hostname", "Bad_Name"], "--hostname"),
            ({}, ["--key-type", "dsa"], "--key-type"),
        ]
        for inputs, extra, needle in cases:
            args = list(extra)
            hostname = "bootstrap"
            if "--hostname" in args:
                hostname = args[args.index("--hostname") + 1]
                del args[args.index("--hostname"):args.index("--hostname") + 2]
            r = env.render(assets, bootstrap_ip, hostname=hostname, extra=args, inputs=inputs)
            assert r.returncode == 2, "bad input %s: exit %d, want 2 (%s)" % (needle, r.returncode, r.stderr)
            assert needle in r.stderr, "bad input: message %r does not name %s" % (r.stderr.strip(), needle)
            assert tree_digest(assets) == before, "bad input %s changed the output directory" % needle
            log("bad input rejected: %s" % r.stderr.strip().split("] ", 1)[-1])
        # A bootstrap IP that is a VIP, or outside every machine network.
        for ip, needle in (("192.168.111.5", "is a VIP"), ("10.99.0.1", "machineNetwork")):
            r = env.render(assets, ip)
            assert r.returncode == 2 and needle in r.stderr, r.stderr
            assert tree_digest(assets) == before
        log("ok")


if __name__ == "__main__":
    main()
