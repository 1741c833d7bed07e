"""Test-only fault injection and counters behind /sim/* (see README).

POST /sim/faults   {"method":"PUT","path_regex":"...","code":409|429|500|503|504,
                    "count":N,"retry_after":S,"after":false}  fail the next N matching requests
                   (after: true serves the request first and answers with the fault instead of
                   its result: a write carried out whose answer was lost, as a kube-apiserver
                   504 Timeout "may still be processing the request")
POST /sim/latency  {"ms":N}  delay every API request by N ms (0 = off)
GET  /sim/stats    request counts by verb, open watches, pending faults
GET  /sim/writes?since=N  the write requests served (method, path, body digest, status, agent),
                   oldest first, from sequence number N on (the last 50 000 are kept)
DELETE /sim/faults drop all pending faults
(/sim/drop-watches and /sim/compact live in api.py: they need the hub and etcd.)
"""

import collections
import re
import threading

from . import errors

_REASONS = {
    400: ("BadRequest", "injected fault: bad request"),
    401: ("Unauthorized", "Unauthorized"),
    403: ("Forbidden", "injected fault: forbidden"),
    404: ("NotFound", "injected fault: the server could not find the requested resource"),
    409: ("Conflict", "Operation cannot be fulfilled: injected fault: the object has been "
                      "modified; please apply your changes to the latest version and try again"),
    410: ("Expired", "injected fault: too old resource version"),
    422: ("Invalid", "injected fault: invalid"),
    429: ("TooManyRequests", "the server has received too many requests and has asked us to try "
                             "again later"),
    500: ("InternalError", "Internal error occurred: injected fault"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", "the server was unable to return a response in the time allotted, but may "
                     "still be processing the request"),
}


class Faults:
    def __init__(self):
        self._lock = threading.Lock()
        self._rules = []
        self.latency_ms = 0
        self.requests = {}       # verb -> count
        self.methods = {}        # HTTP method -> count
        self.open_watches = 0
        self.watches_total = 0
        self.injected = 0
        self.writes = collections.deque(maxlen=50000)  # {"seq","method","path","digest","code"}
        self.write_seq = 0

    def add(self, spec):
        if not isinstance(spec, dict):
            raise errors.bad_request("fault must be a JSON object")
        code = spec.get("code")
        if code not in _REASONS:
            raise errors.bad_request("unsupported fault code %r; use one of %s"
                                     % (code, sorted(_REASONS)))
        try:
            rx = re.compile(spec.get("path_regex") or ".*")
        except re.error as e:
            raise errors.bad_request("bad path_regex: %s" % e)
        count = int(spec.get("count", 1))
        rule = {"method": (spec.get("method") or "").upper(), "path_regex": rx, "code": code,
                "count": count, "retry_after": spec.get("retry_after"),
                "message": spec.get("message"), "after": bool(spec.get("after"))}
        with self._lock:
            self._rules.append(rule)
        return self.describe()

    def clear(self):
        with self._lock:
            self._rules = []

    def describe(self):
        with self._lock:
            return [{"method": r["method"], "path_regex": r["path_regex"].pattern,
                     "code": r["code"], "count": r["count"], "retry_after": r["retry_after"],
                     "after": r["after"]} for r in self._rules]

    def check(self, method, path_and_query):
        """An ApiError to return instead of serving this request, or None."""
        with self._lock:
            for r in self._rules:
                if r["method"] and r["method"] != method:
                    continue
                if not r["path_regex"].search(path_and_query):
                    continue
                r["count"] -= 1
                if r["count"] <= 0:
                    self._rules.remove(r)
                self.injected += 1
                return self._error(r)
        return None

    @staticmethod
    def _error(r):
        code = r["code"]
        reason, msg = _REASONS[code]
        details, headers = None, {}
        ra = r["retry_after"]
        if ra is None and code in (429, 503):
            ra = 1
        if ra is not None:
            details = {"retryAfterSeconds": int(ra)}
            headers["Retry-After"] = str(int(ra))
        err = errors.ApiError(code, reason, r["message"] or msg, details, headers)
        err.after = r["after"]
        return err

    def count(self, method, verb):
        with self._lock:
            self.methods[method] = self.methods.get(method, 0) + 1
            if verb:
                self.requests[verb] = self.requests.get(verb, 0) + 1

    def record_write(self, method, path, digest, code, agent, served=None):
        """code: the status the client got; served: the one the request was carried out
        with, when an `after` fault replaced it (else the same as code)."""
        with self._lock:
            self.write_seq += 1
            self.writes.append({"seq": self.write_seq, "method": method, "path": path, "digest": digest,
                                "code": code, "served": code if served is None else served,
                                "agent": agent})

    def writes_since(self, seq):
        with self._lock:
            return [w for w in self.writes if w["seq"] >= seq]

    def watch_started(self):
        with self._lock:
            self.open_watches += 1
            self.watches_total += 1

    def watch_ended(self):
        with self._lock:
            self.open_watches -= 1

    def stats(self):
        with self._lock:
            return {"requests": dict(self.requests), "methods": dict(self.methods),
                    "total": sum(self.methods.values()), "openWatches": self.open_watches,
                    "watchesTotal": self.watches_total, "injected": self.injected,
                    "latencyMs": self.latency_ms,
                    "faults": [{"method": r["method"], "path_regex": r["path_regex"].pattern,
                                "code": r["code"], "count": r["count"]} for r in self._rules]}
