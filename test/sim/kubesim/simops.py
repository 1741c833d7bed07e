"""The /sim/* control endpoints (test-only; authenticated like the API).

POST /sim/drop-watches  {"abort": false}   end every open watch now (abort: reset the
                                           connection instead of ending the stream)
POST /sim/faults        see faults.py;  GET lists them, DELETE clears them
POST /sim/latency       {"ms": N}
POST /sim/compact       {"revision": R}    compact etcd (default: current revision)
GET  /sim/stats         counters, open watches, revisions, etcd endpoints (and the one asked first)
GET  /sim/writes?since=N  the write requests served, with body digests (faults.py)
GET  /sim/forbidden     the requests RBAC denied (rbac.py), newest last
"""

import json

from . import errors


class SimOps:
    def __init__(self, app_ref, etcd, hub, faults, log):
        self._app = app_ref        # callable returning the App (built after us)
        self.etcd = etcd
        self.hub = hub
        self.faults = faults
        self.log = log

    def _json(self, req):
        raw = req.read_body()
        if not raw.strip():
            return {}
        try:
            d = json.loads(raw)
        except ValueError as e:
            raise errors.bad_request("invalid JSON: %s" % e)
        if not isinstance(d, dict):
            raise errors.bad_request("expected a JSON object")
        return d

    def handle(self, req, path, q):
        m = req.command
        name = path[len("/sim/"):].strip("/")
        if name == "drop-watches" and m == "POST":
            body = self._json(req)
            app = self._app()
            app.abort_drops = bool(body.get("abort"))
            n = self.faults.open_watches
            self.hub.drop_all()
            self.log("dropped %d open watches%s" % (n, " (abort)" if app.abort_drops else ""))
            return req.send_json(200, {"dropped": n})
        if name == "faults":
            if m == "POST":
                return req.send_json(200, {"faults": self.faults.add(self._json(req))})
            if m == "GET":
                return req.send_json(200, {"faults": self.faults.describe()})
            if m == "DELETE":
                self.faults.clear()
                return req.send_json(200, {"faults": []})
        if name == "latency" and m == "POST":
            body = self._json(req)
            try:
                ms = max(0, int(body.get("ms", 0)))
            except (TypeError, ValueError):
                raise errors.bad_request("ms must be an integer")
            self.faults.latency_ms = ms
            return req.send_json(200, {"ms": ms})
        if name == "compact" and m == "POST":
            body = self._json(req)
            rev = int(body.get("revision") or self.etcd.current_revision())
            try:
                self.etcd.compact(rev)
            except Exception as e:  # already compacted: still trim the cache
                if "compacted" not in str(e):
                    raise errors.internal("compaction failed: %s" % e)
            self.hub.compacted(rev)
            self.log("compacted etcd at revision %d" % rev)
            return req.send_json(200, {"revision": rev})
        if name == "writes" and m == "GET":
            try:
                since = int(q.get("since") or 0)
            except ValueError:
                raise errors.bad_request("since must be an integer")
            return req.send_json(200, {"writes": self.faults.writes_since(since)})
        if name == "forbidden" and m == "GET":
            rbac = self._app().rbac
            return req.send_json(200, {"forbidden": list(rbac.forbidden_log) if rbac else []})
        if name == "stats" and m == "GET":
            st = self.faults.stats()
            st.update(revision=self.etcd.current_revision(), watchCacheRevision=self.hub.rev,
                      watchCacheStart=self.hub.start, etcdEndpoints=self.etcd.endpoints,
                      etcdPreferred=self.etcd.preferred())
            return req.send_json(200, st)
        raise errors.path_not_found()
