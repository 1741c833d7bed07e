"""One pod's lifecycle on the node: volumes, init containers in order, containers,
probes, kills, restarts with the kubelet's crash-loop backoff, and the pod status
(phase, conditions, container statuses) computed like the kubelet's.

A PodWorker is a thread that wakes on probe results, on termination requests, on a
container's exit (runtime.Process.on_exit), at its next deadline (a kill's grace period, a
restart after its backoff, a retry) and at least every RELIST seconds, the period of the
kubelet's PLEG relist. All container state is guarded by self.cond.
"""

import hashlib
import os
import shutil
import signal
import threading
import time

from . import podspec, runtime
from .client import ApiError
from .log import log
from .probes import Prober

# The kubelet's PLEG relists containers every second: no worker sleeps longer.
RELIST = 1.0


def now_iso():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _fmt_delay(d):
    if d >= 60:
        m, s = divmod(int(d), 60)
        return "%dm%ds" % (m, s)
    return ("%gs" % round(d, 1))


class Container:
    def __init__(self, spec, kind, has_inits):
        self.spec = spec
        self.name = spec.get("name", "")
        self.kind = kind  # "init" | "main"
        self.process = None
        self.instance = 0
        self.restart_count = 0
        self.ever_started = False
        self.state = {"waiting": {"reason": "PodInitializing" if kind == "main" and has_inits
                                  else "ContainerCreating"}}
        self.last_state = {}
        self.started = False       # startup probe passed (or none)
        self.ready_probe = None    # readiness result
        self.done = False          # init container succeeded
        self.final = False         # will not run again
        self.next_start = 0.0
        self.backoff = None        # (next delay, monotonic time of last update)
        self.kill_deadline = None
        self.killing = False
        self.kill_request = None
        self.kill_grace = None
        self.probers = []
        self.container_id = None
        self.started_at = None
        self.start_error = None
        self.log_path = None


class PodWorker(threading.Thread):
    def __init__(self, node, pod, uid, source, previous=None):
        md = pod.get("metadata") or {}
        super().__init__(name="pod-%s" % md.get("name"), daemon=True)
        self.node = node
        self.pod = pod
        self.uid = uid
        self.source = source  # "file" | "api"
        self.ns = md.get("namespace") or "default"
        self.pod_name = md.get("name")
        self.key = "%s/%s" % (self.ns, self.pod_name)
        self.previous = previous
        self.cond = threading.Condition()
        spec = pod.get("spec") or {}
        self.policy = spec.get("restartPolicy") or "Always"
        self.grace_default = float(spec.get("terminationGracePeriodSeconds", 30))
        inits = spec.get("initContainers") or []
        self.inits = [Container(c, "init", False) for c in inits]
        self.mains = [Container(c, "main", bool(inits)) for c in spec.get("containers") or []]
        self.volumes = None
        self.volume_retry = 0.0
        self.terminate_requested = False
        self.terminate_grace = None
        self.remove_dir = False
        self.pod_failed = False
        self.complete = False
        self.finished = threading.Event()
        self.start_time = None
        self.cond_times = {}
        self.last_status = None

    # -- interface for the kubelet and the probers ----------------------------------
    def terminate(self, grace=None, remove=True):
        with self.cond:
            if not self.terminate_requested:
                log.info("pod %s (%s): stopping", self.key, self.source)
            self.terminate_requested = True
            self.remove_dir = self.remove_dir or remove
            if grace is not None:
                self.terminate_grace = grace
            self.cond.notify_all()

    def probe_result(self, c, instance, kind, ok, msg):
        with self.cond:
            if c.instance != instance or c.process is None:
                return
            if kind == "startup":
                if ok:
                    c.started = True
                    log.info("pod %s container %s: startup probe succeeded", self.key, c.name)
                else:
                    c.kill_request = "Startup probe failed: " + msg
                    c.kill_grace = (c.spec.get("startupProbe") or {}).get(
                        "terminationGracePeriodSeconds")
            elif kind == "liveness":
                if not ok:
                    c.kill_request = "Liveness probe failed: " + msg
                    c.kill_grace = (c.spec.get("livenessProbe") or {}).get(
                        "terminationGracePeriodSeconds")
            else:
                if c.ready_probe != ok:
                    log.info("pod %s container %s: readiness %s%s", self.key, c.name,
                             "succeeded" if ok else "failed", (": " + msg) if msg else "")
                c.ready_probe = ok
            self.cond.notify_all()

    def container_started(self, c, instance):
        with self.cond:
            return c.instance == instance and c.started and c.process is not None

    def pids(self):
        """Shim PIDs of the running containers (for tests and debugging)."""
        with self.cond:
            return {c.name: c.process.pid for c in self.inits + self.mains if c.process}

    # -- the loop ---------------------------------------------------------------------
    def run(self):
        try:
            if self.previous is not None:
                while not self.previous.finished.wait(RELIST):
                    if self.terminate_requested:
                        break
            self.start_time = now_iso()
            while True:
                with self.cond:
                    self._step()
                    status = self._status()
                    done = self.complete
                if status != self.last_status and not (self.terminate_requested and
                                                       self.remove_dir):
                    self.last_status = status
                    self.node.status.set(self, status)
                if done:
                    break
                with self.cond:
                    self.cond.wait(self._next_wake())
        except Exception:  # noqa: BLE001 - a worker must never die silently
            log.exception("pod %s: worker failed", self.key)
        finally:
            self._cleanup()
            self.finished.set()
            self.node.worker_done(self)

    def _cleanup(self):
        for c in self.inits + self.mains:
            for p in c.probers:
                p.stop()
            if c.process is not None and c.process.poll() is None:
                c.process.signal(signal.SIGKILL)
                c.process.wait(10)
            if c.process is not None and c.container_id:
                self.node.container_running(c.container_id, None)
        if self.remove_dir:
            shutil.rmtree(podspec.pod_dir(self.node, self.uid), ignore_errors=True)

    def _all(self):
        return self.inits + self.mains

    def _next_wake(self):
        """Seconds until the earliest deadline _step acts on, at most RELIST."""
        now = time.monotonic()
        due = [now + RELIST]
        if self.volumes is None:
            due.append(self.volume_retry)
        for c in self._all():
            if c.kill_deadline is not None:
                due.append(c.kill_deadline)
            if c.process is None and not c.final and not c.done:
                due.append(c.next_start)
        # A deadline already past was acted on (or cannot be yet: a container waiting for
        # its init containers), so only those ahead count.
        return max(min(d for d in due if d > now) - now, 0.01)

    def _exited(self):
        with self.cond:
            self.cond.notify_all()

    def _step(self):
        now = time.monotonic()
        for c in self._all():
            if c.process is not None and c.process.poll() is not None:
                self._on_exit(c)
        for c in self._all():
            if c.process is not None and c.kill_deadline is not None and now >= c.kill_deadline:
                log.info("pod %s container %s: grace period over, SIGKILL", self.key, c.name)
                c.process.signal(signal.SIGKILL)
                c.kill_deadline = None
        if self.terminate_requested:
            grace = self.terminate_grace if self.terminate_grace is not None else self.grace_default
            for c in self._all():
                if c.process is not None and not c.killing:
                    self._kill(c, grace, None)
            if not any(c.process for c in self._all()):
                self.complete = True
            return
        if self.volumes is None:
            if now < self.volume_retry:
                return
            try:
                self.volumes = podspec.prepare_volumes(self.node, self.pod, self.uid,
                                                       self.source == "api", self.node.client)
            except (podspec.ConfigError, ApiError, OSError) as e:
                log.warning("pod %s: volumes: %s", self.key, e)
                for c in self._all():
                    c.state = {"waiting": {"reason": "CreateContainerConfigError",
                                           "message": str(e)}}
                self.volume_retry = now + 2
                return
        for c in self._all():
            if c.kill_request and c.process is not None and not c.killing:
                log.info("pod %s container %s: %s, will be restarted", self.key, c.name,
                         c.kill_request)
                grace = c.kill_grace if c.kill_grace is not None else self.grace_default
                self._kill(c, float(grace), c.kill_request)
        if self.pod_failed:
            if not any(c.process for c in self._all()):
                self.complete = True
            return
        for ic in self.inits:
            if ic.done:
                continue
            if ic.process is None and not ic.final and now >= ic.next_start:
                self._start(ic)
            return
        for c in self.mains:
            if c.process is None and not c.final and now >= c.next_start:
                self._start(c)
        if self.mains and all(c.final for c in self.mains):
            self.complete = True

    def _start(self, c):
        node = self.node
        rootfs = None
        if node.strict_images:
            image = c.spec.get("image") or ""
            rootfs = node.image_rootfs(image)
            if rootfs is None:
                msg = ('Failed to pull image "%s": not an image this kubelet-sim has (--image '
                       'PATTERN=ROOTFS)' % image)
                if (c.state.get("waiting") or {}).get("message") != msg:
                    log.warning("pod %s container %s: %s", self.key, c.name, msg)
                c.state = {"waiting": {"reason": "ErrImagePull", "message": msg}}
                c.next_start = time.monotonic() + 5
                return
        try:
            env = podspec.container_env(node, self.pod, c.spec, node.client)
            mounts = podspec.container_mounts(self.pod, c.spec, self.volumes)
            if rootfs:
                podspec.image_path(env, rootfs, mounts)
            argv = podspec.command_line(c.spec, env)
        except (podspec.ConfigError, ApiError, OSError) as e:
            log.warning("pod %s container %s: %s", self.key, c.name, e)
            c.state = {"waiting": {"reason": "CreateContainerConfigError", "message": str(e)}}
            c.next_start = time.monotonic() + 2
            return
        if c.ever_started:
            c.restart_count += 1
        c.instance += 1
        c.env = env
        c.container_id = "kubelet-sim://" + hashlib.sha256(
            ("%s/%s/%d/%f" % (self.uid, c.name, c.instance, time.time())).encode()).hexdigest()
        pdir = os.path.join(podspec.pod_dir(node, self.uid), "containers")
        os.makedirs(pdir, exist_ok=True)
        c.log_path = os.path.join(node.root, "var/log/pods", "%s_%s" % (self.ns, self.pod_name),
                                  c.name, "%d.log" % c.restart_count)
        spec = {"argv": argv, "env": env, "workingDir": c.spec.get("workingDir") or "/",
                "hostname": podspec.hostname(node, self.pod), "mounts": mounts, "rootfs": rootfs}
        proc, err = runtime.start_container(node, os.path.join(pdir, c.name + ".json"), spec,
                                            c.log_path)
        c.ever_started = True
        c.started_at = now_iso()
        c.killing = False
        c.kill_request = None
        c.kill_deadline = None
        if proc is None:
            c.start_error = err
            self._record_exit(c, 128)
            return
        c.process = proc
        c.start_error = err
        proc.on_exit(self._exited)
        node.container_running(c.container_id, {
            "id": c.container_id.split("://", 1)[1][:13], "name": c.name, "pid": proc.pid,
            "createdAt": time.time(), "state": "CONTAINER_RUNNING", "podName": self.pod_name,
            "labels": {"io.kubernetes.container.name": c.name, "io.kubernetes.pod.name": self.pod_name,
                       "io.kubernetes.pod.namespace": self.ns, "io.kubernetes.pod.uid": self.uid}})
        if err:
            log.warning("pod %s container %s: start failed: %s", self.key, c.name, err)
            return
        log.info("pod %s container %s: started (pid %d, restart %d): %s", self.key, c.name,
                 proc.pid, c.restart_count, " ".join(argv)[:200])
        c.state = {"running": {"startedAt": c.started_at}}
        c.started = c.kind == "init" or not c.spec.get("startupProbe")
        c.ready_probe = None
        c.probers = []
        if c.kind == "main":
            for kind, field in (("startup", "startupProbe"), ("liveness", "livenessProbe"),
                                ("readiness", "readinessProbe")):
                if c.spec.get(field):
                    p = Prober(self, c, kind, c.spec[field], env, c.instance)
                    c.probers.append(p)
                    p.start()

    def _kill(self, c, grace, reason):
        c.killing = True
        c.process.signal(signal.SIGTERM)
        c.kill_deadline = time.monotonic() + max(grace, 0)
        if grace <= 0:
            c.process.signal(signal.SIGKILL)
            c.kill_deadline = None

    def _on_exit(self, c):
        rc = c.process.returncode
        self._record_exit(c, rc)

    def _record_exit(self, c, rc):
        for p in c.probers:
            p.stop()
        c.probers = []
        msg = None
        if c.start_error:
            reason, msg, rc = "StartError", c.start_error, 128
        elif rc == 0:
            reason = "Completed"
        else:
            reason = "Error"
        term = {"exitCode": rc, "reason": reason, "startedAt": c.started_at,
                "finishedAt": now_iso(), "containerID": c.container_id}
        if msg is None and rc != 0 and \
                c.spec.get("terminationMessagePolicy") == "FallbackToLogsOnError":
            msg = _log_tail(c.log_path)
        if msg:
            term["message"] = msg
        log.info("pod %s container %s: exited with %d (%s)", self.key, c.name, rc, reason)
        if c.container_id:
            self.node.container_running(c.container_id, None)
        c.process = None
        c.killing = False
        c.kill_deadline = None
        c.kill_request = None
        c.started = False
        c.ready_probe = None
        c.start_error = None
        if self.terminate_requested:
            c.state = {"terminated": term}
            c.final = True
            return
        if c.kind == "init":
            if rc == 0:
                c.done = True
                c.state = {"terminated": term}
                return
            if self.policy == "Never":
                c.final = True
                c.state = {"terminated": term}
                self.pod_failed = True
                return
        elif not (self.policy == "Always" or (self.policy == "OnFailure" and rc != 0)):
            c.final = True
            c.state = {"terminated": term}
            return
        c.last_state = {"terminated": term}
        delay = self._backoff(c)
        c.next_start = time.monotonic() + delay
        if delay > 0:
            c.state = {"waiting": {"reason": "CrashLoopBackOff", "message":
                                   "back-off %s restarting failed container=%s pod=%s_%s(%s)" %
                                   (_fmt_delay(delay), c.name, self.pod_name, self.ns, self.uid)}}
        else:
            c.state = {"waiting": {"reason": "ContainerCreating"}}

    def _backoff(self, c):
        """kubelet: the first restart is immediate, then base, 2*base, ... up to max; the
        backoff is forgotten once the container ran longer than 2*max without a crash."""
        now = time.monotonic()
        base, cap = self.node.backoff_base, self.node.backoff_max
        if c.backoff is not None and now - c.backoff[1] > 2 * cap:
            c.backoff = None
        if c.backoff is None:
            c.backoff = (base, now)
            return 0.0
        delay = c.backoff[0]
        c.backoff = (min(delay * 2, cap), now)
        return delay

    # -- status -------------------------------------------------------------------------
    def _cstatus(self, c):
        running = c.process is not None and not c.start_error
        if c.kind == "init":
            ready = c.done
            started = running
        else:
            has_rp = bool(c.spec.get("readinessProbe"))
            started = running and c.started
            ready = started and not c.killing and (c.ready_probe is True if has_rp else True)
        st = {"name": c.name, "state": c.state, "lastState": c.last_state, "ready": ready,
              "restartCount": c.restart_count, "image": c.spec.get("image") or "",
              "imageID": "", "started": started}
        if c.container_id:
            st["containerID"] = c.container_id
        return st

    def _phase(self, statuses):
        if self.pod_failed:
            return "Failed"
        if not all(c.done for c in self.inits):
            return "Pending"
        running = waiting = stopped = succeeded = 0
        for s in statuses:
            state = s["state"]
            if "running" in state:
                running += 1
            elif "terminated" in state:
                stopped += 1
                if state["terminated"].get("exitCode") == 0:
                    succeeded += 1
            elif "terminated" in (s.get("lastState") or {}):
                stopped += 1
            else:
                waiting += 1
        if waiting:
            return "Pending"
        if running:
            return "Running"
        if stopped:
            if self.policy == "Always":
                return "Running"
            if stopped == succeeded and all(c.final for c in self.mains):
                return "Succeeded"
            if self.policy == "Never":
                return "Failed"
            return "Running"
        return "Pending"

    def _cond(self, ctype, ok, reason=None, message=None):
        status = "True" if ok else "False"
        prev = self.cond_times.get(ctype)
        if prev is None or prev[0] != status:
            self.cond_times[ctype] = prev = (status, now_iso())
        c = {"type": ctype, "status": status, "lastProbeTime": None, "lastTransitionTime": prev[1]}
        if not ok and reason:
            c["reason"] = reason
            if message:
                c["message"] = message
        elif ok and reason == "PodCompleted":
            c["reason"] = reason
        return c

    def _status(self):
        cs = [self._cstatus(c) for c in self.mains]
        ics = [self._cstatus(c) for c in self.inits]
        phase = self._phase(cs)
        terminal = phase in ("Succeeded", "Failed")
        initialized = all(c.done for c in self.inits)
        not_init = [c.name for c in self.inits if not c.done]
        unready = [s["name"] for s in cs if not s["ready"]]
        rreason = "PodCompleted" if terminal else "ContainersNotReady"
        rmsg = "containers with unready status: [%s]" % " ".join(unready)
        conds = [
            self._cond("PodReadyToStartContainers", self.volumes is not None and not terminal),
            self._cond("Initialized", initialized, "ContainersNotInitialized",
                       "containers with incomplete status: [%s]" % " ".join(not_init)),
            self._cond("Ready", not unready and not terminal, rreason, rmsg),
            self._cond("ContainersReady", not unready and not terminal, rreason, rmsg),
            self._cond("PodScheduled", True),
        ]
        ip = self.node.ip
        st = {"phase": phase, "conditions": conds, "hostIP": ip, "hostIPs": [{"ip": ip}],
              "podIP": ip, "podIPs": [{"ip": ip}], "startTime": self.start_time,
              "containerStatuses": cs, "qosClass": _qos(self.pod)}
        if ics:
            st["initContainerStatuses"] = ics
        return st


def _qos(pod):
    cs = (pod.get("spec") or {}).get("containers") or []
    any_res = False
    guaranteed = True
    for c in cs:
        r = c.get("resources") or {}
        req, lim = r.get("requests") or {}, r.get("limits") or {}
        if req or lim:
            any_res = True
        for k in ("cpu", "memory"):
            if k not in lim or (k in req and req[k] != lim[k]):
                guaranteed = False
    if not any_res:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def _log_tail(path, max_bytes=2048, max_lines=80):
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read()
    except (OSError, TypeError):
        return None
    lines = data.decode(errors="replace").splitlines()[-max_lines:]
    return "\n".join(lines) or None
