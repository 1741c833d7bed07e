"""The status manager: pushes pod statuses to the API server.

Static pods are reported through their mirror pods (`<name>-<node>`, annotation
`kubernetes.io/config.mirror` = the static pod's hash): created when missing, deleted and
recreated when they belong to another version of the manifest, deleted when the manifest
goes away. API pods get PUT /status. Writes carry the resourceVersion just read and are
retried on 409; failures are retried every second. One thread; only the newest status
per pod is kept.
"""

import threading
import time

from .client import ApiError, quote
from .log import log

MIRROR = "kubernetes.io/config.mirror"


class NotSynced(Exception):
    """The pod informer (sources.ApiPodSource) has not listed yet."""


class NotYet(Exception):
    """Retry later without complaining (the Node is not registered yet)."""


class StatusManager(threading.Thread):
    def __init__(self, node):
        super().__init__(name="status", daemon=True)
        self.node = node
        self.cond = threading.Condition()
        self.pending = {}     # uid -> ("status", worker, status) | ("delete-mirror", ns, name, hash)
        self.stopping = False
        self.idle = threading.Event()

    def set(self, worker, status):
        with self.cond:
            self.pending[worker.uid] = ("status", worker, status)
            self.idle.clear()
            self.cond.notify()

    def delete_mirror(self, ns, name, uid):
        with self.cond:
            self.pending[uid] = ("delete-mirror", ns, name, uid)
            self.idle.clear()
            self.cond.notify()

    def delete_pod(self, ns, name, uid):
        """An API pod whose deletion was asked for and whose containers have all stopped: the
        kubelet's last word on it is a DELETE with grace period 0 (uid precondition), which is
        what removes a pod bound to a node from kube-apiserver (until then it only carries a
        deletionTimestamp)."""
        with self.cond:
            self.pending[uid] = ("delete-pod", ns, name, uid)
            self.idle.clear()
            self.cond.notify()

    def resync(self, uid):
        """Re-post the last status (e.g. the mirror pod was deleted by someone)."""
        w = self.node.workers.get(uid)
        if w is not None and w.last_status is not None:
            self.set(w, w.last_status)

    def flush(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.idle.wait(0.1):
                return True
        return False

    def run(self):
        failed = {}   # uid -> monotonic time before which it is not retried
        fails = {}    # uid -> consecutive failures
        while True:
            with self.cond:
                while True:
                    if not self.pending:
                        self.idle.set()
                        self.cond.wait()
                        continue
                    now = time.monotonic()
                    ready = [u for u in self.pending if failed.get(u, 0) <= now]
                    if ready:
                        uid = ready[0]
                        item = self.pending.pop(uid)
                        break
                    self.cond.wait(min(failed.get(u, 0) for u in self.pending) - now)
            try:
                if item[0] == "status":
                    self._sync_status(item[1], item[2])
                elif item[0] == "delete-pod":
                    self._delete_pod(*item[1:])
                else:
                    self._delete_mirror(*item[1:])
                failed.pop(uid, None)
            except (ApiError, OSError, NotYet) as e:
                n = fails[uid] = fails.get(uid, 0) + 1
                if isinstance(e, NotYet):
                    log.debug("status of pod %s: %s", uid, e)
                elif n == 1 or n % 30 == 0:
                    log.warning("status of pod %s: %s (failure %d, retrying every second)",
                                uid, e, n)
                with self.cond:
                    self.pending.setdefault(uid, item)
                failed[uid] = time.monotonic() + (0.2 if isinstance(e, NotYet) else 1.0)
                continue
            except Exception:  # noqa: BLE001
                log.exception("status of pod %s", uid)
            fails.pop(uid, None)

    # -- API pods -----------------------------------------------------------------------
    def _sync_status(self, w, status):
        if w.source == "file":
            return self._sync_mirror(w, status)
        path = "/api/v1/namespaces/%s/pods/%s" % (quote(w.ns), quote(w.pod_name))
        for _ in range(10):
            try:
                cur = self.node.client.get(path)
            except ApiError as e:
                if e.code == 404 or (e.code == 403 and not self._known(w.uid)):
                    return
                raise
            if (cur.get("metadata") or {}).get("uid") != w.uid:
                return
            cur["status"] = status
            try:
                self.node.client.put(path + "/status", cur)
                log.debug("pod %s: status %s posted", w.key, status.get("phase"))
                return
            except ApiError as e:
                if e.code == 404:
                    return
                if e.code != 409:
                    raise
        raise ApiError(409, "status update kept conflicting")

    def _known(self, uid):
        """Whether the pod is still among this node's (its list and watch). The Node authorizer
        answers 403 for a pod no longer bound to this node, a deleted one included, but also for
        one bound to it that a kube-apiserver just started has not seen yet: only the first is
        gone; the second is tried again."""
        return uid in self.node.api.known

    def _delete_pod(self, ns, name, uid):
        path = "/api/v1/namespaces/%s/pods/%s" % (quote(ns), quote(name))
        try:
            self.node.client.delete(path, {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
                                           "preconditions": {"uid": uid}})
            log.info("pod %s/%s: containers stopped, deleted", ns, name)
        except ApiError as e:
            if e.code in (404, 409) or (e.code == 403 and not self._known(uid)):
                return  # gone already, or another pod of that name now
            raise

    # -- mirror pods ----------------------------------------------------------------------
    def _mirror_body(self, w):
        src = w.pod
        md = src.get("metadata") or {}
        ann = dict(md.get("annotations") or {})
        ann.update({"kubernetes.io/config.hash": w.uid, MIRROR: w.uid,
                    "kubernetes.io/config.seen": w.seen, "kubernetes.io/config.source": "file"})
        meta = {"name": w.pod_name, "namespace": w.ns, "annotations": ann}
        if md.get("labels"):
            meta["labels"] = dict(md["labels"])
        meta["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node",
                                    "name": self.node.name, "uid": self.node.node_uid,
                                    "controller": True}]
        spec = dict(src.get("spec") or {})
        spec["nodeName"] = self.node.name
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}

    def _sync_mirror(self, w, status):
        if not self.node.static_active(w.uid):
            return
        if not self.node.node_uid:
            # as the kubelet: mirror pods (owned by the Node) only once the Node exists
            raise NotYet("node not registered yet")
        path = "/api/v1/namespaces/%s/pods/%s" % (quote(w.ns), quote(w.pod_name))
        client = self.node.client
        for attempt in range(10):
            # First what the pod informer has (the kubelet asks its cache: the Node authorizer
            # refuses a GET of a pod not bound to this node, one that does not exist included),
            # then, after a conflict, the server's copy.
            if attempt == 0:
                try:
                    cur = self.node.api.mirror(w.ns, w.pod_name)
                except NotSynced as e:
                    raise NotYet(str(e))
            else:
                try:
                    cur = client.get(path)
                except ApiError as e:
                    # 403: no pod of that name bound to this node (the Node authorizer); a create
                    # then says whether another pod holds the name (409)
                    if e.code not in (403, 404):
                        raise
                    cur = None
            if cur is not None:
                ann = (cur.get("metadata") or {}).get("annotations") or {}
                if MIRROR not in ann:
                    log.warning("pod %s exists and is not a mirror pod: not reporting static "
                                "pod status", w.key)
                    return
                if ann[MIRROR] != w.uid or cur["metadata"].get("deletionTimestamp"):
                    # as the kubelet: a mirror pod of another version, or one being deleted (by
                    # someone else: kube-apiserver deletes a pod bound to a node gracefully), is
                    # deleted for good and created again
                    log.info("mirror pod %s is %s: recreating it", w.key,
                             "being deleted" if ann[MIRROR] == w.uid else
                             "for another version of the manifest")
                    try:
                        client.delete(path, {"kind": "DeleteOptions", "apiVersion": "v1",
                                             "gracePeriodSeconds": 0, "preconditions":
                                             {"uid": cur["metadata"]["uid"]}})
                    except ApiError as e:
                        if e.code not in (404, 409):
                            raise
                    cur = None  # not asked again: the Node authorizer refuses a GET of no pod
            if cur is None:
                try:
                    cur = client.post("/api/v1/namespaces/%s/pods" % quote(w.ns),
                                      self._mirror_body(w))
                    self.node.api.seen_mirror(cur)
                    log.info("mirror pod %s created", w.key)
                except ApiError as e:
                    if e.code == 409:
                        continue
                    raise
            cur["status"] = status
            try:
                self.node.api.seen_mirror(client.put(path + "/status", cur))
                log.debug("mirror pod %s: status %s posted", w.key, status.get("phase"))
                return
            except ApiError as e:
                if e.code not in (404, 409):
                    raise
        raise ApiError(409, "mirror pod status update kept conflicting")

    def _delete_mirror(self, ns, name, uid):
        path = "/api/v1/namespaces/%s/pods/%s" % (quote(ns), quote(name))
        try:
            cur = self.node.api.mirror(ns, name)
            if cur is None:
                return
        except NotSynced:
            try:
                cur = self.node.client.get(path)
            except ApiError as e:
                if e.code in (403, 404):  # 403: no such pod bound to this node (Node authorizer)
                    return
                raise
        ann = (cur.get("metadata") or {}).get("annotations") or {}
        if ann.get(MIRROR) != uid and uid is not None:
            return
        try:
            self.node.client.delete(path, {"kind": "DeleteOptions", "apiVersion": "v1",
                                           "gracePeriodSeconds": 0, "preconditions":
                                           {"uid": cur["metadata"]["uid"]}})
            log.info("mirror pod %s/%s deleted", ns, name)
        except ApiError as e:
            if e.code not in (404, 409):
                raise
