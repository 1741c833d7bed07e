#!/usr/bin/env python3
"""What OpenShift's service-ca and monitoring stack do for the operator's /metrics, played by the
harness (neither runs here):

- service-ca: for each Service of openshift-etcd-operator annotated with
  service.beta.openshift.io/serving-cert-secret-name, a serving certificate for
  <service>.<namespace>.svc (and .cluster.local), signed by the harness's service CA, in that
  Secret (type kubernetes.io/tls), and written where the kubelet would mount it for the
  operator's process: DIR/<secret>/tls.crt and tls.key;
- the monitoring stack: ServiceAccount openshift-monitoring/prometheus-k8s, granted `get` on
  /metrics by ClusterRole prometheus-k8s (as cluster-monitoring-operator grants it), whose token
  other scrapers' checks carry; and Prometheus's client certificate, as cluster-monitoring-operator
  gets it: a CertificateSigningRequest for user system:serviceaccount:openshift-monitoring:prometheus-k8s
  to signer kubernetes.io/kube-apiserver-client, approved (as OpenShift's approver does) and signed
  by the real kube-controller-manager with kube-apiserver's client CA, kept in Secret
  openshift-monitoring/metrics-client-certs. Prometheus scrapes the operator with it (its scrape
  class tls-client-certificate-auth).

Used by the e2e scenarios and, as a command, by hack/local-up.sh:
    service_ca.py --kubeconfig K --dir D [--ip IP]... [--prometheus]   prints the serving
    certificate's directory; with --prometheus also grants Prometheus, writing its token to
    D/prometheus-token and its client certificate to D/metrics-client-certs/tls.{crt,key}."""
import argparse
import base64
import json
import os
import ssl
import subprocess
import sys
import time
import urllib.request

NS = "openshift-etcd-operator"
ANNOTATION = "service.beta.openshift.io/serving-cert-secret-name"
PROM = ("openshift-monitoring", "prometheus-k8s")
PROM_USER = "system:serviceaccount:%s:%s" % PROM
CLIENT_CERTS = "metrics-client-certs"


def _openssl(*args):
    r = subprocess.run(["openssl"] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("openssl %s: %s" % (" ".join(args), r.stderr.strip()))


def _ca(d):
    """The service CA (made once per directory): ca.crt, ca.key."""
    crt, key = os.path.join(d, "ca.crt"), os.path.join(d, "ca.key")
    if not os.path.exists(crt):
        os.makedirs(d, exist_ok=True)
        _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", key, "-out", crt, "-days", "30", "-subj", "/CN=openshift-service-serving-signer",
                 "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return crt, key


def issue(kubectl, d, ips=()):
    """service-ca's part for every annotated Service of the operator's namespace. `kubectl` runs
    kubectl with its arguments and returns the CompletedProcess. Returns the service CA's path
    and {secret: directory of tls.crt and tls.key}."""
    ca_crt, ca_key = _ca(d)
    out = {}
    svcs = json.loads(kubectl("-n", NS, "get", "services", "-o", "json").stdout)["items"]
    for svc in svcs:
        secret = (svc["metadata"].get("annotations") or {}).get(ANNOTATION)
        if not secret:
            continue
        name = svc["metadata"]["name"]
        host = "%s.%s.svc" % (name, NS)
        sd = os.path.join(d, secret)
        os.makedirs(sd, exist_ok=True)
        crt, key, csr, ext = (os.path.join(sd, f) for f in ("tls.crt", "tls.key", "tls.csr", "ext.cnf"))
        with open(ext, "w") as f:
            f.write("subjectAltName=%s\nextendedKeyUsage=serverAuth\nkeyUsage=critical,digitalSignature\n"
                    "basicConstraints=critical,CA:FALSE\n"
                    % ",".join(["DNS:" + host, "DNS:" + host + ".cluster.local"] + ["IP:" + ip for ip in ips]))
        _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                 "-keyout", key + ".tmp", "-out", csr, "-subj", "/CN=" + host)
        _openssl("x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial",
                 "-days", "30", "-extfile", ext, "-out", crt + ".tmp")
        os.rename(key + ".tmp", key)
        os.rename(crt + ".tmp", crt)
        kubectl("-n", NS, "delete", "secret", secret, "--ignore-not-found")
        kubectl("-n", NS, "create", "secret", "tls", secret, "--cert", crt, "--key", key)
        kubectl("-n", NS, "annotate", "secret", secret, "service.beta.openshift.io/originating-service-name=" + name)
        out[secret] = sd
    return ca_crt, out


def grant_prometheus(kubectl):
    """The monitoring stack's ServiceAccount and its grant of /metrics; returns a token of it."""
    kubectl("create", "namespace", PROM[0], check=False)
    kubectl("-n", PROM[0], "create", "serviceaccount", PROM[1], check=False)
    kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": PROM[1]},
             "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
             "metadata": {"name": PROM[1]},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": PROM[1]},
             "subjects": [{"kind": "ServiceAccount", "name": PROM[1], "namespace": PROM[0]}]}]}))
    return kubectl("-n", PROM[0], "create", "token", PROM[1], "--duration=24h").stdout.strip()


def metrics_client_cert(kubectl, d, timeout=60):
    """Prometheus's client certificate as cluster-monitoring-operator gets it (see the module's
    text). Returns the directory of tls.crt and tls.key."""
    sd = os.path.join(d, CLIENT_CERTS)
    os.makedirs(sd, exist_ok=True)
    crt, key, csr = (os.path.join(sd, f) for f in ("tls.crt", "tls.key", "tls.csr"))
    _openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
             "-keyout", key, "-out", csr, "-subj", "/CN=" + PROM_USER)
    with open(csr, "rb") as f:
        request = base64.b64encode(f.read()).decode()
    name = "system:openshift:openshift-monitoring-%d" % int(time.time() * 1000)
    kubectl("create", "-f", "-", input=json.dumps({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": {"name": name},
        "spec": {"request": request, "signerName": "kubernetes.io/kube-apiserver-client",
                 "usages": ["digital signature", "client auth"]}}))
    kubectl("certificate", "approve", name)
    deadline = time.monotonic() + timeout
    while True:
        got = kubectl("get", "csr", name, "-o", "jsonpath={.status.certificate}").stdout.strip()
        if got:
            break
        if time.monotonic() > deadline:
            raise RuntimeError("kube-controller-manager signed no certificate for csr %s in %d s" % (name, timeout))
        time.sleep(0.2)
    with open(crt + ".tmp", "wb") as f:
        f.write(base64.b64decode(got))
    os.rename(crt + ".tmp", crt)
    kubectl("-n", PROM[0], "delete", "secret", CLIENT_CERTS, "--ignore-not-found")
    kubectl("-n", PROM[0], "create", "secret", "tls", CLIENT_CERTS, "--cert", crt, "--key", key)
    return sd


def scrape(url, ca, token=None, client_cert=None, timeout=10):
    """GET `url` over HTTPS as a scraper does: verifying the serving certificate against the
    service CA, with the bearer token and/or the client certificate (a directory of tls.crt and
    tls.key) given. Returns the body; raises OSError (HTTPError) otherwise."""
    ctx = ssl.create_default_context(cafile=ca)
    ctx.check_hostname = False  # scraped by address; the certificate names the Service
    if client_cert:
        ctx.load_cert_chain(os.path.join(client_cert, "tls.crt"), os.path.join(client_cert, "tls.key"))
    req = urllib.request.Request(url, headers={"Authorization": "Bearer " + token} if token else {})
    with urllib.request.urlopen(req, timeout=timeout, context=ctx) as resp:
        return resp.read().decode()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--dir", required=True)
    ap.add_argument("--ip", action="append", default=[])
    ap.add_argument("--prometheus", action="store_true",
                    help="also grant Prometheus: its token in DIR/prometheus-token, its client certificate in "
                         "DIR/%s" % CLIENT_CERTS)
    a = ap.parse_args()

    def kubectl(*args, check=True, input=None):
        r = subprocess.run(["kubectl", "--kubeconfig", a.kubeconfig] + list(args), capture_output=True, text=True,
                           input=input)
        if check and r.returncode != 0:
            raise RuntimeError("kubectl %s: %s" % (" ".join(args), r.stderr.strip()))
        return r
    _, issued = issue(kubectl, a.dir, a.ip)
    if "etcd-operator-serving-cert" not in issued:
        sys.exit("service_ca.py: no Service in %s names secret etcd-operator-serving-cert" % NS)
    if a.prometheus:
        with open(os.path.join(a.dir, "prometheus-token"), "w") as f:
            f.write(grant_prometheus(kubectl) + "\n")
        metrics_client_cert(kubectl, a.dir)
    print(issued["etcd-operator-serving-cert"])


if __name__ == "__main__":
    main()
