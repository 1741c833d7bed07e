"""Certificate rotation on a running cluster (issue 37, point 3), with the invariant watcher
and a writer on etcd throughout, one revision rolled out at a time.

A leaf near its end: one master's serving certificate is replaced by one of the same key,
subject and names but 100 days left (the operator's refresh window is 292 days), as if it had
aged. The operator issues a new one, it reaches every master in a revision, and that master's
etcd serves it.

The signer near its end (OLD_SIGNER_S left, in the Secret and in the bundle): the operator
makes a new signer, publishes a bundle that trusts old and new and rolls it out, then issues
every leaf from the new signer, all before the old one expires. kube-apiserver follows the
bundle and client certificate the operator publishes in openshift-config, as OpenShift's
kube-apiserver operator does (test/kube/control-plane plays it: a revision, a restart); the
operator's mounted etcd-client and etcd-ca-bundle follow what it publishes in its own
namespace, as the kubelet refreshes them (scenario.OperatorMounts), and the operator takes the
new files without a restart; the test's own etcd clients read the same files. Then the old
signer expires: nothing may still need it. It leaves the bundle, a revision rolls that out
(which the operator can only do while it reaches etcd, now with the new client certificate),
and the writer goes on writing.

The certificates are made with the openssl command line from the Secrets' own material.
Python 3 stdlib only."""
import base64
import glob
import hashlib
import json
import os
import signal
import socket
import ssl
import subprocess
import tempfile
import time

from e2e import log, wait_for
from scenario import OperatorMounts, start_actors, stop_actors

NS = "openshift-etcd"
# The old signer's life left when the test ages it: the rotation (a revision with both signers,
# then one with every leaf from the new one) took 74 s alone on 2 cores (2026-11-30); the test fails,
# saying so, if the old one expires first.
OLD_SIGNER_S = int(os.environ.get("E2E_OLD_SIGNER_S", "150"))


def secret_pem(env, name, key):
    s = env.get_json("secret", "-n", NS, name) or {}
    v = (s.get("data") or {}).get(key)
    return base64.b64decode(v).decode() if v else None


def openssl(*args, input=None):
    r = subprocess.run(["openssl"] + list(args), input=input, capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError("openssl %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


def not_after_days(pem):
    """Days from now until the certificate's notAfter."""
    out = openssl("x509", "-noout", "-enddate", input=pem).strip()  # notAfter=Nov 30 10:00:00 2029 GMT
    t = time.mktime(time.strptime(out.split("=", 1)[1].replace(" GMT", ""), "%b %d %H:%M:%S %Y"))
    return (t - time.mktime(time.gmtime())) / 86400.0


def fingerprint(pem):
    der = ssl.PEM_cert_to_DER_cert(pem)
    return hashlib.sha256(der).hexdigest()


def reissued(cert_pem, key_pem, days, ca_pem=None, ca_key_pem=None):
    """cert_pem again, same key, subject and extensions, `days` valid from now: signed by the CA
    given, or by its own key (a signer's copy of itself)."""
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for name, pem in (("cert", cert_pem), ("key", key_pem), ("ca", ca_pem), ("cakey", ca_key_pem)):
            if pem:
                paths[name] = os.path.join(d, name + ".pem")
                with open(paths[name], "w") as f:
                    f.write(pem)
        req = os.path.join(d, "req.pem")
        openssl("x509", "-x509toreq", "-in", paths["cert"], "-signkey", paths["key"], "-copy_extensions",
                "copyall", "-out", req)
        args = ["x509", "-req", "-in", req, "-days", str(days), "-copy_extensions", "copyall",
                "-set_serial", str(int(time.time() * 1000))]
        if ca_pem:
            args += ["-CA", paths["ca"], "-CAkey", paths["cakey"]]
        else:
            args += ["-signkey", paths["key"]]
        return openssl(*args)


def asn1_time(pem, which):
    """notBefore or notAfter of the certificate as openssl ca takes it: YYYYMMDDHHMMSSZ."""
    out = openssl("x509", "-noout", "-" + which, input=pem).strip()  # notBefore=Nov 30 10:00:00 2026 GMT
    t = time.strptime(out.split("=", 1)[1].replace(" GMT", ""), "%b %d %H:%M:%S %Y")
    return time.strftime("%Y%m%d%H%M%SZ", t)


def signer_until(cert_pem, key_pem, not_after):
    """A self-signed certificate's copy: same key, subject, extensions and notBefore, valid until
    `not_after` (epoch s), to the second (openssl x509 counts only days)."""
    with tempfile.TemporaryDirectory() as d:
        p = lambda n: os.path.join(d, n)  # noqa: E731
        for name, text in (("cert.pem", cert_pem), ("key.pem", key_pem), ("index.txt", ""),
                           ("serial", "%016x\n" % int(time.time() * 1000))):
            with open(p(name), "w") as f:
                f.write(text)
        with open(p("ca.cnf"), "w") as f:
            f.write("[ca]\ndefault_ca = CA\n[CA]\ndatabase = %s\nnew_certs_dir = %s\nserial = %s\n"
                    "default_md = sha256\npolicy = any\ncopy_extensions = copyall\nunique_subject = no\n"
                    "[any]\ncommonName = optional\n" % (p("index.txt"), d, p("serial")))
        openssl("x509", "-x509toreq", "-in", p("cert.pem"), "-signkey", p("key.pem"), "-copy_extensions",
                "copyall", "-out", p("req.pem"))
        openssl("ca", "-batch", "-config", p("ca.cnf"), "-selfsign", "-keyfile", p("key.pem"), "-in", p("req.pem"),
                "-preserveDN", "-notext", "-startdate", asn1_time(cert_pem, "startdate"),
                "-enddate", time.strftime("%Y%m%d%H%M%SZ", time.gmtime(not_after)), "-out", p("out.pem"))
        with open(p("out.pem")) as f:
            return f.read()


def replace_secret_cert(env, name, pem):
    patch = '{"data":{"tls.crt":"%s"}}' % base64.b64encode(pem.encode()).decode()
    env.kubectl("patch", "secret", "-n", NS, name, "--type=merge", "-p", patch)


def served_cert(ip, port=2379):
    """The certificate the endpoint serves (PEM), not verified: only its identity is compared."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with socket.create_connection((ip, port), timeout=5) as s:
        with ctx.wrap_socket(s) as t:
            return ssl.DER_cert_to_PEM_cert(t.getpeercert(binary_form=True))


def issuer_verifies(leaf_pem, ca_pem):
    with tempfile.TemporaryDirectory() as d:
        ca, leaf = os.path.join(d, "ca.pem"), os.path.join(d, "leaf.pem")
        for path, pem in ((ca, ca_pem), (leaf, leaf_pem)):
            with open(path, "w") as f:
                f.write(pem)
        r = subprocess.run(["openssl", "verify", "-partial_chain", "-CAfile", ca, leaf], capture_output=True,
                           text=True)
        return r.returncode == 0


def wait_rolled_past(c, base, what, timeout=300):
    """A newer revision than `base` on every master, settled; returns it."""
    def rolled():
        at = c.at_latest()
        return at[0] if at and at[0] > base else None
    latest = wait_for("every master at a revision after %d (%s)" % (base, what), rolled, timeout)
    log("%s: revision %d -> %d on every master" % (what, base, latest))
    return latest


def kube_reaches_etcd(env):
    """kube-apiserver answers a read that goes to etcd (a quorum list of namespaces)."""
    return env.get_json("namespaces") is not None


def check_leaf_rotation(c, node):
    env = c.env
    name = "etcd-serving-%s" % node
    cert, key = secret_pem(env, name, "tls.crt"), secret_pem(env, name, "tls.key")
    ca, ca_key = secret_pem(env, "etcd-signer", "tls.crt"), secret_pem(env, "etcd-signer", "tls.key")
    assert cert and key and ca and ca_key, "no %s or etcd-signer material to age" % name
    base = env.get_json("etcd", "cluster")["status"]["latestAvailableRevision"]
    aged = reissued(cert, key, 100, ca, ca_key)
    assert 99 < not_after_days(aged) < 101, not_after_days(aged)
    replace_secret_cert(env, name, aged)
    log("%s replaced by a copy with %.0f days left (the refresh window is 292)" % (name, not_after_days(aged)))
    new = wait_for("%s issued again with years left" % name,
                   lambda: (lambda p: p if p and fingerprint(p) != fingerprint(aged) and not_after_days(p) > 700
                            else None)(secret_pem(env, name, "tls.crt")), 120)
    log("%s issued again: %.0f days left" % (name, not_after_days(new)))
    wait_rolled_past(c, base, "the new %s" % name)
    ip = c.master_ips[node]
    wait_for("etcd on %s serving the new certificate" % node,
             lambda: fingerprint(served_cert(ip)) == fingerprint(new), 60)
    on_disk = os.path.join(c.node_root(node), "etc", "kubernetes", "static-pod-resources", "etcd-certs",
                           "secrets", "etcd-all-certs", name + ".crt")
    with open(on_disk) as f:
        assert fingerprint(f.read()) == fingerprint(new), "%s on %s's disk is not the new one" % (name, node)
    log("%s: etcd serves the new certificate, which is on its disk" % node)


def kas_etcd_tls(env):
    """The etcd CA and client certificate digest of kube-apiserver's latest revision
    (test/kube/control-plane writes it into openshift-kube-apiserver/config-N)."""
    kas = env.get_json("kubeapiserver", "cluster") or {}
    n = (kas.get("status") or {}).get("latestAvailableRevision")
    cm = env.get_json("configmap", "-n", "openshift-kube-apiserver", "config-%s" % n) if n else None
    return n, ((cm or {}).get("data") or {}).get("etcd-tls-digest")


def bundle_of(env):
    cm = env.get_json("configmap", "-n", NS, "etcd-ca-bundle") or {}
    return (cm.get("data") or {}).get("ca-bundle.crt", "")


def operator_took_client_cert(c):
    """The operator's logs say it took a changed client certificate from its files."""
    for path in glob.glob(os.path.join(c.env.dir, "operator*.log")):
        with open(path, errors="replace") as f:
            if "etcd client: the certificate in %s changed" % os.path.join(c.tls, "etcd-client.crt") in f.read():
                return path
    return None


def check_signer_rotation(c, sup, writer):
    env = c.env
    kas_before = kas_etcd_tls(env)
    ca, ca_key = secret_pem(env, "etcd-signer", "tls.crt"), secret_pem(env, "etcd-signer", "tls.key")
    base = env.get_json("etcd", "cluster")["status"]["latestAvailableRevision"]
    expires = int(time.time()) + OLD_SIGNER_S
    aged = signer_until(ca, ca_key, expires)
    old_pub = pubkey(ca)
    # The signer has aged: its certificate in the Secret and in the bundle alike. Both objects
    # change while the operator is stopped (SIGSTOP), so it never sees one without the other
    # (it would put the copy the bundle lost back, as a signer it still uses).
    old_bundle = bundle_of(env)
    aged_bundle = "".join(aged if pubkey(p) == old_pub else p for p in bundle_certs(old_bundle))
    assert aged in aged_bundle, "etcd-ca-bundle does not hold the signer: %s" % old_bundle
    op = sup.proc
    op.send_signal(signal.SIGSTOP)
    try:
        replace_secret_cert(env, "etcd-signer", aged)
        env.kubectl("patch", "configmap", "-n", NS, "etcd-ca-bundle", "--type=merge", "-p",
                    '{"data":{"ca-bundle.crt":%s}}' % json.dumps(aged_bundle))
    finally:
        op.send_signal(signal.SIGCONT)
    log("etcd-signer, in its Secret and in etcd-ca-bundle, replaced by a copy of itself that expires in %d s"
        % (expires - time.time()))
    old_key_fp = hashlib.sha256(ca_key.encode()).hexdigest()

    def new_signer():
        pem, key = secret_pem(env, "etcd-signer", "tls.crt"), secret_pem(env, "etcd-signer", "tls.key")
        return pem if key and hashlib.sha256(key.encode()).hexdigest() != old_key_fp else None
    signer = wait_for("a new etcd-signer", new_signer, 120)
    log("new etcd-signer: %.0f days left" % not_after_days(signer))

    def trusts_both(bundle):
        keys = {pubkey(p) for p in bundle_certs(bundle)}
        return pubkey(signer) in keys and old_pub in keys
    wait_for("etcd-ca-bundle trusting the old and the new signer", lambda: trusts_both(bundle_of(env)), 120)
    first = wait_rolled_past(c, base, "the bundle with both signers")

    # Then every leaf from the new signer, in one more revision.
    def leaves_from_new():
        for m in c.masters:
            for kind in ("peer", "serving"):  # serving-metrics is the metrics signer's
                pem = secret_pem(env, "etcd-%s-%s" % (kind, m), "tls.crt")
                if not pem or not issuer_verifies(pem, signer):
                    return False
        return True
    wait_for("every master's peer and serving certificate issued by the new signer", leaves_from_new, 180)
    second = wait_rolled_past(c, first, "the leaves of the new signer")
    for m in c.masters:
        served = served_cert(c.master_ips[m])
        assert issuer_verifies(served, signer), "etcd on %s does not serve a certificate of the new signer" % m
    assert kube_reaches_etcd(env), "kube-apiserver no longer reaches etcd"

    # The operator's own client certificate: issued from the new signer, refreshed in its mount,
    # taken from the file without a restart.
    def client_file_new():
        with open(os.path.join(c.tls, "etcd-client.crt")) as f:
            return issuer_verifies(f.read(), signer)
    wait_for("the operator's mounted etcd-client issued by the new signer", client_file_new, 60)
    took = wait_for("the operator to take the new client certificate from its file",
                    lambda: operator_took_client_cert(c), 30)
    log("%s: took the new client certificate from its file" % os.path.basename(took))
    left = expires - time.time()
    assert left > 0, ("the old signer expired %.0f s before the rotation was over (E2E_OLD_SIGNER_S=%d is "
                      "too short for this machine)" % (-left, OLD_SIGNER_S))
    kas_mid = kas_etcd_tls(env)
    log("the rotation is over %.0f s before the old signer expires; waiting for it" % left)

    # The old signer expires: it leaves the bundle, and that bundle is rolled out.
    time.sleep(left + 1)
    acked = len(writer.acked)
    wait_for("etcd-ca-bundle without the expired signer",
             lambda: (lambda b: b and old_pub not in {pubkey(p) for p in bundle_certs(b)})(bundle_of(env)), 90)
    log("the expired signer left etcd-ca-bundle %.0f s after it expired" % (time.time() - expires))
    wait_rolled_past(c, second, "the bundle without the expired signer")
    for m in c.masters:
        assert issuer_verifies(served_cert(c.master_ips[m]), signer), "etcd on %s: not the new signer's" % m
    wait_for("kube-apiserver on the bundle without the expired signer",
             lambda: (lambda k: k if k[1] and k[1] != kas_mid[1] and kube_reaches_etcd(env) else None)(
                 kas_etcd_tls(env)), 180)
    wait_for("the writer writing with the new client certificate", lambda: len(writer.acked) > acked + 5, 60)
    kas_after = kas_etcd_tls(env)
    assert kas_after[1] and kas_after[1] != kas_before[1], \
        "kube-apiserver did not take the new bundle: revision and etcd TLS %s, then %s" % (kas_before, kas_after)
    log("every member serves a certificate of the new signer; the expired one is trusted by nothing; "
        "kube-apiserver reaches etcd (its revision %s -> %s -> %s)" % (kas_before[0], kas_mid[0], kas_after[0]))


def bundle_certs(bundle):
    out, cur = [], []
    for line in bundle.splitlines():
        cur.append(line)
        if line.startswith("-----END CERTIFICATE-----"):
            out.append("\n".join(cur) + "\n")
            cur = []
    return out


def pubkey(pem):
    """The certificate's public key, for comparing signers across their copies."""
    return openssl("x509", "-noout", "-pubkey", input=pem)


def check_rotation(c, sup):
    """A leaf near its end, then the signer until it expires, under the writer and the invariant
    watcher; the operator (run by `sup`, its Deployment) with its mounts followed."""
    watcher, writer = c.actors()
    mounts = OperatorMounts(c)
    mounts.sync()  # what the operator runs with now: render's, or what it published since
    start_actors(watcher, writer, mounts)
    t0 = time.monotonic()
    try:
        check_leaf_rotation(c, c.masters[0])
        check_signer_rotation(c, sup, writer)
    finally:
        stop_actors(watcher, writer, mounts)
    assert not watcher.violations, "invariants broken: %s" % watcher.violations[:5]
    c.check_writer(writer)
    c.wait_settled(180)
    log("certificate rotation done in %.0f s" % (time.monotonic() - t0))
