"""TLS material and client credentials of the simulator, made with the openssl CLI.

DIR/ca.crt, ca.key      CA that signs the serving and the client certificate
DIR/server.crt, .key    serving certificate, SANs: the listen IP, 127.0.0.1, localhost
DIR/client.crt, .key    CN=system:admin, O=system:masters (what kubeconfig uses)
DIR/token               random bearer token (accepted as an alternative to the cert)
DIR/kubeconfig          cluster, user (token + client cert), context "sim"

The CA, client certificate and token survive a restart on the same DIR so that
running clients keep working; the serving certificate is reissued when the listen
address changes.
"""

import base64
import os
import secrets
import subprocess
import tempfile


def _run(args):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(args[:3]), r.stderr.decode(errors="replace")))


def _issue(d, name, subj, exts, days=3650):
    key, csr, crt = (os.path.join(d, name + s) for s in (".key", ".csr", ".crt"))
    _run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
          "-nodes", "-keyout", key, "-out", csr, "-subj", subj])
    with tempfile.NamedTemporaryFile("w", dir=d, suffix=".ext", delete=False) as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n")
        f.write("\n".join(exts) + "\n")
        ext = f.name
    try:
        _run(["openssl", "x509", "-req", "-in", csr, "-CA", os.path.join(d, "ca.crt"),
              "-CAkey", os.path.join(d, "ca.key"), "-CAcreateserial", "-days", str(days),
              "-extfile", ext, "-out", crt])
    finally:
        os.unlink(ext)
        os.unlink(csr)
    os.chmod(key, 0o600)


def ensure_pki(d, ip):
    """Create (or reuse) the CA, client cert and token; (re)issue the serving cert."""
    if not os.path.exists(os.path.join(d, "ca.crt")):
        _run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
              "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", os.path.join(d, "ca.key"),
              "-out", os.path.join(d, "ca.crt"), "-days", "3650",
              "-subj", "/CN=kube-apiserver-sim-ca",
              "-addext", "basicConstraints=critical,CA:TRUE",
              "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        os.chmod(os.path.join(d, "ca.key"), 0o600)
        for f in ("client.crt", "server.crt", "server-ip"):
            if os.path.exists(os.path.join(d, f)):
                os.unlink(os.path.join(d, f))
    if not os.path.exists(os.path.join(d, "client.crt")):
        _issue(d, "client", "/O=system:masters/CN=system:admin", ["extendedKeyUsage=clientAuth"])
    ip_file = os.path.join(d, "server-ip")
    old_ip = open(ip_file).read().strip() if os.path.exists(ip_file) else None
    if old_ip != ip or not os.path.exists(os.path.join(d, "server.crt")):
        sans = ["IP:%s" % ip, "DNS:localhost"] + (["IP:127.0.0.1"] if ip != "127.0.0.1" else [])
        _issue(d, "server", "/CN=kube-apiserver-sim", ["extendedKeyUsage=serverAuth",
                                                      "subjectAltName=" + ",".join(sans)])
        with open(ip_file, "w") as f:
            f.write(ip + "\n")
    tok_file = os.path.join(d, "token")
    if not os.path.exists(tok_file):
        with open(os.open(tok_file, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            f.write(secrets.token_urlsafe(32) + "\n")
    return open(tok_file).read().strip()


def _b64file(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def write_kubeconfig(d, server_url, token, plain_http=False, name="kubeconfig"):
    path = os.path.join(d, name)
    if plain_http:
        cluster = "    server: %s\n" % server_url
        user = "    token: %s\n" % token
    else:
        cluster = ("    server: %s\n    certificate-authority-data: %s\n"
                   % (server_url, _b64file(os.path.join(d, "ca.crt"))))
        user = ("    token: %s\n    client-certificate-data: %s\n    client-key-data: %s\n"
                % (token, _b64file(os.path.join(d, "client.crt")),
                   _b64file(os.path.join(d, "client.key"))))
    text = ("apiVersion: v1\nkind: Config\ncurrent-context: sim\nclusters:\n- name: sim\n"
            "  cluster:\n" + cluster + "users:\n- name: admin\n  user:\n" + user +
            "contexts:\n- name: sim\n  context:\n    cluster: sim\n    user: admin\n"
            "    namespace: default\npreferences: {}\n")
    tmp = path + ".tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return path
