"""The watch cache: one etcd watch over /registry/ feeding every client watch.

Why a shared log instead of one etcd watch per client: bookmarks need a revision
that is known to be complete ("every event up to R has been delivered"), which a
single ordered stream provides (etcd progress notifications advance it while idle),
and selector transitions need the previous object, which prev_kv gives once.
This is how kube-apiserver's cacher works too.

The log holds decoded events since `start` (the first revision it can replay).
A watch from resourceVersion N needs N+1 >= start, else it gets 410 Expired, as
from a kube-apiserver whose watch cache no longer reaches back that far.  Compaction
(/sim/compact, --compact-keep) and the size cap raise `start`.
"""

import bisect
import json
import threading
import time

from .etcd import EtcdCompacted, prefix_end, unb64

PREFIX = "/registry/"


class Event:
    __slots__ = ("rev", "type", "key", "obj", "prev", "size")

    def __init__(self, rev, etype, key, obj, prev, size):
        self.rev = rev          # etcd revision of the change
        self.type = etype       # ADDED | MODIFIED | DELETED
        self.key = key
        self.obj = obj          # object with resourceVersion = rev (DELETED: last state)
        self.prev = prev        # previous object (for selector transitions) or None
        self.size = size


def _decode(value, rv):
    try:
        obj = json.loads(value)
    except (ValueError, UnicodeDecodeError):
        return None     # not ours (e.g. protobuf written by a real kube-apiserver)
    if not isinstance(obj, dict):
        return None
    md = obj.get("metadata")
    if not isinstance(md, dict):
        md = obj["metadata"] = {}
    md["resourceVersion"] = str(rv)
    return obj


class _Restart(Exception):
    def __init__(self, next_rev):
        super().__init__(next_rev)
        self.next_rev = next_rev


class Expired(Exception):
    def __init__(self, requested, oldest):
        super().__init__("too old resource version: %d (%d)" % (requested, oldest))
        self.requested = requested
        self.oldest = oldest


class WatchHub:
    MAX_EVENTS = 10000
    MAX_BYTES = 24 << 20      # raw JSON; decoded objects take several times that

    def __init__(self, etcd, log=None):
        self.etcd = etcd
        self._log = log or (lambda *a: None)
        self._cv = threading.Condition()
        self._revs = []
        self._events = []
        self._bytes = 0
        self.start = 1          # oldest revision the log can replay from
        self.rev = 0            # every event <= rev has been received
        self.epoch = 0          # bumped by drop_all(): open client watches end
        self._stream = None
        self._stopping = False
        self._thread = None
        self.ready = threading.Event()

    # -- feeding ----------------------------------------------------------------
    def run_in_background(self, start_rev=1):
        """Start following etcd from start_rev.  After a restart on old data the
        simulator starts a bounded window back, not at revision 1, so it does not
        decode the whole history (a restarted kube-apiserver's cache starts "now")."""
        self.start = max(1, start_rev)
        self._thread = threading.Thread(target=self._run, args=(self.start,), name="watchhub",
                                        daemon=True)
        self._thread.start()

    def stop(self):
        self._stopping = True
        s = self._stream
        if s:
            s.close()

    def reconnect(self):
        """Re-open the etcd stream (e.g. after the endpoint list changed)."""
        s = self._stream
        if s:
            s.close()

    def _run(self, next_rev):
        backoff = 0.1
        while not self._stopping:
            try:
                self._stream = self.etcd.watch(PREFIX, prefix_end(PREFIX), next_rev)
                backoff = 0.1
                for res in self._stream:
                    if res.get("canceled") or res.get("compact_revision"):
                        crev = int(res.get("compact_revision", 0))
                        if crev:
                            self._log("watch cache: history before %d compacted, restarting" % crev)
                            with self._cv:
                                self._trim_locked(crev)
                            next_rev = max(next_rev, crev)
                        break
                    next_rev = self._apply(res, next_rev)
            except EtcdCompacted:
                pass
            except _Restart as r:
                next_rev = r.next_rev
            except Exception as e:  # the cache must survive anything the stream throws
                if not self._stopping:
                    self._log("watch cache: etcd watch failed: %r; retrying" % e)
                    time.sleep(backoff)
                    backoff = min(backoff * 2, 2.0)
            finally:
                if self._stream:
                    self._stream._finish()
                self._stream = None

    def _apply(self, res, next_rev):
        header_rev = int((res.get("header") or {}).get("revision", 0))
        if res.get("created") and header_rev and header_rev < self.rev:
            # The store went back in time: etcd was restored from a snapshot (3.4 has no
            # --bump-revision).  Forget the log and end every watch; clients re-watch,
            # get "too large resource version" and relist, as after a real restore.
            self._log("watch cache: etcd is at revision %d, behind %d (restored?); resetting"
                      % (header_rev, self.rev))
            with self._cv:
                self._events.clear()
                self._revs.clear()
                self._bytes = 0
                self.rev = header_rev
                self.start = header_rev + 1
                self.epoch += 1
                self._cv.notify_all()
            raise _Restart(header_rev + 1)
        new = []
        for ev in res.get("events") or []:
            kv = ev.get("kv") or {}
            rev = int(kv.get("mod_revision", 0))
            key = unb64(kv.get("key", "")).decode()
            prev_kv = ev.get("prev_kv")
            prev = None
            size = 0
            if prev_kv:
                pval = unb64(prev_kv.get("value", ""))
                prev = _decode(pval, int(prev_kv.get("mod_revision", 0)))
                size += len(pval)
            if ev.get("type") == "DELETE":
                if prev is None:
                    continue  # cannot describe a deletion without its last state
                obj = dict(prev)
                obj["metadata"] = dict(prev["metadata"], resourceVersion=str(rev))
                etype = "DELETED"
            else:
                val = unb64(kv.get("value", ""))
                size += len(val)
                obj = _decode(val, rev)
                if obj is None:
                    continue
                created = int(kv.get("create_revision", 0)) == rev
                etype = "ADDED" if created else "MODIFIED"
            new.append(Event(rev, etype, key, obj, prev, size))
            next_rev = max(next_rev, rev + 1)
        with self._cv:
            for e in new:
                self._revs.append(e.rev)
                self._events.append(e)
                self._bytes += e.size
            if new:
                self.rev = max(self.rev, new[-1].rev)
            elif res.get("events"):
                self.rev = max(self.rev, next_rev - 1)
            # The header revision of an event batch is the store's current revision,
            # not a completeness mark (catch-up batches are historical).  Only a
            # progress notification, or a "created" reply when we asked to start past
            # the store's revision, says "everything up to here has been sent".
            elif header_rev and (not res.get("created") or next_rev > header_rev):
                self.rev = max(self.rev, header_rev)
            if len(self._events) > self.MAX_EVENTS or self._bytes > self.MAX_BYTES:
                self._trim_locked(self._events[len(self._events) // 4].rev)
            self._cv.notify_all()
        if res.get("created"):
            self.ready.set()
        return next_rev

    def _trim_locked(self, new_start):
        if new_start <= self.start:
            return
        i = bisect.bisect_left(self._revs, new_start)
        for e in self._events[:i]:
            self._bytes -= e.size
        del self._events[:i]
        del self._revs[:i]
        self.start = new_start

    def compacted(self, rev):
        """etcd was compacted at rev: replay from older revisions is impossible."""
        with self._cv:
            self._trim_locked(rev)
            self._cv.notify_all()

    def drop_all(self):
        with self._cv:
            self.epoch += 1
            self._cv.notify_all()

    # -- consuming ----------------------------------------------------------------
    def wait_rev(self, rev, timeout):
        """Wait until the log has caught up with rev; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while self.rev < rev:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(left)
        return True

    def check_start(self, after_rev):
        with self._cv:
            if after_rev + 1 < self.start:
                raise Expired(after_rev, self.start - 1)

    def next_events(self, prefix, after_rev, timeout, epoch):
        """Events with rev > after_rev under prefix, waiting up to timeout.

        Returns (events, cursor, dropped): cursor is the revision up to which the
        caller has now seen everything (use it for bookmarks and the next call)."""
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                if self.epoch != epoch:
                    return [], after_rev, True
                if after_rev + 1 < self.start:
                    raise Expired(after_rev, self.start - 1)
                if self.rev > after_rev:
                    i = bisect.bisect_right(self._revs, after_rev)
                    j = bisect.bisect_right(self._revs, self.rev)
                    evs = [e for e in self._events[i:j] if e.key.startswith(prefix)]
                    return evs, self.rev, False
                left = deadline - time.monotonic()
                if left <= 0:
                    return [], after_rev, False
                self._cv.wait(left)
