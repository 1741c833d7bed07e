"""kubelet-sim: CLI, startup order, the pod table, and shutdown.

Startup: bin dir with the image/command mapping, the kubeconfig, the status manager and
the Node heartbeat, a first scan of the manifests directory (static pods run even while
the API server is unreachable, as a kubelet's do during bootstrap), then the API pod
watch. SIGTERM/SIGINT: stop every container (SIGTERM, SIGKILL after the grace period),
post their final statuses, mark the Node NotReady, exit 0.
"""

import argparse
import copy
import fnmatch
import hashlib
import ipaddress
import json
import os
import shutil
import signal
import sys
import threading
import time
import traceback

from . import log as logmod
from .client import ApiError, Client, KubeConfig, quote
from .log import log
from .node import NodeLease, NodeStatus
from .podspec import ConfigError, apply_defaults
from .podworker import PodWorker, now_iso
from .runtime import Spawner
from .sources import ApiPodSource, ManifestSource
from .status import MIRROR, StatusManager

REPO = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


class Kubelet:
    def __init__(self, args):
        self.name = args.node_name
        self.ip = args.node_ip
        self.root = os.path.abspath(args.root)
        self.state_dir = os.path.join(self.root, "var/lib/kubelet")
        self.bindir = os.path.join(self.state_dir, "sim-bin")
        self.backoff_base = args.backoff_base
        self.startup_probe_step = args.startup_probe_step
        self.backoff_max = args.backoff_max
        self.sync_period = args.sync_period
        os.makedirs(self.state_dir, exist_ok=True)
        os.makedirs(self.host_path("/etc/kubernetes/manifests"), exist_ok=True)
        os.makedirs(self.host_path("/var/log/pods"), exist_ok=True)
        self.kc = KubeConfig(args.kubeconfig, os.path.join(self.state_dir, "sim-pki"))
        self.client = Client(self.kc, user_agent="kubelet-sim/%s" % self.name)
        self.sa_token = None    # a fixed token for every API pod (--service-account-token-file)
        if args.service_account_token_file:
            with open(args.service_account_token_file) as f:
                self.sa_token = f.read().strip()
        self.setup_bindir(args)
        self.setup_images(args)
        self.spawner = Spawner()
        self.status = StatusManager(self)
        self.node_status = NodeStatus(self, args.heartbeat_period, args.master, not args.no_role_labels)
        self.node_lease = NodeLease(self)
        self.manifests = ManifestSource(self, args.sync_period)
        self.api = ApiPodSource(self)
        self.lock = threading.RLock()
        self.workers = {}     # uid -> PodWorker
        self.by_name = {}     # ns/name -> newest PodWorker
        self.completed = set()
        self.node_uid = None
        self.started_at = now_iso()
        self.machine_id = hashlib.md5(self.name.encode()).hexdigest()
        self.shutting_down = False
        self.stop_ev = threading.Event()
        self.ready_file = os.path.join(self.root, "kubelet-sim.ready")
        self.pid_file = os.path.join(self.root, "kubelet-sim.pid")
        # What `crictl ps` on this node shows (test/sim/node-bin/crictl): the running
        # containers, rewritten whole on every start and exit.
        self.runtime_file = os.path.join(self.state_dir, "sim-runtime", "containers.json")
        self.runtime_lock = threading.Lock()
        self.running = {}     # container ID -> crictl record
        self._write_runtime()

    def container_running(self, cid, record):
        """A container started (record) or ended (None): rewrite the runtime file."""
        with self.runtime_lock:
            if record is None:
                self.running.pop(cid, None)
            else:
                self.running[cid] = record
            self._write_runtime()

    def _write_runtime(self):
        os.makedirs(os.path.dirname(self.runtime_file), exist_ok=True)
        tmp = self.runtime_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"kubeletPid": os.getpid(), "node": self.name, "nodeIP": self.ip,
                       "containers": sorted(self.running.values(), key=lambda r: r["createdAt"])}, f,
                      indent=1)
        os.replace(tmp, self.runtime_file)

    def host_path(self, p):
        return os.path.join(self.root, os.path.normpath("/" + (p or "")).lstrip("/"))

    def setup_bindir(self, args):
        mapping = {
            "etcd": shutil.which("etcd") or "/usr/bin/etcd",
            "etcdctl": shutil.which("etcdctl") or "/usr/bin/etcdctl",
            "cluster-etcd-operator": os.path.abspath(
                args.operator_binary or os.path.join(REPO, "build", "cluster-etcd-operator")),
            "python3": sys.executable,
        }
        for m in args.map or []:
            name, _, target = m.partition("=")
            if not name or not target or "/" in name:
                raise SystemExit("kubelet-sim: --map wants NAME=PATH, got %r" % m)
            mapping[name] = os.path.abspath(target)
        shutil.rmtree(self.bindir, ignore_errors=True)
        os.makedirs(self.bindir)
        for name, target in sorted(mapping.items()):
            if not os.path.exists(target):
                log.warning("%s -> %s: target does not exist (yet)", name, target)
            os.symlink(target, os.path.join(self.bindir, name))
        self.mapping = mapping

    def setup_images(self, args):
        """--image PATTERN=ROOTFS: with any, every container's image must match one, and it
        runs with only that root filesystem's commands (hack/image-rootfs.py builds them)."""
        self.images = []
        for m in args.image or []:
            pattern, _, rootfs = m.rpartition("=")
            if not pattern or not rootfs:
                raise SystemExit("kubelet-sim: --image wants PATTERN=ROOTFS, got %r" % m)
            if not os.path.isdir(os.path.join(rootfs, "usr/bin")):
                raise SystemExit("kubelet-sim: --image %s: %s is not an image root filesystem (no usr/bin; "
                                 "hack/image-rootfs.py builds them)" % (pattern, rootfs))
            self.images.append((pattern, os.path.abspath(rootfs)))
        self.strict_images = bool(self.images)

    def image_rootfs(self, image):
        """The root filesystem of `image`, or None (strict mode: not pullable)."""
        for pattern, rootfs in self.images:
            if fnmatch.fnmatchcase(image or "", pattern):
                return rootfs
        return None

    # -- the pod table ----------------------------------------------------------------------
    def _start_worker(self, pod, uid, source):
        md = pod["metadata"]
        key = "%s/%s" % (md["namespace"], md["name"])
        prev = self.by_name.get(key)
        if prev is not None and prev.finished.is_set():
            prev = None
        w = PodWorker(self, pod, uid, source, previous=prev)
        w.seen = now_iso()
        self.workers[uid] = w
        self.by_name[key] = w
        log.info("pod %s (%s, uid %s): adding%s", key, source, uid,
                 " after the previous version stops" if prev else "")
        w.start()
        return w

    def add_static(self, pod, uid):
        with self.lock:
            if self.shutting_down or uid in self.workers:
                return
            self._start_worker(pod, uid, "file")

    def remove_static(self, pod, uid):
        md = pod["metadata"]
        log.info("static pod %s/%s (uid %s): manifest gone", md["namespace"], md["name"], uid)
        with self.lock:
            w = self.workers.get(uid)
        if w is not None:
            w.terminate(remove=True)
        self.status.delete_mirror(md["namespace"], md["name"], uid)

    def static_active(self, uid):
        return uid in self.manifests.active

    def add_api_pod(self, pod):
        md = pod["metadata"]
        uid = md["uid"]
        with self.lock:
            if self.shutting_down or uid in self.workers or uid in self.completed:
                return
            st = pod.get("status") or {}
            phase = st.get("phase")
            if phase in ("Succeeded", "Failed"):
                self.completed.add(uid)
                return
            pod = apply_defaults(copy.deepcopy(pod))
            if phase == "Running" and pod["spec"].get("restartPolicy") == "Never":
                # ran under an earlier kubelet-sim whose containers died with it
                self.completed.add(uid)
                threading.Thread(target=self._mark_lost, args=(pod,), daemon=True).start()
                return
            self._start_worker(pod, uid, "api")

    def pod_token(self, pod):
        """The token an API pod gets, as the kubelet projects it: a TokenRequest for the
        pod's ServiceAccount, bound to the pod (kubelet's default lifetime). A missing
        ServiceAccount fails the pod's start (the kubelet's FailedMount)."""
        if self.sa_token:
            return self.sa_token
        md, spec = pod["metadata"], pod.get("spec") or {}
        sa = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": 3607, "boundObjectRef": {
                    "kind": "Pod", "apiVersion": "v1", "name": md["name"], "uid": md.get("uid", "")}}}
        try:
            r = self.client.post("/api/v1/namespaces/%s/serviceaccounts/%s/token"
                                 % (quote(md["namespace"]), quote(sa)), body)
        except ApiError as e:
            raise ConfigError("failed to fetch token for service account %s/%s: %s"
                                % (md["namespace"], sa, e))
        return r["status"]["token"]

    def _mark_lost(self, pod):
        md = pod["metadata"]
        path = "/api/v1/namespaces/%s/pods/%s" % (quote(md["namespace"]), quote(md["name"]))
        term = {"exitCode": 137, "reason": "ContainerStatusUnknown",
                "message": "The container could not be located when the pod was terminated"}
        for _ in range(5):
            try:
                cur = self.client.get(path)
                st = cur.setdefault("status", {})
                st["phase"] = "Failed"
                st["containerStatuses"] = [
                    {"name": c["name"], "ready": False, "started": False, "image": c.get("image", ""),
                     "imageID": "", "restartCount": 0, "state": {"terminated": term},
                     "lastState": {}} for c in cur["spec"].get("containers") or []]
                self.client.put(path + "/status", cur)
                log.info("pod %s/%s: containers lost with an earlier kubelet: Failed",
                         md["namespace"], md["name"])
                return
            except (ApiError, OSError) as e:
                log.warning("marking pod %s failed: %s", md["name"], e)
                time.sleep(1)

    def remove_api_pod(self, uid, grace=None, pod=None):
        """Stops the pod's containers; `pod` (its deletion asked for): once none runs, the pod is
        deleted for good, as the kubelet does (at once for a pod that has finished or never ran)."""
        with self.lock:
            w = self.workers.get(uid)
        if w is not None:
            w.terminate(grace, remove=True)
        elif pod is not None and not self.shutting_down:
            md = pod.get("metadata") or {}
            self.status.delete_pod(md.get("namespace"), md.get("name"), uid)

    def worker_done(self, w):
        with self.lock:
            if self.workers.get(w.uid) is w:
                del self.workers[w.uid]
            if self.by_name.get(w.key) is w:
                del self.by_name[w.key]
            if w.source == "api":
                self.completed.add(w.uid)
        log.info("pod %s (uid %s): worker finished", w.key, w.uid)
        if w.source == "api" and w.terminate_requested and w.remove_dir and not self.shutting_down:
            self.status.delete_pod(w.ns, w.pod_name, w.uid)

    def mirror_deleted(self, uid):
        if uid in self.manifests.active and not self.shutting_down:
            log.info("mirror pod for static pod %s deleted: recreating it", uid)
            self.status.resync(uid)

    def orphan_mirrors(self, items):
        """Mirror pods on this node whose static pod is gone (e.g. removed while the
        kubelet was down) are deleted, as the kubelet's housekeeping does."""
        active = set(self.manifests.active)
        names = {"%s/%s" % (p["metadata"]["namespace"], p["metadata"]["name"])
                 for p in self.manifests.active.values()}
        for p in items:
            md = p.get("metadata") or {}
            h = (md.get("annotations") or {}).get(MIRROR)
            if h is None or h in active:
                continue
            if "%s/%s" % (md.get("namespace"), md.get("name")) in names:
                continue  # another version of a running static pod: replaced on sync
            log.info("mirror pod %s/%s has no static pod: deleting it", md.get("namespace"),
                     md.get("name"))
            self.status.delete_mirror(md["namespace"], md["name"], h)

    def mark_ready(self):
        if not os.path.exists(self.ready_file):
            with open(self.ready_file, "w") as f:
                f.write("%s %s\n" % (self.name, self.ip))
            log.info("node %s is Ready (ip %s, root %s)", self.name, self.ip, self.root)

    # -- lifecycle ---------------------------------------------------------------------------
    def run(self):
        for s in (signal.SIGTERM, signal.SIGINT):
            signal.signal(s, lambda *_: self.stop_ev.set())
        # A loop of this node (pod source, status, lease, a pod worker) that dies of an
        # unexpected exception leaves a node that no longer does its job while looking alive:
        # such a node stops, loudly, and exits non-zero rather than letting a test time out.
        self.crashed = None

        def thread_died(a):
            log.error("kubelet-sim %s: thread %s died: %s: %s; stopping the node", self.name,
                      a.thread.name if a.thread else "?", a.exc_type.__name__, a.exc_value)
            traceback.print_exception(a.exc_type, a.exc_value, a.exc_traceback)
            self.crashed = self.crashed or (a.thread.name if a.thread else "?")
            self.stop_ev.set()
        threading.excepthook = thread_died
        with open(self.pid_file, "w") as f:
            f.write("%d\n" % os.getpid())
        try:
            os.unlink(self.ready_file)
        except FileNotFoundError:
            pass
        log.info("kubelet-sim %s starting: ip %s, root %s, API %s, bin map %s", self.name,
                 self.ip, self.root, self.kc.server,
                 ", ".join("%s=%s" % kv for kv in sorted(self.mapping.items())))
        self.status.start()
        self.node_status.start()
        self.node_lease.start()
        self.manifests.scan()
        self.manifests.start()
        self.api.start()
        while not self.stop_ev.wait(1):
            pass
        self.shutdown()
        if self.crashed:
            log.error("kubelet-sim %s: exiting 70: thread %s died", self.name, self.crashed)
            return 70
        return 0

    def shutdown(self):
        log.info("kubelet-sim %s: shutting down", self.name)
        self.manifests.stop()
        self.api.stop()
        with self.lock:
            self.shutting_down = True
            workers = list(self.workers.values())
        for w in workers:
            w.terminate(remove=False)
        grace = max([w.grace_default for w in workers] + [0])
        deadline = time.monotonic() + grace + 10
        for w in workers:
            w.finished.wait(max(deadline - time.monotonic(), 0.1))
        left = [w.key for w in workers if not w.finished.is_set()]
        if left:
            log.warning("pods still stopping: %s", ", ".join(left))
        self.status.flush(5)
        self.node_status.stop()
        self.node_lease.stop()
        try:
            self.node_status.post(False)
            log.info("node %s marked NotReady", self.name)
        except (ApiError, OSError) as e:
            log.warning("marking node %s NotReady: %s", self.name, e)
        for f in (self.ready_file, self.pid_file):
            try:
                os.unlink(f)
            except FileNotFoundError:
                pass
        log.info("kubelet-sim %s: stopped", self.name)


def parse_args(argv):
    ap = argparse.ArgumentParser(prog="kubelet-sim", description="kubelet emulator for tests "
                                 "(see test/sim/KUBELET-SIM.md)")
    ap.add_argument("--node-name", required=True)
    ap.add_argument("--node-ip", required=True, help="an address in 127.0.0.0/8")
    ap.add_argument("--root", required=True, help="the node's host filesystem view")
    ap.add_argument("--kubeconfig", default=os.environ.get("KUBECONFIG"))
    ap.add_argument("--operator-binary", help="what `cluster-etcd-operator` runs "
                    "(default <repo>/build/cluster-etcd-operator)")
    ap.add_argument("--master", action="store_true", help="label the Node as a master")
    ap.add_argument("--no-role-labels", action="store_true",
                    help="with --master, taint but do not label: NodeRestriction forbids a kubelet "
                    "node-role.kubernetes.io/* labels, the cluster's admin sets them")
    ap.add_argument("--sync-period", type=float, default=1.0,
                    help="manifest directory poll period in seconds (default 1)")
    ap.add_argument("--heartbeat-period", type=float, default=10.0,
                    help="Node status period in seconds (default 10)")
    ap.add_argument("--backoff-base", type=float, default=1.0,
                    help="crash-loop backoff start in seconds (kubelet: 10; default 1)")
    ap.add_argument("--backoff-max", type=float, default=300.0,
                    help="crash-loop backoff cap in seconds (default 300)")
    ap.add_argument("--startup-probe-step", type=float, default=0.0, metavar="S",
                    help="check startup probes at least every S seconds, from S seconds after the "
                    "start, with the failure deadline (initialDelay + period x failureThreshold) "
                    "unchanged (default 0: the kubelet's timing)")
    ap.add_argument("--map", action="append", metavar="NAME=PATH",
                    help="extra command mapping (repeatable)")
    ap.add_argument("--image", action="append", metavar="PATTERN=ROOTFS",
                    help="an image (fnmatch pattern) and its root filesystem (repeatable); with any, "
                    "images are strict: only the image's commands, an unknown image is ErrImagePull")
    ap.add_argument("--service-account-token-file",
                    help="token given to API pods (default: the kubeconfig's token)")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    if not args.kubeconfig:
        ap.error("--kubeconfig (or KUBECONFIG) is required")
    try:
        ip = ipaddress.ip_address(args.node_ip)
    except ValueError:
        ap.error("--node-ip %r is not an IP address" % args.node_ip)
    if ip not in ipaddress.ip_network("127.0.0.0/8"):
        ap.error("--node-ip must be in 127.0.0.0/8")
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logmod.setup(args.verbose)
    if os.geteuid() != 0:
        log.error("kubelet-sim needs root (mount namespaces and bind mounts)")
        return 1
    try:
        k = Kubelet(args)
    except (OSError, ValueError) as e:
        log.error("%s", e)
        return 1
    return k.run()
