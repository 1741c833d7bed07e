"""Test helpers: start a simulator (or a TLS etcd) on a random loopback address and
talk raw HTTP to it with http.client + ssl, so the tests see exactly the bytes a
client would (status codes, headers, chunked watch streams).
"""

import http.client
import json
import os
import queue
import random
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM = os.path.join(HERE, "kube-apiserver-sim")
CRDS = os.path.normpath(os.path.join(HERE, "..", "..", "manifests", "crds"))


def _read(path):
    with open(path) as f:
        return f.read()


def random_loopback():
    """A random address in 127.0.0.0/8 that nothing listens on yet."""
    for _ in range(50):
        ip = "127.%d.%d.%d" % (random.randint(1, 254), random.randint(1, 254),
                               random.randint(2, 254))
        s = socket.socket()
        try:
            s.bind((ip, 0))
            return ip
        except OSError:
            continue
        finally:
            s.close()
    raise RuntimeError("no free loopback address")


class Sim:
    """A kube-apiserver-sim process with its own temp dir (stopped by PID)."""

    def __init__(self, args=(), crds=True, ip=None, dir=None, wait_for="ready"):
        """wait_for: the DIR file whose appearance ends startup ("kubeconfig" with
        mode (b) on an etcd that is not up yet)."""
        self.dir = dir or tempfile.mkdtemp(prefix="kube-sim-test-")
        self.args = list(args)
        self.ip = ip or random_loopback()
        cmd = [SIM, "--dir", self.dir, "--listen", "%s:0" % self.ip]
        if crds:
            cmd += ["--crd-dir", CRDS]
        cmd += list(args)
        self.log = open(os.path.join(self.dir, "sim.log"), "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        deadline = time.monotonic() + 40
        while not os.path.exists(os.path.join(self.dir, wait_for)):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                out = self.tail()
                self.stop()
                raise RuntimeError("simulator did not start:\n" + out)
            time.sleep(0.05)
        self.url = _read(os.path.join(self.dir, "server-url")).strip()
        self.token = _read(os.path.join(self.dir, "token")).strip()
        self.ca = os.path.join(self.dir, "ca.crt")

    def tail(self, n=40):
        try:
            with open(os.path.join(self.dir, "sim.log"), "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""

    def etcd_pid(self):
        try:
            return int(_read(os.path.join(self.dir, "etcd.pid")))
        except (OSError, ValueError):
            return None

    def stop(self, keep_dir=False):
        epid = self.etcd_pid()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if epid:
            deadline = time.monotonic() + 10
            while _alive(epid) and time.monotonic() < deadline:
                time.sleep(0.05)
        self.log.close()
        if not keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def client(self, **kw):
        kw.setdefault("token", self.token)
        return Client(self.url, self.ca, **kw)


def _die_with_parent():
    # ctest may kill a test hard on timeout; its simulators and etcds must not outlive it
    import ctypes
    ctypes.CDLL("libc.so.6").prctl(1, signal.SIGTERM, 0, 0, 0)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie of ours is gone for our purposes
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


class Resp:
    def __init__(self, status, headers, raw):
        self.status = status
        self.headers = headers
        self.raw = raw
        try:
            self.json = json.loads(raw) if raw else None
        except ValueError:
            self.json = None

    def header(self, name):
        return self.headers.get(name)

    def __repr__(self):
        return "<Resp %d %s>" % (self.status, self.raw[:300])


class Client:
    def __init__(self, url, ca, token=None, cert=None, key=None):
        u = urllib.parse.urlsplit(url)
        self.host, self.port, self.tls = u.hostname, u.port, u.scheme == "https"
        self.token = token
        self.ctx = None
        if self.tls:
            self.ctx = ssl.create_default_context(cafile=ca)
            if cert:
                self.ctx.load_cert_chain(cert, key)
        self._local = threading.local()
        self._all = []          # every keep-alive connection, for close()

    def __del__(self):
        self.close()

    def _conn(self, timeout=30):
        if self.tls:
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout, context=self.ctx)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def headers(self, extra=None):
        h = {"Accept": "application/json"}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        h.update(extra or {})
        return h

    def request(self, method, path, body=None, ctype="application/json", headers=None):
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        h = self.headers(headers)
        if body is not None:
            h["Content-Type"] = ctype
        conn = getattr(self._local, "conn", None)
        for attempt in range(2):
            if conn is None:
                conn = self._conn()
                self._all.append(conn)
            try:
                conn.request(method, path, body, h)
                r = conn.getresponse()
                raw = r.read()
                self._local.conn = conn
                return Resp(r.status, {k: v for k, v in r.getheaders()} | {"_all": r.getheaders()},
                            raw)
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                conn.close()
                conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def close(self):
        for conn in self._all:
            conn.close()
        self._all = []

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, body, **kw):
        return self.request("POST", path, body, **kw)

    def put(self, path, body, **kw):
        return self.request("PUT", path, body, **kw)

    def patch(self, path, body, ptype="merge", **kw):
        ct = {"merge": "application/merge-patch+json", "json": "application/json-patch+json",
              "strategic": "application/strategic-merge-patch+json",
              "apply": "application/apply-patch+yaml"}[ptype]
        return self.request("PATCH", path, body, ctype=ct, **kw)

    def delete(self, path, body=None, **kw):
        return self.request("DELETE", path, body, **kw)

    def watch(self, path, headers=None, timeout=30):
        return Watch(self, path, headers, timeout)


class Watch:
    """A streaming watch read by a thread; events() pops parsed lines."""

    def __init__(self, client, path, headers, timeout):
        self.conn = client._conn(timeout)
        self.conn.request("GET", path, None, client.headers(headers))
        # The socket, kept: a response that says "Connection: close" (every watch's) takes
        # it from the connection object, and close() must still be able to end it.
        self.sock = self.conn.sock
        self.resp = self.conn.getresponse()
        self.status = self.resp.status
        self.headers = dict(self.resp.getheaders())
        self.q = queue.Queue()
        self.ended = threading.Event()
        self.clean_end = False
        self.chunks = 0
        if self.status != 200:
            self.body = json.loads(self.resp.read() or b"null")
            self.conn.close()
            self.ended.set()
            return
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        # Parse the chunked framing ourselves: http.client hides whether the stream
        # ended with the terminating 0-size chunk (clean end) or was cut off.
        fp = self.resp.fp
        buf = b""
        try:
            while True:
                line = fp.readline(1024)
                if not line:
                    break
                size = int(line.split(b";")[0].strip() or b"x", 16)
                if size == 0:
                    self.clean_end = True
                    break
                data = fp.read(size)
                fp.read(2)
                if len(data) < size:
                    break
                self.chunks += 1
                buf += data
                while b"\n" in buf:
                    one, buf = buf.split(b"\n", 1)
                    if one.strip():
                        self.q.put(json.loads(one))
        except (OSError, ValueError):
            pass
        finally:
            self.ended.set()
            self.conn.close()

    def next(self, timeout=10):
        try:
            return self.q.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError("no watch event within %s s" % timeout)

    def collect(self, n, timeout=10, skip_bookmarks=True):
        out = []
        deadline = time.monotonic() + timeout
        while len(out) < n:
            ev = self.next(max(deadline - time.monotonic(), 0.01))
            if skip_bookmarks and ev["type"] == "BOOKMARK":
                continue
            out.append(ev)
        return out

    def drain(self, wait=0.5):
        out = []
        deadline = time.monotonic() + wait
        while True:
            try:
                out.append(self.q.get(timeout=max(deadline - time.monotonic(), 0.01)))
            except queue.Empty:
                return out

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass
        self.conn.close()


class TlsEtcd:
    """A one-member TLS etcd with client-cert auth, certs made by openssl, on
    <ip>:2379 (the port etcd-endpoints URLs imply) and its HTTP listener on
    <ip>:2381, as the product's etcd pods lay them out, with a random peer port."""

    def __init__(self, ip=None, cert_ip=None):
        """cert_ip: the address its serving certificate names instead of its own (a master
        that moved, still serving the certificate of its old address)."""
        self.dir = tempfile.mkdtemp(prefix="kube-sim-etcd-")
        self.ip = ip or random_loopback()
        pki = self.dir
        self._ca(pki)
        self.cert_ip = cert_ip
        self._issue(pki, "server", "/CN=etcd-server", "extendedKeyUsage=serverAuth,clientAuth",
                    "subjectAltName=IP:%s,IP:127.0.0.1,DNS:localhost" % (cert_ip or self.ip))
        self._issue(pki, "client", "/CN=etcd-client", "extendedKeyUsage=clientAuth", None)
        s = socket.socket()
        s.bind((self.ip, 0))
        self.pport = s.getsockname()[1]
        s.close()
        self.url = "https://%s:2379" % self.ip
        self.cacert = os.path.join(pki, "ca.crt")
        self.cert = os.path.join(pki, "client.crt")
        self.key = os.path.join(pki, "client.key")
        self._start()

    def _start(self):
        pki = self.dir
        peer = "https://%s:%d" % (self.ip, self.pport)
        log = open(os.path.join(self.dir, "etcd.log"), "ab")
        self.proc = subprocess.Popen(
            ["etcd", "--name", "m1", "--data-dir", os.path.join(self.dir, "data"),
             "--listen-client-urls", self.url, "--advertise-client-urls", self.url,
             "--listen-client-http-urls", "https://%s:2381" % self.ip,
             "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
             "--initial-cluster", "m1=" + peer, "--initial-cluster-token",
             "t%d-%d" % (os.getpid(), time.monotonic_ns()),
             "--cert-file", os.path.join(pki, "server.crt"),
             "--key-file", os.path.join(pki, "server.key"), "--client-cert-auth",
             "--trusted-ca-file", self.cacert, "--peer-cert-file", os.path.join(pki, "server.crt"),
             "--peer-key-file", os.path.join(pki, "server.key"), "--peer-trusted-ca-file",
             self.cacert, "--logger", "zap", "--log-outputs", "stderr"],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            preexec_fn=_die_with_parent)
        log.close()
        ctx = ssl.create_default_context(cafile=self.cacert)
        ctx.load_cert_chain(self.cert, self.key)
        if self.cert_ip:
            ctx.check_hostname = False  # its certificate names another address: only the CA is checked
        deadline = time.monotonic() + 20
        while True:
            try:
                c = http.client.HTTPSConnection(self.ip, 2381, timeout=1, context=ctx)
                try:
                    c.request("GET", "/health")
                    healthy = b'"true"' in c.getresponse().read()
                finally:
                    c.close()
                if healthy:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("TLS etcd did not start")
            time.sleep(0.1)

    def restart_empty(self):
        """Stop, wipe the data and start a new cluster on the same address: the
        store's revision goes back to 1, as after restoring an old snapshot."""
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            # etcd's graceful stop waits for its open streams; on a loaded machine that can
            # outlast 10 s (seen in CI). The data goes anyway, as stop() escalates.
            self.proc.kill()
            self.proc.wait(5)
        shutil.rmtree(os.path.join(self.dir, "data"), ignore_errors=True)
        self._start()

    @staticmethod
    def _run(args):
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def _ca(self, d):
        self._run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                   "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", os.path.join(d, "ca.key"),
                   "-out", os.path.join(d, "ca.crt"), "-days", "2", "-subj", "/CN=test-etcd-ca",
                   "-addext", "basicConstraints=critical,CA:TRUE",
                   "-addext", "keyUsage=critical,keyCertSign,cRLSign"])

    def _issue(self, d, name, subj, eku, san):
        ext = os.path.join(d, name + ".ext")
        with open(ext, "w") as f:
            f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n")
            f.write(eku + "\n" + (san + "\n" if san else ""))
        self._run(["openssl", "req", "-new", "-newkey", "ec", "-pkeyopt",
                   "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                   os.path.join(d, name + ".key"), "-out", os.path.join(d, name + ".csr"),
                   "-subj", subj])
        self._run(["openssl", "x509", "-req", "-in", os.path.join(d, name + ".csr"), "-CA",
                   os.path.join(d, "ca.crt"), "-CAkey", os.path.join(d, "ca.key"),
                   "-CAcreateserial", "-days", "2", "-extfile", ext,
                   "-out", os.path.join(d, name + ".crt")])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        shutil.rmtree(self.dir, ignore_errors=True)
