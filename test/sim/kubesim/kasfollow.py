"""Storage mode (b): behave like a kube-apiserver that follows the operator.

The real kube-apiserver-operator reads ConfigMap openshift-etcd/etcd-endpoints
(data values are member IPs; annotation alpha.installer.openshift.io/etcd-bootstrap
adds the bootstrap member's IP while it is present), renders etcd-servers from it
and rolls out a new kube-apiserver revision whenever that list changes
(as OpenShift's kube-apiserver operator does).  Here the simulator:
  * switches the etcd endpoints it uses itself, and
  * publishes the revision: ConfigMap openshift-kube-apiserver/config-<N> with
    config.yaml = {"apiServerArguments":{"etcd-servers":[...]}} and
    kubeapiservers.operator.openshift.io/cluster status latestAvailableRevision N
    and nodeStatuses[].currentRevision N for every --kas-node-names node,
    but only while the kubeapiservers CRD is installed.
Without the ConfigMap the --etcd-endpoints list is the configuration.  Publishing
is idempotent: a restart compares with the latest published revision.
"""

import copy
import ipaddress
import json
import threading

from . import errors
from .objects import meta
from .store import WriteOpts

BOOTSTRAP_ANNOTATION = "alpha.installer.openshift.io/etcd-bootstrap"
CM_NS, CM_NAME = "openshift-etcd", "etcd-endpoints"
KAS_NS = "openshift-kube-apiserver"


def etcd_url(ip):
    try:
        if ipaddress.ip_address(ip).version == 6:
            return "https://[%s]:2379" % ip
    except ValueError:
        pass
    return "https://%s:2379" % ip


class KasFollower:
    def __init__(self, store, registry, hub, etcd, initial, node_names, log):
        self.store = store
        self.registry = registry
        self.hub = hub
        self.etcd = etcd
        self.initial = sorted(initial)
        self.current = sorted(etcd.endpoints)
        self.node_names = node_names
        self.log = log
        self.opts = WriteOpts("kube-apiserver-operator")
        self._stop = threading.Event()

    def start(self):
        threading.Thread(target=self._run, name="kas-follower", daemon=True).start()

    def stop(self):
        self._stop.set()

    def _run(self):
        prefix = "/registry/configmaps/%s/%s" % (CM_NS, CM_NAME)
        cursor = 0
        while not self._stop.is_set():
            try:
                self.reconcile()
            except (errors.ApiError, OSError, ValueError) as e:
                self.log("kas follower: %s" % getattr(e, "message", e))
            # wake up on a change of the ConfigMap, or every 2 s (CRD installs, retries)
            try:
                cursor = max(cursor, self.hub.rev)
                _, cursor, _ = self.hub.next_events(prefix, cursor, 2.0, self.hub.epoch)
            except Exception:
                self._stop.wait(2.0)

    def desired(self):
        cmt = self.registry.lookup("", "v1", "configmaps")
        cm, _ = self.store.read(cmt, CM_NS, CM_NAME)
        if cm is None:
            return self.initial
        ips = [v for _, v in sorted((cm.get("data") or {}).items()) if v]
        boot = (meta(cm).get("annotations") or {}).get(BOOTSTRAP_ANNOTATION)
        if boot:
            ips.append(boot)
        return sorted(set(etcd_url(ip) for ip in ips)) or self.initial

    def reconcile(self):
        urls = self.desired()
        if urls != self.current:
            self.log("kube-apiserver etcd-servers: %s -> %s" % (",".join(self.current),
                                                               ",".join(urls)))
            self.etcd.set_endpoints(urls)
            self.hub.reconnect()
            self.current = urls
        if self.registry.lookup("operator.openshift.io", "v1", "kubeapiservers") is not None:
            self.publish(urls)

    # -- publishing a revision --------------------------------------------------------
    def _latest(self, kas):
        n = int(((kas or {}).get("status") or {}).get("latestAvailableRevision") or 0)
        if n <= 0:
            return 0, None
        cmt = self.registry.lookup("", "v1", "configmaps")
        cm, _ = self.store.read(cmt, KAS_NS, "config-%d" % n)
        try:
            cfg = json.loads(((cm or {}).get("data") or {}).get("config.yaml", "{}"))
            return n, (cfg.get("apiServerArguments") or {}).get("etcd-servers")
        except ValueError:
            return n, None

    def publish(self, urls):
        kast = self.registry.lookup("operator.openshift.io", "v1", "kubeapiservers")
        kas, _ = self.store.read(kast, None, "cluster")
        latest, servers = self._latest(kas)
        if servers == urls:
            if self._nodes_at(kas, latest):
                return
            n = latest
        else:
            n = latest + 1
            self._write_config(n, urls)
            self.log("published kube-apiserver revision %d: etcd-servers %s" % (n, ",".join(urls)))
        if kas is None:
            try:
                self.store.create(kast, None, {"apiVersion": kast.api_version, "kind": kast.kind,
                                               "metadata": {"name": "cluster"},
                                               "spec": {"managementState": "Managed"}},
                                  WriteOpts(self.opts.manager))
            except errors.ApiError as e:
                if e.code != 409:
                    raise
        self._set_status(kast, n)

    def _nodes_at(self, kas, n):
        have = {s.get("nodeName"): s.get("currentRevision") for s in
                ((kas or {}).get("status") or {}).get("nodeStatuses") or []}
        return all(have.get(node) == n for node in self.node_names)

    def _write_config(self, n, urls):
        nst = self.registry.lookup("", "v1", "namespaces")
        if self.store.read(nst, None, KAS_NS)[0] is None:
            try:
                self.store.create(nst, None, {"apiVersion": "v1", "kind": "Namespace",
                                              "metadata": {"name": KAS_NS}}, WriteOpts(self.opts.manager))
            except errors.ApiError as e:
                if e.code != 409:
                    raise
        cmt = self.registry.lookup("", "v1", "configmaps")
        data = {"config.yaml": json.dumps({"apiServerArguments": {"etcd-servers": urls}},
                                          separators=(",", ":"))}
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "config-%d" % n, "namespace": KAS_NS}, "data": data}
        try:
            self.store.create(cmt, KAS_NS, body, WriteOpts(self.opts.manager))
        except errors.ApiError as e:
            if e.code != 409:
                raise
            self.store.update(cmt, KAS_NS, "config-%d" % n, body, WriteOpts(self.opts.manager))

    def _set_status(self, kast, n):
        # New nodeStatuses entries are added without revisions first: the CRD's CEL
        # rules forbid setting a revision in the write that adds the entry.
        def add_entries(old):
            new = copy.deepcopy(old)
            st = new.setdefault("status", {})
            have = {s.get("nodeName") for s in st.get("nodeStatuses") or []}
            for node in self.node_names:
                if node not in have:
                    st.setdefault("nodeStatuses", []).append({"nodeName": node})
            return new, False

        def set_revision(old):
            new = copy.deepcopy(old)
            st = new.setdefault("status", {})
            st["latestAvailableRevision"] = max(n, int(st.get("latestAvailableRevision") or 0))
            for s in st.get("nodeStatuses") or []:
                if s.get("nodeName") in self.node_names:
                    s["currentRevision"] = n
            return new, False
        self.store._guaranteed_update(kast, None, "cluster", add_entries, self.opts, sub="status")
        self.store._guaranteed_update(kast, None, "cluster", set_revision, self.opts, sub="status")
