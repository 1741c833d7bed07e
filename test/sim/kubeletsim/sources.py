"""Where pods come from: the static pod manifests directory and the API server.

ManifestSource polls DIR/etc/kubernetes/manifests (like the kubelet's file source): every
regular, non-hidden file is one Pod in YAML or JSON. A pod's identity is the hash of its
parsed, defaulted content and the node name (the kubelet's static pod UID): a changed
file is a new pod replacing the old one, a removed file stops its pod. A file that fails
to parse keeps the version read before (the kubelet would drop it; installers write
atomically, so only half-written files hit this).

ApiPodSource lists and watches pods with fieldSelector spec.nodeName=<node> in all
namespaces (relisting after 410 or errors) and hands new ones to the kubelet; deleted
pods, and pods marked for deletion, are stopped. Mirror pods are skipped, except that a
deleted mirror pod is recreated.
"""

import hashlib
import json
import os
import threading
import time
import urllib.parse

from kubeletsim import yaml_lite

from . import podspec
from .client import ApiError
from .log import log
from .status import MIRROR, NotSynced


def parse_manifest(path):
    with open(path, "rb") as f:
        data = f.read()
    text = data.decode()
    if text.lstrip().startswith("{"):
        obj = json.loads(text)
    else:
        obj = yaml_lite.load(text)
    if not isinstance(obj, dict) or obj.get("kind") not in (None, "Pod"):
        raise ValueError("not a Pod")
    if not (obj.get("metadata") or {}).get("name"):
        raise ValueError("metadata.name is required")
    if not (obj.get("spec") or {}).get("containers"):
        raise ValueError("spec.containers is required")
    return obj


def static_pod(obj, node):
    """The kubelet's view of a manifest: defaulted, named <name>-<node>, with its UID."""
    pod = json.loads(json.dumps(obj))
    md = pod.setdefault("metadata", {})
    md["namespace"] = md.get("namespace") or "default"
    podspec.apply_defaults(pod)
    uid = hashlib.md5(("%s\n%s\nfile" % (podspec.canonical(pod), node.name)).encode()).hexdigest()
    md["name"] = "%s-%s" % (md["name"], node.name)
    md["uid"] = uid
    pod["spec"]["nodeName"] = node.name
    return pod, uid


class ManifestSource(threading.Thread):
    def __init__(self, node, period):
        super().__init__(name="manifests", daemon=True)
        self.node = node
        self.dir = node.host_path("/etc/kubernetes/manifests")
        self.period = period
        self.files = {}    # filename -> (stat key, pod, uid)
        self.active = {}   # uid -> pod
        self.stop_ev = threading.Event()

    def scan(self):
        try:
            names = sorted(os.listdir(self.dir))
        except FileNotFoundError:
            names = []
        seen = set()
        for name in names:
            if name.startswith("."):
                continue
            path = os.path.join(self.dir, name)
            try:
                st = os.stat(path)
            except OSError:
                continue
            if not os.path.isfile(path):
                continue
            seen.add(name)
            skey = (st.st_mtime_ns, st.st_size, st.st_ino)
            old = self.files.get(name)
            if old and old[0] == skey:
                continue
            try:
                pod, uid = static_pod(parse_manifest(path), self.node)
            except (OSError, ValueError, UnicodeDecodeError) as e:
                if not old or old[0] != ("bad",) + skey:
                    log.warning("static pod manifest %s: %s%s", path, e,
                                "; keeping the previous version" if old and old[2] else "")
                self.files[name] = (("bad",) + skey, old[1] if old else None,
                                    old[2] if old else None)
                continue
            self.files[name] = (skey, pod, uid)
        for name in list(self.files):
            if name not in seen:
                del self.files[name]
        # the wanted set: first file wins for a full name, as the kubelet ignores duplicates
        wanted = {}
        names_taken = {}
        for name in sorted(self.files):
            _, pod, uid = self.files[name]
            if pod is None:
                continue
            md = pod["metadata"]
            full = "%s/%s" % (md["namespace"], md["name"])
            if full in names_taken:
                if names_taken[full] != uid:
                    log.warning("static pod %s in %s duplicates %s: ignored", full, name, full)
                continue
            names_taken[full] = uid
            wanted[uid] = pod
        for uid in list(self.active):
            if uid not in wanted:
                pod = self.active.pop(uid)
                self.node.remove_static(pod, uid)
        for uid, pod in wanted.items():
            if uid not in self.active:
                self.active[uid] = pod
                self.node.add_static(pod, uid)

    def run(self):
        while not self.stop_ev.wait(self.period):
            try:
                self.scan()
            except Exception:  # noqa: BLE001
                log.exception("scanning %s", self.dir)

    def stop(self):
        self.stop_ev.set()


class ApiPodSource(threading.Thread):
    def __init__(self, node):
        super().__init__(name="api-pods", daemon=True)
        self.node = node
        self.stop_ev = threading.Event()
        self.known = {}  # uid -> pod (non-mirror pods on this node)
        # ns/name -> mirror pod on this node, as the last list and watch events had it: what the
        # kubelet knows of its mirror pods (the Node authorizer refuses a GET of a pod not bound
        # to this node, one that does not exist included).
        self.mirrors = {}
        self.mirrors_lock = threading.Lock()
        self.synced = threading.Event()

    def seen_mirror(self, pod):
        """A mirror pod as the server answered a write of ours: newer than the watch's copy until
        the watch brings the write."""
        md = pod.get("metadata") or {}
        key = "%s/%s" % (md.get("namespace"), md.get("name"))
        with self.mirrors_lock:
            old = self.mirrors.get(key)
            if old is None or int(old["metadata"].get("resourceVersion") or 0) < \
                    int(md.get("resourceVersion") or 0):
                self.mirrors[key] = pod

    def mirror(self, ns, name):
        """The mirror pod ns/name as last seen, None when there is none; NotSynced before the
        first list."""
        if not self.synced.is_set():
            raise NotSynced("the pods of node %s are not listed yet" % self.node.name)
        with self.mirrors_lock:
            return self.mirrors.get("%s/%s" % (ns, name))

    def stop(self):
        self.stop_ev.set()

    def _path(self, extra):
        q = {"fieldSelector": "spec.nodeName=" + self.node.name}
        q.update(extra)
        return "/api/v1/pods?" + urllib.parse.urlencode(q)

    def run(self):
        delay = 0.5
        while not self.stop_ev.is_set():
            try:
                lst = self.node.client.get(self._path({}))
                rv = lst["metadata"]["resourceVersion"]
                items = lst.get("items") or []
                current = set()
                with self.mirrors_lock:
                    self.mirrors = {"%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"]): p
                                    for p in items if MIRROR in (p["metadata"].get("annotations") or {})}
                for p in items:
                    uid = p["metadata"]["uid"]
                    current.add(uid)
                    self._handle("ADDED", p)
                for uid in list(self.known):
                    if uid not in current:
                        self._handle("DELETED", self.known[uid])
                self.node.orphan_mirrors(items)
                self.synced.set()
                delay = 0.5
                while not self.stop_ev.is_set():
                    rv, gone = self._watch(rv)
                    if gone:
                        break
            except (ApiError, OSError, ValueError, KeyError) as e:
                if self.stop_ev.is_set():
                    return
                log.warning("pods on node %s: %s; relisting in %.1fs", self.node.name, e, delay)
                self.stop_ev.wait(delay)
                delay = min(delay * 2, 10)

    def _watch(self, rv):
        path = self._path({"watch": "true", "resourceVersion": rv,
                           "allowWatchBookmarks": "true", "timeoutSeconds": "300"})
        t0 = time.monotonic()
        n = 0
        for ev in self.node.client.watch(path, read_timeout=60):
            if self.stop_ev.is_set():
                return rv, True
            n += 1
            typ, obj = ev.get("type"), ev.get("object") or {}
            if typ == "ERROR":
                log.info("pod watch: %s; relisting", obj.get("message"))
                return rv, True
            rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
            if typ == "BOOKMARK":
                continue
            self._handle(typ, obj)
        if n == 0 and time.monotonic() - t0 < 1:
            raise OSError("watch ended immediately")
        return rv, False

    def _handle(self, typ, pod):
        md = pod.get("metadata") or {}
        uid = md.get("uid")
        if MIRROR in (md.get("annotations") or {}):
            key = "%s/%s" % (md.get("namespace"), md.get("name"))
            with self.mirrors_lock:
                if typ == "DELETED":
                    if (self.mirrors.get(key) or {}).get("metadata", {}).get("uid") == uid:
                        del self.mirrors[key]
                else:
                    self.mirrors[key] = pod
            if typ == "DELETED" or md.get("deletionTimestamp"):
                self.node.mirror_deleted(md.get("annotations")[MIRROR])
            return
        if typ == "DELETED":
            self.known.pop(uid, None)
            self.node.remove_api_pod(uid)
            return
        self.known[uid] = pod
        if md.get("deletionTimestamp"):
            self.node.remove_api_pod(uid, grace=md.get("deletionGracePeriodSeconds"), pod=pod)
            return
        self.node.add_api_pod(pod)
