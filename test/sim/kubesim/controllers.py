"""The few controllers a client can tell are missing, in one background thread.

* namespace controller: a deleted namespace (phase Terminating) has its content
  deleted, then the "kubernetes" spec finalizer removed, after which it disappears;
* a minimal garbage collector for the two finalizers the apiserver itself adds:
  foregroundDeletion (dependents are deleted first) and orphan (dependents lose
  their ownerReference).  Background deletion of dependents is NOT modelled;
* CRD cleanup: deleting a CRD deletes its custom resources and uninstalls the type;
* disruption controller (kube-controller-manager's): a PodDisruptionBudget's status
  (expectedPods, currentHealthy = matching pods Ready and not terminating,
  desiredHealthy from an integer or percent minAvailable, disruptionsAllowed,
  observedGeneration, the DisruptionAllowed condition; minAvailable or
  maxUnavailable), recomputed whenever a pod or budget of its namespace changes;
  disruptedPods keeps what the eviction handler added until the pod is gone, and a
  pod in it does not count as healthy (so a recount from a pod list read before the
  eviction cannot hand the spent disruption back);
* the service account controller: ServiceAccount "default" in every new namespace (what a
  pod without serviceAccountName runs as; the kubelet asks a token for it);
* the scheduler, the persistent volume binder, the Job and CronJob controllers (workloads.py);
* optional periodic compaction (--compact-keep N keeps the last N revisions).
Work items are retried every second until done, so objects with other finalizers
simply keep their namespace Terminating, as in a real cluster.
"""

import copy
import heapq
import itertools
import threading
import time

from . import errors
from .etcd import EtcdError, prefix_end
from .objects import meta
from .selectors import selector_matches
from .store import WriteOpts
from .workloads import Workloads

GC_FINALIZERS = ("foregroundDeletion", "orphan")


class Controllers:
    def __init__(self, store, registry, hub, log, compact_keep=0, compact_interval=5.0):
        self.store = store
        self.registry = registry
        self.hub = hub
        self.log = log
        self.compact_keep = compact_keep
        self.compact_interval = compact_interval
        self.last_compact = 0
        self._heap = []
        self._seq = itertools.count()
        self._pending = {}  # key -> when it is due
        self._cv = threading.Condition()
        self._stop = False
        self.workloads = Workloads(store, registry, log)

    # -- hooks --------------------------------------------------------------------
    def after_write(self, rt, event, obj):
        md = meta(obj)
        if rt.group == "apiextensions.k8s.io" and rt.plural == "customresourcedefinitions":
            if event == "delete":
                # inline, so that a CRD re-created right away is not uninstalled later
                self._crd_cleanup(md.get("name"))
            else:
                self.registry.install_crd(obj)
        if rt.plural == "namespaces" and not rt.group and md.get("deletionTimestamp") and \
                event != "delete":
            self.enqueue(("ns", md.get("name")))
        if rt.plural == "namespaces" and not rt.group and event == "create":
            self.enqueue(("default-sa", md.get("name")))
        if (rt.plural == "pods" and not rt.group) or \
                (rt.plural == "poddisruptionbudgets" and rt.group == "policy" and event != "delete"):
            self.enqueue(("pdb", md.get("namespace")), delay=0.05)
        if rt.plural == "pods" and not rt.group and event != "delete" and \
                not (obj.get("spec") or {}).get("nodeName"):
            self.enqueue(("sched", md.get("namespace"), md.get("name")))
        if rt.plural == "pods" and not rt.group:
            for ref in md.get("ownerReferences") or []:
                if ref.get("kind") == "Job" and ref.get("controller"):
                    self.enqueue(("job", md.get("namespace"), ref.get("name")), delay=0.05)
        if rt.plural == "jobs" and rt.group == "batch":
            self.enqueue(("job", md.get("namespace"), md.get("name")))
            for ref in md.get("ownerReferences") or []:
                if ref.get("kind") == "CronJob" and ref.get("controller"):
                    self.enqueue(("cronjob", md.get("namespace"), ref.get("name")), delay=0.05)
        if rt.plural == "cronjobs" and rt.group == "batch":
            self.enqueue(("cronjob", md.get("namespace"), md.get("name")))
        if not rt.group and rt.plural in ("persistentvolumeclaims", "persistentvolumes") and event != "delete":
            self.enqueue(("pvbind",), delay=0.05)
        if event in ("terminating", "update") and md.get("deletionTimestamp") and \
                any(f in GC_FINALIZERS for f in md.get("finalizers") or []):
            self.enqueue(("gc", rt.group, rt.version, rt.plural, md.get("namespace"), md.get("name")))

    def enqueue(self, key, payload=None, delay=0.0):
        """Process `key` after `delay` s; a key already waiting keeps the earlier time."""
        with self._cv:
            due = time.monotonic() + delay
            if key in self._pending and self._pending[key] <= due:
                return
            self._pending[key] = due   # an entry for a later time is skipped when it comes up
            heapq.heappush(self._heap, (due, next(self._seq), key, payload))
            self._cv.notify()

    # -- loop -----------------------------------------------------------------------
    def start(self):
        threading.Thread(target=self._run, name="controllers", daemon=True).start()
        if self.compact_keep > 0:
            threading.Thread(target=self._compactor, name="compactor", daemon=True).start()
        self._resume()

    def stop(self):
        with self._cv:
            self._stop = True
            self._cv.notify()

    def _resume(self):
        """After a restart, pick up namespaces that were being deleted."""
        nst = self.registry.lookup("", "v1", "namespaces")
        try:
            _, kvs, _, _ = self.store.etcd.range(nst.prefix(), prefix_end(nst.prefix()))
        except EtcdError:
            return
        for kv in kvs:
            obj = self.store._decode(nst, kv)
            if meta(obj).get("deletionTimestamp"):
                self.enqueue(("ns", meta(obj).get("name")))

    def _run(self):
        while True:
            with self._cv:
                while not self._stop and (not self._heap or self._heap[0][0] > time.monotonic()):
                    wait = self._heap[0][0] - time.monotonic() if self._heap else None
                    self._cv.wait(wait)
                if self._stop:
                    return
                due, _, key, payload = heapq.heappop(self._heap)
                if self._pending.get(key) != due:
                    continue   # superseded by an earlier entry for the same key
                del self._pending[key]
            try:
                done = self._process(key, payload)
            except (errors.ApiError, EtcdError, OSError) as e:
                self.log("controller %s: %s; retrying" % (key[0], e))
                done = False
            except Exception as e:
                self.log("controller %s failed: %r" % (key[0], e))
                done = False
            if not done:
                self.enqueue(key, payload, delay=1.0)

    def _process(self, key, payload):
        if key[0] == "ns":
            return self._finalize_namespace(key[1])
        if key[0] == "pdb":
            return self._disruption(key[1])
        if key[0] == "default-sa":
            return self._default_sa(key[1])
        if key[0] in ("sched", "job", "pvbind", "cronjob"):
            fn = {"sched": self.workloads.schedule, "job": self.workloads.sync_job,
                  "cronjob": self.workloads.sync_cronjob,
                  "pvbind": lambda: self.workloads.bind_claims()}[key[0]]
            again = fn(*key[1:])
            if again is not None:
                self.enqueue(key, payload, delay=again)
            return True
        if key[0] == "gc":
            rt = self.registry.lookup(key[1], key[2], key[3])
            return rt is None or self._gc(rt, key[4], key[5])
        return True

    # -- service account controller ---------------------------------------------------
    def _default_sa(self, ns):
        sat = self.registry.lookup("", "v1", "serviceaccounts")
        try:
            self.store.create(sat, ns, {"apiVersion": "v1", "kind": "ServiceAccount",
                                        "metadata": {"name": "default", "namespace": ns}},
                              WriteOpts("kube-controller-manager"))
        except errors.ApiError as e:
            # there already, or the namespace is going away (403 NamespaceTerminating) or gone
            if e.code not in (403, 404, 409):
                raise
        return True

    # -- disruption controller --------------------------------------------------------
    def _disruption(self, ns):
        pdbt = self.registry.lookup("policy", "v1", "poddisruptionbudgets")
        podt = self.registry.lookup("", "v1", "pods")
        if pdbt is None or podt is None:
            return True
        prefix = pdbt.prefix(ns)
        _, kvs, _, _ = self.store.etcd.range(prefix, prefix_end(prefix))
        if not kvs:
            return True
        pprefix = podt.prefix(ns)
        _, pkvs, _, _ = self.store.etcd.range(pprefix, prefix_end(pprefix))
        pods = [self.store._decode(podt, kv) for kv in pkvs]
        for kv in kvs:
            pdb = self.store._decode(pdbt, kv)
            spec = pdb.get("spec") or {}
            matching = [p for p in pods if selector_matches(spec.get("selector"), meta(p).get("labels") or {})]
            healthy_names = {meta(p).get("name") for p in matching if not meta(p).get("deletionTimestamp") and any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (p.get("status") or {}).get("conditions") or [])}
            names = {meta(p).get("name") for p in matching}
            old = pdb.get("status") or {}
            disrupted = {k: v for k, v in (old.get("disruptedPods") or {}).items() if k in names}
            healthy = len(healthy_names - set(disrupted))

            def count(v):   # an integer, or a percent of the matching pods rounded up, as upstream
                return -(-int(v[:-1]) * len(matching) // 100) if isinstance(v, str) else int(v)
            if "maxUnavailable" in spec:
                want = max(0, len(matching) - count(spec["maxUnavailable"]))
            else:
                want = count(spec.get("minAvailable", 0))
            allowed = max(0, healthy - int(want))
            status = {"observedGeneration": meta(pdb).get("generation", 1),
                      "expectedPods": len(matching), "currentHealthy": healthy,
                      "desiredHealthy": int(want), "disruptionsAllowed": allowed}
            if all(old.get(k) == v for k, v in status.items()) and \
                    disrupted == (old.get("disruptedPods") or {}):
                continue
            status["disruptedPods"] = disrupted
            name = meta(pdb).get("name")

            def transform(cur, status=status, want=want, healthy_names=healthy_names, names=names):
                # As upstream: a pod the eviction handler recorded in disruptedPods counts as
                # gone even while the pod list (read before the eviction) still shows it, so a
                # recount from that list cannot hand back a disruption already spent. Taken
                # from the budget as it is now, inside the compare-and-swap.
                new = copy.deepcopy(cur)
                st = new.setdefault("status", {})
                disrupted = {k: v for k, v in (st.get("disruptedPods") or {}).items() if k in names}
                healthy = len(healthy_names - set(disrupted))
                allowed = max(0, healthy - int(want))
                st.update(status, currentHealthy=healthy, disruptionsAllowed=allowed, disruptedPods=disrupted)
                cond = {"type": "DisruptionAllowed", "status": "True" if allowed > 0 else "False",
                        "reason": "SufficientPods" if allowed > 0 else "InsufficientPods",
                        "message": "", "observedGeneration": status["observedGeneration"],
                        "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
                conds = [c for c in st.get("conditions") or [] if c.get("type") != "DisruptionAllowed"]
                prev = [c for c in st.get("conditions") or [] if c.get("type") == "DisruptionAllowed"]
                if prev and prev[0].get("status") == cond["status"]:
                    cond["lastTransitionTime"] = prev[0].get("lastTransitionTime")
                st["conditions"] = conds + [cond]
                meta(new).pop("resourceVersion", None)
                return new, False
            try:
                self.store._guaranteed_update(pdbt, ns, name, transform, WriteOpts(), sub="status")
            except errors.ApiError as e:
                if e.code != 404:
                    raise
        return True

    # -- namespace controller ---------------------------------------------------------
    def _storage_types(self, namespaced):
        seen = set()
        for rt in self.registry.all_types():
            if rt.namespaced != namespaced and namespaced is not None:
                continue
            if rt.version != rt.storage_version or rt.prefix() in seen:
                continue
            seen.add(rt.prefix())
            yield rt

    def _finalize_namespace(self, name):
        nst = self.registry.lookup("", "v1", "namespaces")
        ns, _ = self.store.read(nst, None, name)
        if ns is None or not meta(ns).get("deletionTimestamp"):
            return True
        remaining = 0
        opts = WriteOpts("namespace-controller")
        for rt in self._storage_types(True):
            p = rt.prefix(name)
            _, kvs, _, _ = self.store.etcd.range(p, prefix_end(p))
            for kv in kvs:
                obj = self.store._decode(rt, kv)
                md = meta(obj)
                if md.get("deletionTimestamp"):
                    remaining += 1
                    continue
                try:
                    out, _ = self.store.delete(rt, name, md["name"], {"propagationPolicy":
                                                                      "Background"}, opts)
                    if out.get("kind") != "Status" and meta(out).get("deletionTimestamp") and \
                            rt.plural not in ("pods", "serviceaccounts"):
                        remaining += 1
                except errors.ApiError as e:
                    if e.code != 404:
                        raise
        # pods/serviceaccounts return the deleted object: re-check what is left
        for rt in self._storage_types(True):
            p = rt.prefix(name)
            _, _, _, count = self.store.etcd.range(p, prefix_end(p), count_only=True)
            if count:
                return False
        if remaining:
            return False
        fins = [f for f in (ns.get("spec") or {}).get("finalizers") or [] if f != "kubernetes"]
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name},
                "spec": {"finalizers": fins}}
        try:
            self.store.update(nst, None, name, body, opts, sub="finalize")
        except errors.ApiError as e:
            if e.code != 404:
                raise
        self.log("namespace %s finalized" % name)
        return True

    # -- garbage collector (foreground / orphan finalizers only) -------------------------
    def _dependents(self, uid, ns):
        out = []
        for rt in self._storage_types(None):
            if ns is None or not rt.namespaced:
                p = rt.prefix()
            else:
                p = rt.prefix(ns)
            _, kvs, _, _ = self.store.etcd.range(p, prefix_end(p))
            for kv in kvs:
                if uid.encode() not in kv.value:
                    continue
                obj = self.store._decode(rt, kv)
                refs = meta(obj).get("ownerReferences") or []
                if any(r.get("uid") == uid for r in refs if isinstance(r, dict)):
                    out.append((rt, obj))
        return out

    def _gc(self, rt, ns, name):
        obj, _ = self.store.read(rt, ns, name)
        if obj is None or not meta(obj).get("deletionTimestamp"):
            return True
        fins = meta(obj).get("finalizers") or []
        uid = meta(obj).get("uid")
        opts = WriteOpts("generic-garbage-collector")
        deps = self._dependents(uid, ns if rt.namespaced else None)
        if "orphan" in fins:
            for drt, d in deps:
                dmd = meta(d)

                def strip(old, uid=uid):
                    new = copy.deepcopy(old)
                    refs = [r for r in meta(new).get("ownerReferences") or [] if r.get("uid") != uid]
                    if refs:
                        meta(new)["ownerReferences"] = refs
                    else:
                        meta(new).pop("ownerReferences", None)
                    return new, False
                try:
                    self.store._guaranteed_update(drt, dmd.get("namespace"), dmd["name"], strip, opts)
                except errors.ApiError as e:
                    if e.code != 404:
                        raise
            return self._drop_finalizer(rt, ns, name, "orphan", opts)
        if "foregroundDeletion" in fins:
            waiting = False
            for drt, d in deps:
                dmd = meta(d)
                if not dmd.get("deletionTimestamp"):
                    try:
                        self.store.delete(drt, dmd.get("namespace"), dmd["name"],
                                          {"propagationPolicy": "Foreground"}, opts)
                    except errors.ApiError as e:
                        if e.code != 404:
                            raise
                waiting = True
            if waiting and self._dependents(uid, ns if rt.namespaced else None):
                return False
            return self._drop_finalizer(rt, ns, name, "foregroundDeletion", opts)
        return True

    def _drop_finalizer(self, rt, ns, name, fin, opts):
        def drop(old):
            new = copy.deepcopy(old)
            meta(new)["finalizers"] = [f for f in meta(new).get("finalizers") or [] if f != fin]
            if not meta(new)["finalizers"]:
                meta(new).pop("finalizers")
            return new, False
        try:
            self.store._guaranteed_update(rt, ns, name, drop, opts)
        except errors.ApiError as e:
            if e.code != 404:
                raise
        return True

    # -- CRD cleanup ------------------------------------------------------------------------
    def _crd_cleanup(self, name):
        types = self.registry.by_crd(name)
        self.registry.remove_crd(name)
        for rt in types[:1]:
            self.store.etcd.delete_range(rt.prefix(), prefix_end(rt.prefix()))
        self.log("CRD %s removed with its objects" % name)
        return True

    # -- compaction --------------------------------------------------------------------------
    def _compactor(self):
        while not self._stop:
            time.sleep(self.compact_interval)
            try:
                rev = self.store.etcd.current_revision()
                target = rev - self.compact_keep
                if target > self.last_compact:
                    self.store.etcd.compact(target)
                    self.last_compact = target
                    self.hub.compacted(target)
            except EtcdError as e:
                self.log("compaction failed: %s" % e)
