"""A tiny etcd gateway client for e2e watchers and writers (stdlib only):
TLS with the rendered client certificate, keep-alive connections, failover
across endpoints, every call bounded by a timeout."""
import base64
import http.client
import json
import os
import ssl
import time


class Etcd:
    def __init__(self, ca, cert, key, timeout=3.0):
        self.files = (ca, cert, key)
        self.stamp = None
        self.timeout = timeout
        self.conns = {}
        self._load()

    def _load(self):
        """The context from the files; again when one of them is replaced (a test that rotates
        the signer follows what the operator publishes into them: scenario.OperatorMounts)."""
        stamp = tuple((st.st_ino, st.st_mtime_ns) for st in (os.stat(f) for f in self.files))
        if stamp == self.stamp:
            return
        try:
            ctx = ssl.create_default_context(cafile=self.files[0])
            ctx.load_cert_chain(self.files[1], self.files[2])
        except ssl.SSLError:
            if self.stamp is None:
                raise
            return  # a certificate replaced before its key (or after): the next call tries again
        self.ctx, self.stamp = ctx, stamp
        for c in self.conns.values():
            c.close()
        self.conns = {}

    def _conn(self, endpoint):
        self._load()
        c = self.conns.get(endpoint)
        if c is None:
            host, port = endpoint.replace("https://", "").rsplit(":", 1)
            # etcd's HTTP services are on its HTTP listener 2381 beside the gRPC client port
            # 2379, as the etcd pods lay them out (etcd 3.5's --listen-client-http-urls).
            port = 2381 if int(port) == 2379 else int(port)
            c = http.client.HTTPSConnection(host.strip("[]"), port, context=self.ctx, timeout=self.timeout)
            self.conns[endpoint] = c
        return c

    def call(self, endpoint, path, body=None, method="POST"):
        """(status, json) or raises OSError / http.client errors. A kept-alive
        connection the server closed while idle is retried once on a new one."""
        reused = endpoint in self.conns
        try:
            return self._call(endpoint, path, body, method)
        except (OSError, http.client.HTTPException):
            if not reused:
                raise
        return self._call(endpoint, path, body, method)

    def _call(self, endpoint, path, body, method):
        c = self._conn(endpoint)
        try:
            c.request(method, path, body=json.dumps(body or {}) if method == "POST" else None,
                      headers={"Content-Type": "application/json", "Grpc-Timeout": "%dm" % int(self.timeout * 900)})
            r = c.getresponse()
            data = r.read()
        except Exception:
            c.close()
            self.conns.pop(endpoint, None)
            raise
        try:
            return r.status, json.loads(data) if data else {}
        except ValueError:
            return r.status, {}

    def first(self, endpoints, path, body=None):
        last = None
        for e in endpoints:
            try:
                st, j = self.call(e, path, body)
                if st == 200:
                    return e, j
                last = "%s: HTTP %d %s" % (e, st, j)
            except Exception as ex:
                last = "%s: %s" % (e, ex)
        raise OSError(last)

    def members(self, endpoints, answered=None):
        """The member list of the most advanced member that answers. In 3.4 a
        member serves the list from its own state: a removed member that its
        kubelet restarts on the old data dir answers with the membership it
        last knew (and may raise its own raft term by campaigning), and a
        member replaying its log after a restart knows the committed index
        before it has applied it (an old membership, old member IDs), so the
        highest applied index picks whom to ask (raftIndex where the status
        has no raftAppliedIndex); the order given breaks ties. `answered`, a
        set, gets every endpoint whose status came back."""
        best, best_index = None, -1
        for e in endpoints:
            try:
                st, j = self.call(e, "/v3/maintenance/status")
                index = int(j.get("raftAppliedIndex") or j.get("raftIndex") or "0") if st == 200 else -1
            except Exception:
                continue
            if answered is not None and st == 200:
                answered.add(e)
            if index > best_index:
                best, best_index = e, index
        _, j = self.first(([best] if best else []) + [e for e in endpoints if e != best],
                          "/v3/cluster/member/list")
        return j.get("members", [])

    def healthy(self, endpoint):
        return self.health(endpoint) is None

    def health(self, endpoint):
        """None when healthy, else why not (for logs)."""
        t0 = time.monotonic()
        try:
            st, j = self.call(endpoint, "/health", method="GET")
        except Exception as ex:
            return "%s after %.1f s" % (ex.__class__.__name__, time.monotonic() - t0)
        if st == 200 and j.get("health") == "true":
            return None
        return "HTTP %d %s after %.1f s" % (st, json.dumps(j), time.monotonic() - t0)

    def put(self, endpoints, key, value):
        return self.first(endpoints, "/v3/kv/put", {"key": b64(key), "value": b64(value)})

    def get(self, endpoints, key):
        _, j = self.first(endpoints, "/v3/kv/range", {"key": b64(key)})
        kvs = j.get("kvs", [])
        return base64.b64decode(kvs[0]["value"]).decode() if kvs else None


def b64(s):
    return base64.b64encode(s.encode()).decode()
