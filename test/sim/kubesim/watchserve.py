"""Serving one WATCH request (https://kubernetes.io/docs/reference/using-api/api-concepts/#efficient-detection-of-changes).

Starting point:
  * resourceVersion unset or "0": synthetic ADDED for the current objects, then changes;
  * sendInitialEvents=true (+ resourceVersionMatch=NotOlderThan): the same, followed
    by a BOOKMARK annotated k8s.io/initial-events-end;
  * resourceVersion N: changes after N; N older than the watch cache -> 200 with one
    ERROR event (410 Expired) and the stream ends.
Then events from the watch cache, filtered by the selectors with ADDED/DELETED on
transitions, BOOKMARKs (only with allowWatchBookmarks) every few seconds and right
before timeoutSeconds ends, Table/PartialObjectMetadata encodings, and a clean end
of the chunked stream on timeout or /sim/drop-watches.
"""

import json
import random
import time

from . import errors, lists, tables
from .etcd import EtcdError
from .watchhub import Expired

BOOKMARK_INTERVAL = 5.0


class _Encoder:
    def __init__(self, rt, fmt, include):
        self.rt = rt
        self.fmt = fmt
        self.include = include
        self.first_table = True

    def obj(self, obj):
        rt = self.rt
        if obj.get("apiVersion") != rt.api_version or obj.get("kind") != rt.kind:
            obj = dict(obj, apiVersion=rt.api_version, kind=rt.kind)
        if self.fmt == "table":
            t = tables.table(rt, [obj], rv=(obj.get("metadata") or {}).get("resourceVersion"),
                             include=self.include, headers=self.first_table)
            self.first_table = False
            return t
        if self.fmt == "partial":
            return tables.partial_metadata(obj)
        return obj

    def bookmark(self, rv, initial_end=False):
        md = {"resourceVersion": str(rv)}
        if initial_end:
            md["annotations"] = {"k8s.io/initial-events-end": "true"}
        if self.fmt == "table":
            return {"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": md,
                    "columnDefinitions": None, "rows": []}
        if self.fmt == "partial":
            return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": md}
        return {"kind": self.rt.kind, "apiVersion": self.rt.api_version, "metadata": md}


def _line(etype, obj):
    return json.dumps({"type": etype, "object": obj}, separators=(",", ":")).encode() + b"\n"


def _expired_line(e):
    return _line("ERROR", errors.expired(str(e)).status())


def serve(app, req, rt, ns, q, pred, fmt, include):
    rv_text, match = lists.validate_list_options(q, watch=True)
    sie = q.get("sendInitialEvents")
    send_initial = sie in ("true", "1")
    bookmarks = q.get("allowWatchBookmarks") in ("true", "1")
    try:
        timeout = float(q.get("timeoutSeconds") or 0)
    except ValueError:
        raise errors.bad_request("invalid timeoutSeconds: %s" % q.get("timeoutSeconds"))
    if timeout <= 0:
        timeout = random.uniform(1800, 3600)   # the apiserver's default
    hub, store = app.hub, app.store
    prefix = rt.prefix(ns)
    epoch = hub.epoch
    initial = None
    expired = None
    synthetic = send_initial or (sie is None and rv_text in ("", "0"))
    if rv_text not in ("", "0"):
        n = lists.parse_rv(rv_text)
        if n > hub.rev:
            current = _current(store)
            if n > current:
                raise errors.too_large_rv(n, current)
    if synthetic:
        res = lists.list_objects(store, rt, ns, {}, pred)   # a consistent snapshot, now
        start = res.rv
        initial = res.items
    elif rv_text in ("", "0"):
        start = _current(store)     # sendInitialEvents=false: from now on
    else:
        start = lists.parse_rv(rv_text)
        try:
            hub.check_start(start)
        except Expired as e:
            expired = e
    enc = _Encoder(rt, fmt, include)
    app.faults.watch_started()
    try:
        req.start_chunked()
        if expired is not None:
            req.write_chunk(_expired_line(expired))
            req.end_chunked()
            return
        # Several events may share a chunk (clients must frame by newline)
        buf = []
        for obj in initial or []:
            buf.append(_line("ADDED", enc.obj(obj)))
            if len(buf) >= 64:
                req.write_chunk(b"".join(buf))
                buf = []
        if send_initial:
            buf.append(_line("BOOKMARK", enc.bookmark(start, initial_end=True)))
        if buf:
            req.write_chunk(b"".join(buf))
        _stream(app, req, rt, prefix, start, pred, enc, timeout, bookmarks, epoch)
    except (ConnectionError, OSError):
        req.close_connection = True
    except Exception as e:   # headers are out: a Status cannot be sent any more
        app.log("watch %s failed: %r" % (req.path, e))
        req.close_connection = True
    finally:
        app.faults.watch_ended()


def _current(store):
    try:
        return store.etcd.current_revision()
    except EtcdError as e:
        raise errors.unavailable("storage is unavailable: %s" % e)


def _stream(app, req, rt, prefix, cursor, pred, enc, timeout, bookmarks, epoch):
    hub = app.hub
    now = time.monotonic()
    deadline = now + timeout
    margin = min(2.0, timeout / 4.0)
    next_bookmark = now + min(BOOKMARK_INTERVAL, max(timeout - margin, 0.0))
    final_bookmark_sent = False
    while True:
        now = time.monotonic()
        if now >= deadline:
            break
        wake = min(deadline, now + 1.0)
        if bookmarks:
            wake = min(wake, next_bookmark)
        try:
            evs, new_cursor, dropped = hub.next_events(prefix, cursor, max(wake - now, 0.0), epoch)
        except Expired as e:
            req.write_chunk(_expired_line(e))
            break
        if dropped:
            if app.abort_drops:
                req.close_connection = True
                try:
                    req.connection.shutdown(2)
                except OSError:
                    pass
                return
            break
        lines = []
        for ev in evs:
            out = _translate(ev, pred)
            if out is not None:
                lines.append(_line(out[0], enc.obj(out[1])))
        if lines:
            req.write_chunk(b"".join(lines))
        cursor = max(cursor, new_cursor)
        now = time.monotonic()
        if bookmarks and (now >= next_bookmark or
                          (not final_bookmark_sent and now >= deadline - margin)):
            req.write_chunk(_line("BOOKMARK", enc.bookmark(cursor)))
            if now >= deadline - margin:
                final_bookmark_sent = True
            next_bookmark = now + BOOKMARK_INTERVAL
            if not final_bookmark_sent:
                next_bookmark = min(next_bookmark, deadline - margin)
        if not evs and req.client_gone():
            return
    req.end_chunked()


def _translate(ev, pred):
    """(type, object) this watcher sees for a cache event, or None."""
    if pred.everything:
        return ev.type, ev.obj
    if ev.type == "ADDED":
        return ("ADDED", ev.obj) if pred.matches(ev.obj) else None
    if ev.type == "DELETED":
        return ("DELETED", ev.obj) if pred.matches(ev.obj) else None
    now_m = pred.matches(ev.obj)
    was_m = ev.prev is not None and pred.matches(ev.prev)
    if now_m and was_m:
        return "MODIFIED", ev.obj
    if now_m:
        return "ADDED", ev.obj
    if was_m:
        # stopped matching: the previous content with the new resourceVersion
        prev = dict(ev.prev)
        prev["metadata"] = dict(ev.prev.get("metadata") or {}, resourceVersion=str(ev.rev))
        return "DELETED", prev
    return None
