"""A small Kubernetes API client for the kubelet: kubeconfig, JSON requests and watches.

Token or client-certificate authentication from the kubeconfig's current context, HTTPS
with the kubeconfig's CA (or plain HTTP), one keep-alive connection per thread, and a
watch iterator that yields decoded events line by line.
"""

import base64
import http.client
import json
import os
import ssl
import threading
import urllib.parse

from kubeletsim import yaml_lite


class ApiError(Exception):
    def __init__(self, code, body):
        self.code = code
        self.body = body
        msg = body.get("message") if isinstance(body, dict) else body
        super().__init__("HTTP %d: %s" % (code, msg))

    @property
    def reason(self):
        return self.body.get("reason") if isinstance(self.body, dict) else None


class TransportError(OSError):
    """The connection failed or the server's reply ended early (an http.client.HTTPException
    such as IncompleteRead when kube-apiserver restarts mid-stream). An OSError, so every
    caller that retries on a transport failure retries on this one too."""


class KubeConfig:
    """The parts of a kubeconfig the kubelet and its pods need."""

    def __init__(self, path, pki_dir):
        with open(path) as f:
            text = f.read()
        cfg = yaml_lite.load(text) or {}
        ctx_name = cfg.get("current-context")
        ctxs = {c["name"]: c.get("context") or {} for c in cfg.get("contexts") or []}
        ctx = ctxs.get(ctx_name) or (next(iter(ctxs.values())) if ctxs else {})
        clusters = {c["name"]: c.get("cluster") or {} for c in cfg.get("clusters") or []}
        users = {u["name"]: u.get("user") or {} for u in cfg.get("users") or []}
        cluster = clusters.get(ctx.get("cluster")) or (next(iter(clusters.values()))
                                                        if clusters else {})
        user = users.get(ctx.get("user")) or (next(iter(users.values())) if users else {})
        base = os.path.dirname(os.path.abspath(path))

        def rel(p):
            return p if os.path.isabs(p) else os.path.join(base, p)

        self.server = cluster.get("server")
        if not self.server:
            raise ValueError("kubeconfig %s: no server" % path)
        u = urllib.parse.urlsplit(self.server)
        self.scheme = u.scheme
        self.host = u.hostname
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.insecure = bool(cluster.get("insecure-skip-tls-verify"))
        os.makedirs(pki_dir, exist_ok=True)
        self.ca_pem = None
        if cluster.get("certificate-authority-data"):
            self.ca_pem = base64.b64decode(cluster["certificate-authority-data"])
        elif cluster.get("certificate-authority"):
            with open(rel(cluster["certificate-authority"]), "rb") as f:
                self.ca_pem = f.read()
        self.ca_file = None
        if self.ca_pem:
            self.ca_file = os.path.join(pki_dir, "ca.crt")
            _write(self.ca_file, self.ca_pem, 0o644)
        self.token = user.get("token")
        if not self.token and user.get("tokenFile"):
            with open(rel(user["tokenFile"])) as f:
                self.token = f.read().strip()
        self.cert_file = self.key_file = None
        if user.get("client-certificate-data"):
            self.cert_file = os.path.join(pki_dir, "client.crt")
            self.key_file = os.path.join(pki_dir, "client.key")
            _write(self.cert_file, base64.b64decode(user["client-certificate-data"]), 0o600)
            _write(self.key_file, base64.b64decode(user["client-key-data"]), 0o600)
        elif user.get("client-certificate"):
            self.cert_file = rel(user["client-certificate"])
            self.key_file = rel(user["client-key"])


def _write(path, data, mode):
    tmp = path + ".tmp"
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode), "wb") as f:
        f.write(data)
    os.replace(tmp, path)


class Client:
    def __init__(self, kc, user_agent="kubelet-sim"):
        self.kc = kc
        self.ua = user_agent
        self.ctx = None
        if kc.scheme == "https":
            self.ctx = ssl.create_default_context(cafile=kc.ca_file) if kc.ca_file else \
                ssl.create_default_context()
            if kc.insecure:
                self.ctx.check_hostname = False
                self.ctx.verify_mode = ssl.CERT_NONE
            if kc.cert_file and not kc.token:
                self.ctx.load_cert_chain(kc.cert_file, kc.key_file)
        self._local = threading.local()

    def _new_conn(self, timeout):
        if self.ctx:
            return http.client.HTTPSConnection(self.kc.host, self.kc.port, timeout=timeout,
                                               context=self.ctx)
        return http.client.HTTPConnection(self.kc.host, self.kc.port, timeout=timeout)

    def _headers(self, ctype=None):
        h = {"Accept": "application/json", "User-Agent": self.ua}
        if self.kc.token:
            h["Authorization"] = "Bearer " + self.kc.token
        if ctype:
            h["Content-Type"] = ctype
        return h

    def request(self, method, path, body=None, ctype="application/json", timeout=15):
        """Returns the decoded JSON body; raises ApiError for >= 400, OSError for transport."""
        data = None
        if body is not None:
            data = json.dumps(body).encode()
        conn = getattr(self._local, "conn", None)
        for attempt in range(2):
            if conn is None:
                conn = self._new_conn(timeout)
            try:
                conn.timeout = timeout
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
                conn.request(method, path, data, self._headers(ctype if data else None))
                r = conn.getresponse()
                raw = r.read()
                self._local.conn = conn
                break
            except (http.client.HTTPException, OSError) as e:
                conn.close()
                conn = None
                self._local.conn = None
                if attempt:
                    if isinstance(e, OSError):
                        raise
                    raise TransportError("%s %s: %r" % (method, path, e)) from e
        try:
            obj = json.loads(raw) if raw else None
        except ValueError:
            obj = raw.decode(errors="replace")
        if r.status >= 400:
            raise ApiError(r.status, obj)
        return obj

    def get(self, path):
        return self.request("GET", path)

    def post(self, path, body):
        return self.request("POST", path, body)

    def put(self, path, body):
        return self.request("PUT", path, body)

    def delete(self, path, body=None):
        return self.request("DELETE", path, body)

    def patch(self, path, body, ptype="application/merge-patch+json"):
        return self.request("PATCH", path, body, ctype=ptype)

    def watch(self, path, read_timeout=60):
        """Yield watch events from path (which carries ?watch=true...). Ends when the
        server closes the stream; raises ApiError/OSError on failures."""
        conn = self._new_conn(read_timeout)
        try:
            yield from self._watch_events(conn, path)
        except http.client.HTTPException as e:
            raise TransportError("watch %s: %r" % (path, e)) from e
        finally:
            conn.close()

    def _watch_events(self, conn, path):
        conn.request("GET", path, None, self._headers())
        r = conn.getresponse()
        if r.status != 200:
            raw = r.read()
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode(errors="replace")
            raise ApiError(r.status, body)
        while True:
            line = r.readline(16 << 20)
            if not line:
                return
            line = line.strip()
            if line:
                yield json.loads(line)


def quote(s):
    return urllib.parse.quote(s, safe="")
