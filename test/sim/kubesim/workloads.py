"""What kube-controller-manager and kube-scheduler do for Jobs and volume claims, the
least of it that makes a Job run on a node with a claimed volume (controllers.py calls
these from its one background thread; each returns a delay in seconds to be called
again after, or None when done):

* scheduler: a pod without spec.nodeName (schedulerName default-scheduler) is bound
  to a Ready node that its nodeSelector matches, whose NoSchedule/NoExecute taints
  (the cordon taint included) it tolerates, the one with the fewest pods; a pod
  whose persistentVolumeClaim is missing or not Bound is not scheduled (condition
  PodScheduled False, reason Unschedulable), as with immediate binding;
* persistent volume binder: a Pending claim is bound to an Available volume with
  the claim's storageClassName ("" and absent alike), every requested access mode
  and at least the requested storage, the smallest such; or to the volume it names
  in spec.volumeName. Both sides are written (claimRef, volumeName, phases Bound,
  the claim's capacity and accessModes). Volumes are static: no provisioner;
* Job controller: one pod at a time (parallelism and completions 1, the only
  shape used here) from spec.template, named <job>-<random>, owned by the Job;
  status.active/succeeded/failed/startTime; a Failed pod is replaced after a delay
  doubling from 1 s (kube-controller-manager: 10 s) until spec.backoffLimit
  failures, then condition Failed (BackoffLimitExceeded); past
  spec.activeDeadlineSeconds the active pod is deleted and the Job Failed
  (DeadlineExceeded); a Succeeded pod makes it Complete (with SuccessCriteriaMet,
  as since Kubernetes 1.31). A deleted Job's pods are deleted (kubectl's default
  background propagation, which the garbage collector would carry out).
* CronJob controller: at each time of spec.schedule (cron.py, in spec.timeZone) a Job
  <cronjob>-<minutes since the epoch> from spec.jobTemplate, owned by the CronJob,
  annotated batch.kubernetes.io/cronjob-scheduled-timestamp; status.lastScheduleTime,
  active, lastSuccessfulTime. Only the most recent missed time runs (no
  startingDeadlineSeconds). concurrencyPolicy Forbid skips a time while a Job runs (it
  runs once that one ends, as the real controller does), Replace deletes the running
  Job; suspend stops new Jobs. Finished Jobs beyond successfulJobsHistoryLimit (3) and
  failedJobsHistoryLimit (1) are deleted, oldest first; a deleted CronJob's Jobs are
  deleted (the garbage collector's work).
"""

import copy
import time

from . import cron

from . import errors, objects
from .etcd import prefix_end
from .objects import meta
from .selectors import selector_matches
from .store import WriteOpts

JOB_BACKOFF_BASE = 1.0
JOB_BACKOFF_MAX = 60.0


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _parse_time(s):
    try:
        return time.mktime(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ")) - time.timezone
    except (TypeError, ValueError):
        return None


def _quantity(q):
    """Bytes of a storage quantity ("10Gi", "500M", "1073741824")."""
    if q is None:
        return 0
    s = str(q).strip()
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "Pi": 1 << 50,
             "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15}
    for u in sorted(units, key=len, reverse=True):
        if s.endswith(u):
            return int(float(s[:-len(u)]) * units[u])
    return int(float(s))


class Workloads:
    def __init__(self, store, registry, log):
        self.store, self.registry, self.log = store, registry, log

    def _type(self, group, plural):
        return self.registry.lookup(group, "v1", plural)

    def _list(self, rt, ns=None):
        prefix = rt.prefix(ns)
        _, kvs, _, _ = self.store.etcd.range(prefix, prefix_end(prefix))
        return [self.store._decode(rt, kv) for kv in kvs]

    def _status_update(self, rt, ns, name, mutate):
        def transform(cur):
            new = copy.deepcopy(cur)
            if mutate(new) is False:
                return cur, False  # unchanged: the update is a no-op
            meta(new).pop("resourceVersion", None)
            return new, False
        try:
            self.store._guaranteed_update(rt, ns, name, transform, WriteOpts(manager="kube-controller-manager"),
                                          sub="status")
        except errors.ApiError as e:
            if e.code != 404:
                raise

    # -- scheduler ------------------------------------------------------------------
    def schedule(self, ns, name):
        podt, nodet = self._type("", "pods"), self._type("", "nodes")
        pod, kv = self.store.read(podt, ns, name)
        if pod is None or meta(pod).get("deletionTimestamp"):
            return None
        spec = pod.get("spec") or {}
        if spec.get("nodeName") or spec.get("schedulerName", "default-scheduler") != "default-scheduler":
            return None
        why = self._unbound_claims(ns, spec)
        nodes = [] if why else self._fitting_nodes(pod, self._list(nodet))
        if not why and not nodes:
            why = "0/%d nodes are available: none is Ready, matches the pod's nodeSelector and has " \
                  "no taint the pod does not tolerate" % len(self._list(nodet))
        if why:
            self._unschedulable(podt, ns, name, why)
            return 1.0
        load = {}
        for p in self._list(podt):
            n = (p.get("spec") or {}).get("nodeName")
            if n:
                load[n] = load.get(n, 0) + 1
        node = min(nodes, key=lambda n: (load.get(meta(n)["name"], 0), meta(n)["name"]))
        target = meta(node)["name"]
        new = copy.deepcopy(pod)
        new["spec"]["nodeName"] = target
        st = new.setdefault("status", {})
        st["conditions"] = [c for c in st.get("conditions") or [] if c.get("type") != "PodScheduled"] + [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": _now()}]
        # As the binding subresource does: around the pod update rules.
        ok, _, _ = self.store.etcd.cas_put(podt.key(ns, name), objects.encode(new), kv.mod_rev)
        if not ok:
            return 0.2
        self.log("scheduler: bound pod %s/%s to node %s" % (ns, name, target))
        return None

    def _unbound_claims(self, ns, spec):
        pvct = self._type("", "persistentvolumeclaims")
        for v in spec.get("volumes") or []:
            claim = (v.get("persistentVolumeClaim") or {}).get("claimName")
            if not claim:
                continue
            pvc, _ = self.store.read(pvct, ns, claim)
            if pvc is None:
                return 'persistentvolumeclaim "%s" not found' % claim
            if (pvc.get("status") or {}).get("phase") != "Bound":
                return "pod has unbound immediate PersistentVolumeClaims (%s)" % claim
        return None

    @staticmethod
    def _tolerates(tolerations, taint):
        for t in tolerations or []:
            if t.get("effect") and t.get("effect") != taint.get("effect"):
                continue
            if t.get("operator") == "Exists":
                if not t.get("key") or t.get("key") == taint.get("key"):
                    return True
            elif t.get("key") == taint.get("key") and t.get("value", "") == taint.get("value", ""):
                return True
        return False

    def _fitting_nodes(self, pod, nodes):
        spec = pod.get("spec") or {}
        out = []
        for n in nodes:
            ready = any(c.get("type") == "Ready" and c.get("status") == "True"
                        for c in (n.get("status") or {}).get("conditions") or [])
            if not ready or meta(n).get("deletionTimestamp"):
                continue
            labels = meta(n).get("labels") or {}
            if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
                continue
            taints = list((n.get("spec") or {}).get("taints") or [])
            if (n.get("spec") or {}).get("unschedulable"):
                taints.append({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"})
            if any(t.get("effect") in ("NoSchedule", "NoExecute") and
                   not self._tolerates(spec.get("tolerations"), t) for t in taints):
                continue
            out.append(n)
        return out

    def _unschedulable(self, podt, ns, name, why):
        def mutate(pod):
            st = pod.setdefault("status", {})
            conds = st.get("conditions") or []
            old = [c for c in conds if c.get("type") == "PodScheduled"]
            if old and old[0].get("message") == why:
                return False
            st["conditions"] = [c for c in conds if c.get("type") != "PodScheduled"] + [
                {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": why,
                 "lastTransitionTime": _now()}]
        self._status_update(podt, ns, name, mutate)

    # -- persistent volume binder ------------------------------------------------------
    def bind_claims(self):
        pvct, pvt = self._type("", "persistentvolumeclaims"), self._type("", "persistentvolumes")
        pvs = {meta(v)["name"]: v for v in self._list(pvt)}
        for pvc in self._list(pvct):
            if (pvc.get("status") or {}).get("phase") == "Bound" or meta(pvc).get("deletionTimestamp"):
                continue
            spec = pvc.get("spec") or {}
            want = _quantity(((spec.get("resources") or {}).get("requests") or {}).get("storage"))
            modes = set(spec.get("accessModes") or [])
            cls = spec.get("storageClassName") or ""
            cands = []
            for v in pvs.values():
                vs = v.get("spec") or {}
                if spec.get("volumeName") and meta(v)["name"] != spec["volumeName"]:
                    continue
                if (v.get("status") or {}).get("phase") != "Available" or vs.get("claimRef"):
                    continue
                if (vs.get("storageClassName") or "") != cls or not modes <= set(vs.get("accessModes") or []):
                    continue
                size = _quantity((vs.get("capacity") or {}).get("storage"))
                if size >= want:
                    cands.append((size, meta(v)["name"], v))
            if not cands:
                continue
            _, vname, v = min(cands, key=lambda c: (c[0], c[1]))
            self._bind(pvt, pvct, v, pvc)
            pvs.pop(vname)
        return None

    def _bind(self, pvt, pvct, pv, pvc):
        cmd, vmd = meta(pvc), meta(pv)
        ref = {"kind": "PersistentVolumeClaim", "namespace": cmd["namespace"], "name": cmd["name"],
               "uid": cmd["uid"], "apiVersion": "v1", "resourceVersion": cmd["resourceVersion"]}

        def claim_volume(cur):
            new = copy.deepcopy(cur)
            if (new.get("spec") or {}).get("claimRef"):
                return cur, False  # claimed meanwhile: a no-op
            new.setdefault("spec", {})["claimRef"] = ref
            meta(new).pop("resourceVersion", None)
            return new, False
        self.store._guaranteed_update(pvt, None, vmd["name"], claim_volume, WriteOpts(manager="kube-controller-manager"))
        self._status_update(pvt, None, vmd["name"], lambda v: v.setdefault("status", {}).update(phase="Bound"))

        def name_volume(cur):
            new = copy.deepcopy(cur)
            new.setdefault("spec", {})["volumeName"] = vmd["name"]
            meta(new).setdefault("annotations", {})["pv.kubernetes.io/bind-completed"] = "yes"
            meta(new).pop("resourceVersion", None)
            return new, False
        self._raw_update(pvct, cmd["namespace"], cmd["name"], name_volume)
        vs = pv.get("spec") or {}
        self._status_update(pvct, cmd["namespace"], cmd["name"], lambda c: c.setdefault("status", {}).update(
            phase="Bound", accessModes=vs.get("accessModes") or [], capacity=vs.get("capacity") or {}))
        self.log("volume binder: bound claim %s/%s to volume %s" % (cmd["namespace"], cmd["name"], vmd["name"]))

    def _raw_update(self, rt, ns, name, transform):
        """A write around the type's update rules (the binder may set a claim's volumeName)."""
        for _ in range(5):
            obj, kv = self.store.read(rt, ns, name)
            if obj is None:
                return
            new, unchanged = transform(obj)
            if unchanged:
                return
            ok, _, _ = self.store.etcd.cas_put(rt.key(ns, name), objects.encode(new), kv.mod_rev)
            if ok:
                return
        raise errors.conflict(rt, name)

    # -- Job controller -----------------------------------------------------------------
    def sync_job(self, ns, name):
        jobt, podt = self._type("batch", "jobs"), self._type("", "pods")
        job, _ = self.store.read(jobt, ns, name)
        pods = [p for p in self._list(podt, ns)
                if any(r.get("kind") == "Job" and r.get("name") == name and r.get("controller")
                       for r in meta(p).get("ownerReferences") or [])]
        if job is None:
            for p in pods:
                self._delete_pod(podt, ns, p)
            return None
        uid = meta(job)["uid"]
        pods = [p for p in pods if any(r.get("uid") == uid for r in meta(p).get("ownerReferences") or [])]
        spec, st = job.get("spec") or {}, job.get("status") or {}
        conds = {c.get("type"): c for c in st.get("conditions") or []}
        finished = any(conds.get(t, {}).get("status") == "True" for t in ("Complete", "Failed"))
        phase = lambda p: (p.get("status") or {}).get("phase")  # noqa: E731
        succeeded = sum(1 for p in pods if phase(p) == "Succeeded")
        failed = sum(1 for p in pods if phase(p) == "Failed")
        active = [p for p in pods if phase(p) not in ("Succeeded", "Failed") and
                  not meta(p).get("deletionTimestamp")]
        start = _parse_time(st.get("startTime")) or time.time()
        new_conds, delay = [], None
        if finished:
            for p in active:
                self._delete_pod(podt, ns, p)
            active = []
        elif succeeded >= spec.get("completions", 1):
            new_conds = [("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods"),
                         ("Complete", "CompletionsReached", "Reached expected number of succeeded pods")]
        elif failed > spec.get("backoffLimit", 6):
            new_conds = [("FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
                         ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")]
        elif spec.get("activeDeadlineSeconds") and time.time() - start >= spec["activeDeadlineSeconds"]:
            new_conds = [("FailureTarget", "DeadlineExceeded", "Job was active longer than specified deadline"),
                         ("Failed", "DeadlineExceeded", "Job was active longer than specified deadline")]
        elif not active and not spec.get("suspend"):
            wait = 0.0
            if failed:
                last = max((_parse_time(self._finished_at(p)) or 0) for p in pods if phase(p) == "Failed")
                wait = min(JOB_BACKOFF_BASE * 2 ** (failed - 1), JOB_BACKOFF_MAX) - (time.time() - last)
            if wait > 0:
                delay = wait
            else:
                active = [self._create_pod(podt, job)]
        if new_conds:
            for p in active:
                self._delete_pod(podt, ns, p)
            active = []
        if spec.get("activeDeadlineSeconds") and active and delay is None:
            delay = max(0.2, spec["activeDeadlineSeconds"] - (time.time() - start))

        def mutate(j):
            s = j.setdefault("status", {})
            before = copy.deepcopy(s)
            s.setdefault("startTime", st.get("startTime") or _now())
            for k, v in (("active", len(active)), ("succeeded", succeeded), ("failed", failed)):
                if v:
                    s[k] = v
                else:
                    s.pop(k, None)
            s["ready"] = sum(1 for p in active if any(c.get("type") == "Ready" and c.get("status") == "True"
                                                       for c in (p.get("status") or {}).get("conditions") or []))
            s["uncountedTerminatedPods"] = {}
            for t, reason, msg in new_conds:
                s.setdefault("conditions", []).append({
                    "type": t, "status": "True", "reason": reason, "message": msg,
                    "lastProbeTime": _now(), "lastTransitionTime": _now()})
            if any(t == "Complete" for t, _, _ in new_conds):
                s["completionTime"] = _now()
            return s != before
        self._status_update(jobt, ns, name, mutate)
        return delay

    def sync_cronjob(self, ns, name):
        cjt, jobt = self._type("batch", "cronjobs"), self._type("batch", "jobs")
        cj, _ = self.store.read(cjt, ns, name)
        owned = [j for j in self._list(jobt, ns)
                 if any(r.get("kind") == "CronJob" and r.get("name") == name and r.get("controller")
                        for r in meta(j).get("ownerReferences") or [])]
        if cj is None:
            for j in owned:
                self._delete_job(jobt, ns, j)
            return None
        md, spec, st = meta(cj), cj.get("spec") or {}, cj.get("status") or {}
        owned = [j for j in owned if any(r.get("uid") == md["uid"] for r in meta(j).get("ownerReferences") or [])]

        def done(j):
            for c in (j.get("status") or {}).get("conditions") or []:
                if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
                    return c["type"]
            return None
        active = [j for j in owned if not done(j) and not meta(j).get("deletionTimestamp")]
        sched = cron.Schedule(spec.get("schedule", ""), spec.get("timeZone"))
        now = time.time()
        last = _parse_time(st.get("lastScheduleTime")) or _parse_time(md.get("creationTimestamp")) or now
        due, t = None, sched.next_after(last)
        while t <= now:
            due, t = t, sched.next_after(t)
        created = None
        if due is not None and not spec.get("suspend"):
            policy = spec.get("concurrencyPolicy", "Allow")
            if policy == "Forbid" and active:
                self.log("cronjob controller: %s/%s: a Job still runs; not starting another" % (ns, name))
                t = now + 1.0   # look again; the Job's end also wakes this CronJob
            else:
                if policy == "Replace":
                    for j in active:
                        self._delete_job(jobt, ns, j)
                    active = []
                created = self._create_job(jobt, cj, due)
                if not done(created):   # (that time's Job may exist already, finished)
                    active.append(created)
        for kind, limit in (("Complete", spec.get("successfulJobsHistoryLimit", 3)),
                            ("Failed", spec.get("failedJobsHistoryLimit", 1))):
            finished = sorted((j for j in owned if done(j) == kind),
                              key=lambda j: (meta(j).get("creationTimestamp", ""), meta(j)["name"]))
            for j in finished[:max(len(finished) - limit, 0)]:
                self._delete_job(jobt, ns, j)
        successes = [(j.get("status") or {}).get("completionTime") for j in owned if done(j) == "Complete"]

        def mutate(c):
            s = c.setdefault("status", {})
            before = copy.deepcopy(s)
            if created is not None:
                s["lastScheduleTime"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(due))
            refs = [{"apiVersion": "batch/v1", "kind": "Job", "name": meta(j)["name"], "namespace": ns,
                     "uid": meta(j)["uid"]} for j in active]
            if refs:
                s["active"] = refs
            else:
                s.pop("active", None)
            if [x for x in successes if x]:
                s["lastSuccessfulTime"] = max(x for x in successes if x)
            return s != before
        self._status_update(cjt, ns, name, mutate)
        return max(0.2, t - time.time())

    def _create_job(self, jobt, cj, when):
        md, tmpl = meta(cj), copy.deepcopy((cj.get("spec") or {}).get("jobTemplate") or {})
        name = "%s-%d" % (md["name"], int(when // 60))
        job = {"apiVersion": "batch/v1", "kind": "Job",
               "metadata": {"name": name, "namespace": md["namespace"],
                            "labels": dict(meta(tmpl).get("labels") or {}),
                            "annotations": dict(meta(tmpl).get("annotations") or {},
                                                **{"batch.kubernetes.io/cronjob-scheduled-timestamp":
                                                   time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when))}),
                            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": md["name"],
                                                 "uid": md["uid"], "controller": True,
                                                 "blockOwnerDeletion": True}]},
               "spec": tmpl.get("spec") or {}}
        try:
            obj = self.store.create(jobt, md["namespace"], job, WriteOpts(manager="kube-controller-manager"))
        except errors.ApiError as e:
            if e.code != 409:
                raise
            obj, _ = self.store.read(jobt, md["namespace"], name)
        self.log("cronjob controller: cronjob %s/%s: created job %s" % (md["namespace"], md["name"], name))
        return obj

    def _delete_job(self, jobt, ns, job):
        try:
            self.store.delete(jobt, ns, meta(job)["name"], {}, WriteOpts())
        except errors.ApiError as e:
            if e.code != 404:
                raise

    @staticmethod
    def _finished_at(pod):
        for cs in (pod.get("status") or {}).get("containerStatuses") or []:
            t = ((cs.get("state") or {}).get("terminated") or {}).get("finishedAt")
            if t:
                return t
        return None

    def _create_pod(self, podt, job):
        md, spec = meta(job), job.get("spec") or {}
        tmpl = copy.deepcopy(spec.get("template") or {})
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"generateName": md["name"] + "-", "namespace": md["namespace"],
                            "labels": dict(meta(tmpl).get("labels") or {}),
                            "annotations": dict(meta(tmpl).get("annotations") or {}),
                            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": md["name"],
                                                 "uid": md["uid"], "controller": True,
                                                 "blockOwnerDeletion": True}],
                            "finalizers": []},
               "spec": tmpl.get("spec") or {}}
        obj = self.store.create(podt, md["namespace"], pod, WriteOpts(manager="kube-controller-manager"))
        self.log("job controller: job %s/%s: created pod %s" % (md["namespace"], md["name"], meta(obj)["name"]))
        return obj

    def _delete_pod(self, podt, ns, pod):
        try:
            self.store.delete(podt, ns, meta(pod)["name"], {}, WriteOpts())
        except errors.ApiError as e:
            if e.code != 404:
                raise
