"""The Node object: registration (labels, addresses, capacity, nodeInfo) and the Ready
heartbeat (PUT /status every period, re-registering when the Node was deleted)."""

import os
import platform
import threading
import time

from .client import ApiError, quote
from .log import log

PRESSURES = (("MemoryPressure", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
             ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
             ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"))


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _meminfo_ki():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 8 * 1024 * 1024


class NodeStatus(threading.Thread):
    def __init__(self, node, period, master, role_labels=True):
        super().__init__(name="node-status", daemon=True)
        self.node = node
        self.period = period
        self.master = master
        # A kubelet under NodeRestriction may not set node-role.kubernetes.io/* labels on its
        # Node: with role_labels False the cluster's admin sets them (--no-role-labels).
        self.role_labels = role_labels
        self.stop_ev = threading.Event()
        self.ready_since = None
        self.registered = threading.Event()

    def labels(self):
        lab = {"kubernetes.io/hostname": self.node.name, "kubernetes.io/os": "linux",
               "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
               "beta.kubernetes.io/arch": "amd64"}
        if self.master and self.role_labels:
            lab["node-role.kubernetes.io/master"] = ""
            lab["node-role.kubernetes.io/control-plane"] = ""
        return lab

    def status(self, ready):
        now = _now()
        if ready and self.ready_since is None:
            self.ready_since = now
        conds = [{"type": t, "status": "False", "lastHeartbeatTime": now,
                  "lastTransitionTime": self.node.started_at, "reason": r, "message": m}
                 for t, r, m in PRESSURES]
        if ready:
            conds.append({"type": "Ready", "status": "True", "lastHeartbeatTime": now,
                          "lastTransitionTime": self.ready_since, "reason": "KubeletReady",
                          "message": "kubelet is posting ready status"})
        else:
            conds.append({"type": "Ready", "status": "Unknown", "lastHeartbeatTime": now,
                          "lastTransitionTime": now, "reason": "NodeStatusUnknown",
                          "message": "Kubelet stopped posting node status."})
        cpu = str(os.cpu_count() or 2)
        mem = "%dKi" % _meminfo_ki()
        cap = {"cpu": cpu, "memory": mem, "pods": "250", "ephemeral-storage": "100Gi"}
        boot = ""
        try:
            with open("/proc/sys/kernel/random/boot_id") as f:
                boot = f.read().strip()
        except OSError:
            pass
        return {
            "addresses": [{"type": "InternalIP", "address": self.node.ip},
                          {"type": "Hostname", "address": self.node.name}],
            "conditions": conds, "capacity": cap, "allocatable": dict(cap),
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {"machineID": self.node.machine_id, "systemUUID": self.node.machine_id,
                         "bootID": boot, "kernelVersion": platform.release(),
                         "osImage": "kubelet-sim", "containerRuntimeVersion": "kubelet-sim://1",
                         "kubeletVersion": "v1.32.4", "kubeProxyVersion": "",
                         "operatingSystem": "linux", "architecture": "amd64"},
        }

    def register(self):
        client = self.node.client
        path = "/api/v1/nodes/" + quote(self.node.name)
        try:
            cur = client.get(path)
        except ApiError as e:
            if e.code != 404:
                raise
            cur = None
        if cur is None:
            body = {"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": self.node.name, "labels": self.labels()},
                    "spec": {}, "status": self.status(True)}
            if self.master:
                body["spec"]["taints"] = [{"key": "node-role.kubernetes.io/master",
                                           "effect": "NoSchedule"}]
            try:
                cur = client.post("/api/v1/nodes", body)
                log.info("node %s registered", self.node.name)
            except ApiError as e:
                if e.code != 409:
                    raise
                cur = client.get(path)
        labels = dict((cur.get("metadata") or {}).get("labels") or {})
        want = self.labels()
        if any(labels.get(k) != v for k, v in want.items()):
            labels.update(want)
            cur["metadata"]["labels"] = labels
            cur = client.put(path, cur)
        self.node.node_uid = cur["metadata"]["uid"]
        self.registered.set()

    def post(self, ready):
        client = self.node.client
        path = "/api/v1/nodes/" + quote(self.node.name)
        for _ in range(5):
            try:
                cur = client.get(path)
            except ApiError as e:
                if e.code == 404 and ready:
                    self.register()
                    continue
                raise
            st = self.status(ready)
            # an unchanged condition keeps its lastTransitionTime (e.g. across restarts)
            old = {c.get("type"): c for c in (cur.get("status") or {}).get("conditions") or []}
            for c in st["conditions"]:
                o = old.get(c["type"])
                if o and o.get("status") == c["status"] and o.get("lastTransitionTime"):
                    c["lastTransitionTime"] = o["lastTransitionTime"]
            cur["status"] = st
            try:
                out = client.put(path + "/status", cur)
            except ApiError as e:
                if e.code == 409:
                    continue
                raise
            return any(c.get("type") == "Ready" and c.get("status") == ("True" if ready else
                                                                          "Unknown")
                       for c in (out.get("status") or {}).get("conditions") or [])
        raise ApiError(409, "node status update kept conflicting")

    def run(self):
        delay = 0.5
        while not self.stop_ev.is_set():
            try:
                if not self.registered.is_set():
                    self.register()
                if self.post(True):
                    self.node.mark_ready()
                delay = 0.5
                wait = self.period
            except (ApiError, OSError) as e:
                log.warning("node %s status: %s", self.node.name, e)
                wait = delay
                delay = min(delay * 2, self.period)
            if self.stop_ev.wait(wait):
                return

    def stop(self):
        self.stop_ev.set()


class NodeLease(threading.Thread):
    """The node's heartbeat Lease in kube-node-lease, as the kubelet renews it: every quarter of
    its 40 s duration, owned by the Node (the node lifecycle controller reads it; without it a
    Node whose status is unchanged looks dead to kube-controller-manager)."""

    DURATION = 40

    def __init__(self, node):
        super().__init__(name="node-lease", daemon=True)
        self.node = node
        self.stop_ev = threading.Event()

    def renew(self):
        client = self.node.client
        path = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/" + quote(self.node.name)
        now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
        try:
            cur = client.get(path)
        except ApiError as e:
            if e.code != 404:
                raise
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.node.name, "namespace": "kube-node-lease",
                                 "ownerReferences": [{"apiVersion": "v1", "kind": "Node",
                                                      "name": self.node.name, "uid": self.node.node_uid}]},
                    "spec": {"holderIdentity": self.node.name, "leaseDurationSeconds": self.DURATION,
                             "renewTime": now}}
            client.post("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", body)
            log.info("node lease %s created", self.node.name)
            return
        cur.setdefault("spec", {}).update({"holderIdentity": self.node.name,
                                           "leaseDurationSeconds": self.DURATION, "renewTime": now})
        client.put(path, cur)

    def run(self):
        while not self.stop_ev.is_set():
            wait = self.DURATION / 4
            if self.node.node_uid:  # owned by the Node: only once it is registered
                try:
                    self.renew()
                except (ApiError, OSError, KeyError) as e:
                    log.warning("node lease %s: %s", self.node.name, e)
                    wait = 1.0
            else:
                wait = 0.5
            if self.stop_ev.wait(wait):
                return

    def stop(self):
        self.stop_ev.set()
