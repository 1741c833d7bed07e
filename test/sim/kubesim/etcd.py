"""Client for etcd's gRPC-gateway JSON API (https://etcd.io/docs/v3.5/dev-guide/api_grpc_gateway/).

Why the gateway and not gRPC: the standard library has no HTTP/2 or protobuf, and the
gateway is also what the operator uses, so the simulator exercises the same etcd
surface.  Keys and values are bytes (base64 on the wire), 64-bit numbers arrive as
strings and zero values are omitted, so every lookup here defaults.

Endpoints fail over in order (the last good one first); a request that cannot be
delivered anywhere raises EtcdUnavailable.  Connections are pooled per endpoint
because a fresh TLS handshake costs more than the request itself.
"""

import base64
import http.client
import json
import os
import socket
import ssl
import threading
import time
import urllib.parse


class EtcdError(Exception):
    def __init__(self, message, code=0, http_status=0):
        super().__init__(message)
        self.code = code
        self.http_status = http_status


class EtcdCompacted(EtcdError):
    """The requested revision has been compacted (gRPC code 11)."""


class EtcdFutureRevision(EtcdError):
    """The requested revision is newer than the store (gRPC code 11)."""


class EtcdUnavailable(EtcdError):
    """No endpoint answered."""


def b64(data):
    if isinstance(data, str):
        data = data.encode()
    return base64.b64encode(data).decode()


def unb64(s):
    return base64.b64decode(s) if s else b""


def prefix_end(prefix):
    """range_end for a prefix scan: the prefix with its last byte incremented."""
    p = bytearray(prefix.encode() if isinstance(prefix, str) else prefix)
    while p:
        if p[-1] < 0xFF:
            p[-1] += 1
            return bytes(p)
        p.pop()
    return b"\0"


class KV:
    __slots__ = ("key", "value", "create_rev", "mod_rev", "version")

    def __init__(self, d):
        self.key = unb64(d.get("key", "")).decode()
        self.value = unb64(d.get("value", ""))
        self.create_rev = int(d.get("create_revision", 0))
        self.mod_rev = int(d.get("mod_revision", 0))
        self.version = int(d.get("version", 0))


def _member_gone(msg):
    return "transport: " in msg or "server stopped" in msg or "permanently removed" in msg


def _raise_for(status, body):
    try:
        d = json.loads(body)
    except ValueError:
        d = {}
    err = d.get("error")
    if isinstance(err, dict):  # streaming error shape
        msg, code = err.get("message", ""), err.get("grpc_code", 0)
    else:
        msg, code = d.get("message") or err or body[:200].decode(errors="replace"), d.get("code", 0)
    if code == 11 and "compacted" in msg:
        raise EtcdCompacted(msg, code, status)
    if code == 11 and "future" in msg:
        raise EtcdFutureRevision(msg, code, status)
    raise EtcdError(msg or "etcd returned HTTP %d" % status, code, status)


def http_port(port):
    """Where this client's HTTP calls go for a client URL's port. kube-apiserver speaks gRPC
    to the client port; this stand-in speaks etcd's HTTP gateway instead, which a member laid
    out as the product's etcd pods (etcd 3.5, --listen-client-http-urls) serves on 2381
    beside 2379 only. Any other port serves both (the simulator's own etcd)."""
    port = port or 2379
    return 2381 if port == 2379 else port


LOCALHOST = " via localhost"   # suffix of a master's local endpoint (EtcdClient local_file)


class _LocalhostConnection(http.client.HTTPSConnection):
    """https://localhost:2379 of the kube-apiserver on a master: here, the master's address,
    with the certificate checked for the name "localhost" (every serving certificate of
    etcd has it) instead of the address."""

    def connect(self):
        sock = socket.create_connection((self.host, self.port), self.timeout, self.source_address)
        self.sock = self._context.wrap_socket(sock, server_hostname="localhost")


class EtcdClient:
    def __init__(self, endpoints, cacert=None, cert=None, key=None, timeout=10.0, log=None, local_file=None):
        self._lock = threading.Lock()
        self._pool = {}
        self._timeout = timeout
        self._log = log or (lambda *a: None)
        self._ctx = None
        if any(e.startswith("https://") for e in endpoints):
            ctx = ssl.create_default_context(cafile=cacert)
            if cert:
                ctx.load_cert_chain(cert, key)
            self._ctx = ctx
        self._endpoints = list(endpoints)
        self._preferred = 0
        # Every kube-apiserver also reaches the etcd of its own master at https://localhost:2379
        # (upstream's etcd-servers always has it): the masters' addresses now, one a line,
        # which the test harness keeps up to date, re-read when it changes. Tried after the
        # configured endpoints, so the API still answers when the member list names addresses
        # nobody has any more (after the whole cluster moved and a quorum restore).
        self._local_file = local_file
        self._local_stamp = None
        self._local = []
        self._good_local = None
        self._spent = threading.local()   # this thread's etcd calls: [count, seconds]

    def thread_spent(self, reset=False):
        """(calls, seconds) this thread spent in unary etcd calls since the last reset:
        what a slow API request spent waiting for etcd, against its own work."""
        t = getattr(self._spent, "v", None) or [0, 0.0]
        if reset:
            self._spent.v = [0, 0.0]
        return t[0], t[1]

    # -- endpoints ----------------------------------------------------------
    @property
    def endpoints(self):
        with self._lock:
            return list(self._endpoints)

    def set_endpoints(self, endpoints):
        """Switch to a new endpoint list (mode (b): the kube-apiserver follows
        etcd-endpoints); idle connections to dropped endpoints are closed."""
        with self._lock:
            old = self._endpoints
            self._endpoints = list(endpoints)
            self._preferred = 0
            dropped = [e for e in old if e not in self._endpoints]
            conns = [c for e in dropped for c in self._pool.pop(e, [])]
        for c in conns:
            c.close()

    def _local_endpoints(self):
        if not self._local_file:
            return []
        try:
            st = os.stat(self._local_file)
            stamp = (st.st_mtime_ns, st.st_size)
            if stamp != self._local_stamp:
                with open(self._local_file) as f:
                    ips = [ln.strip() for ln in f if ln.strip()]
                self._local = ["https://%s:2379%s" % ("[%s]" % ip if ":" in ip else ip, LOCALHOST)
                               for ip in ips]
                self._local_stamp = stamp
        except OSError:
            pass
        return list(self._local)

    def _order(self):
        local = self._local_endpoints()
        with self._lock:
            eps = list(self._endpoints)
            start = self._preferred % len(eps) if eps else 0
            good = self._good_local
        # The last local endpoint that answered goes first while the configured ones
        # have not answered since.
        if good in local:
            return [good] + eps[start:] + eps[:start] + [e for e in local if e != good]
        return eps[start:] + eps[:start] + local

    def preferred(self):
        """The endpoint requests go to first (the last one that answered)."""
        eps = self._order()
        return eps[0] if eps else None

    def _mark_good(self, ep):
        with self._lock:
            if ep in self._endpoints:
                self._preferred = self._endpoints.index(ep)
                self._good_local = None
            elif ep.endswith(LOCALHOST):
                self._good_local = ep

    def _new_conn(self, ep, timeout):
        if ep.endswith(LOCALHOST):
            u = urllib.parse.urlsplit(ep[:-len(LOCALHOST)])
            return _LocalhostConnection(u.hostname, http_port(u.port), timeout=timeout, context=self._ctx)
        u = urllib.parse.urlsplit(ep)
        if u.scheme == "https":
            return http.client.HTTPSConnection(u.hostname, http_port(u.port), timeout=timeout,
                                               context=self._ctx)
        return http.client.HTTPConnection(u.hostname, http_port(u.port), timeout=timeout)

    def _get_conn(self, ep):
        with self._lock:
            lst = self._pool.get(ep)
            if lst:
                return lst.pop(), True
        return self._new_conn(ep, self._timeout), False

    def _put_conn(self, ep, conn):
        with self._lock:
            if ep in self._endpoints or ep in self._local:
                lst = self._pool.setdefault(ep, [])
                if len(lst) < 16:
                    lst.append(conn)
                    return
        conn.close()

    # -- unary calls --------------------------------------------------------
    def call(self, path, body):
        t0 = time.monotonic()
        try:
            return self._call(path, body)
        finally:
            t = getattr(self._spent, "v", None)
            if t is not None:
                t[0] += 1
                t[1] += time.monotonic() - t0

    def _call(self, path, body):
        data = json.dumps(body).encode()
        last = None
        for ep in self._order():
            for attempt in range(2):
                conn, reused = self._get_conn(ep)
                try:
                    conn.request("POST", path, data, {"Content-Type": "application/json"})
                    resp = conn.getresponse()
                    payload = resp.read()
                except (OSError, http.client.HTTPException) as e:
                    conn.close()
                    last = e
                    if reused and attempt == 0:
                        continue  # a stale keep-alive connection: retry on a fresh one
                    break
                if resp.status == 200:
                    self._put_conn(ep, conn)
                    self._mark_good(ep)
                    return json.loads(payload)
                conn.close()
                try:
                    _raise_for(resp.status, payload)
                except EtcdError as e:
                    # 503 (code 14: no leader, timed out, learner) means "try another member";
                    # so does a member whose gateway cannot reach its own gRPC server (a member
                    # just removed answers "transport: missing content-type field"): the
                    # request never reached etcd, so even a write is safe to send elsewhere.
                    if resp.status == 503 or e.code == 14 or _member_gone(str(e)):
                        last = e
                        break
                    raise
        raise EtcdUnavailable("etcd unavailable (%s): %s" % (",".join(self.endpoints), last))

    def range(self, key, range_end=None, revision=0, limit=0, keys_only=False, count_only=False):
        body = {"key": b64(key)}
        if range_end is not None:
            body["range_end"] = b64(range_end)
        if revision:
            body["revision"] = str(revision)
        if limit:
            body["limit"] = str(limit)
        if keys_only:
            body["keys_only"] = True
        if count_only:
            body["count_only"] = True
        r = self.call("/v3/kv/range", body)
        kvs = [KV(k) for k in r.get("kvs", [])]
        return (int(r.get("header", {}).get("revision", 0)), kvs, bool(r.get("more")),
                int(r.get("count", 0)))

    def get(self, key, revision=0):
        rev, kvs, _, _ = self.range(key, revision=revision)
        return rev, (kvs[0] if kvs else None)

    def current_revision(self):
        rev, _, _, _ = self.range("\0", count_only=True)
        return rev

    def txn(self, compare, success, failure=()):
        r = self.call("/v3/kv/txn", {"compare": list(compare), "success": list(success),
                                     "failure": list(failure)})
        return bool(r.get("succeeded")), int(r.get("header", {}).get("revision", 0)), \
            r.get("responses", [])

    def create(self, key, value):
        """Put key only if absent.  Returns (ok, revision, existing KV or None)."""
        ok, rev, resps = self.txn(
            [{"key": b64(key), "target": "CREATE", "result": "EQUAL", "create_revision": "0"}],
            [{"request_put": {"key": b64(key), "value": b64(value)}}],
            [{"request_range": {"key": b64(key)}}])
        if ok:
            return True, rev, None
        kvs = resps[0].get("response_range", {}).get("kvs", []) if resps else []
        return False, rev, (KV(kvs[0]) if kvs else None)

    def cas_put(self, key, value, mod_rev):
        """Put key if its mod_revision is still mod_rev.  Returns (ok, rev, current KV)."""
        ok, rev, resps = self.txn(
            [{"key": b64(key), "target": "MOD", "result": "EQUAL", "mod_revision": str(mod_rev)}],
            [{"request_put": {"key": b64(key), "value": b64(value)}}],
            [{"request_range": {"key": b64(key)}}])
        if ok:
            return True, rev, None
        kvs = resps[0].get("response_range", {}).get("kvs", []) if resps else []
        return False, rev, (KV(kvs[0]) if kvs else None)

    def cas_delete(self, key, mod_rev):
        """Delete key if its mod_revision is still mod_rev.  Returns (ok, rev, current KV)."""
        ok, rev, resps = self.txn(
            [{"key": b64(key), "target": "MOD", "result": "EQUAL", "mod_revision": str(mod_rev)}],
            [{"request_delete_range": {"key": b64(key)}}],
            [{"request_range": {"key": b64(key)}}])
        if ok:
            return True, rev, None
        kvs = resps[0].get("response_range", {}).get("kvs", []) if resps else []
        return False, rev, (KV(kvs[0]) if kvs else None)

    def delete_range(self, key, range_end):
        r = self.call("/v3/kv/deleterange", {"key": b64(key), "range_end": b64(range_end)})
        return int(r.get("header", {}).get("revision", 0)), int(r.get("deleted", 0))

    def compact(self, revision, physical=True):
        return self.call("/v3/kv/compaction", {"revision": str(revision), "physical": physical})

    def status(self):
        return self.call("/v3/maintenance/status", {})

    def close(self):
        with self._lock:
            conns = [c for lst in self._pool.values() for c in lst]
            self._pool = {}
        for c in conns:
            c.close()

    # -- watch --------------------------------------------------------------
    def watch(self, key, range_end, start_rev, progress_notify=True, read_timeout=60.0):
        """Open a streaming watch on the first endpoint that accepts it."""
        last = None
        for ep in self._order():
            try:
                return EtcdWatch(self, ep, key, range_end, start_rev, progress_notify, read_timeout)
            except (OSError, http.client.HTTPException, EtcdError) as e:
                last = e
        raise EtcdUnavailable("etcd watch unavailable: %s" % last)


class EtcdWatch:
    """One /v3/watch stream: iterate to get each `result` message.

    close() may be called from another thread; it shuts the socket down so a
    blocked read returns at once."""

    def __init__(self, client, ep, key, range_end, start_rev, progress_notify, read_timeout):
        self.endpoint = ep
        self._closed = False
        self.conn = client._new_conn(ep, 5.0)
        req = {"create_request": {"key": b64(key), "range_end": b64(range_end),
                                  "start_revision": str(start_rev), "prev_kv": True,
                                  "progress_notify": progress_notify}}
        self.conn.request("POST", "/v3/watch", json.dumps(req).encode(),
                          {"Content-Type": "application/json"})
        self.resp = self.conn.getresponse()
        if self.resp.status != 200:
            payload = self.resp.read()
            self.conn.close()
            _raise_for(self.resp.status, payload)
        self.conn.sock.settimeout(read_timeout)

    def __iter__(self):
        return self

    def __next__(self):
        if self._closed:
            self._finish()
            raise StopIteration
        try:
            line = self.resp.readline()
        except Exception:   # includes http.client internals racing with close()
            line = b""
        if not line:
            self._finish()
            raise StopIteration
        d = json.loads(line)
        if "error" in d:
            self._finish()
            err = d["error"]
            raise EtcdError(err.get("message", str(err)) if isinstance(err, dict) else str(err))
        return d.get("result", {})

    def _finish(self):
        self._closed = True
        try:
            self.conn.close()
        except Exception:
            pass

    def close(self):
        """Unblock a reader in another thread: shut the socket down and let the
        reader close the connection (http.client objects are not thread-safe)."""
        self._closed = True
        try:
            sock = self.conn.sock
            if sock:
                sock.shutdown(socket.SHUT_RDWR)
        except (OSError, AttributeError):
            pass
