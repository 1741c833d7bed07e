#!/usr/bin/env python3
"""The operator's RBAC (manifests/operator/0000_12_etcd-operator_02_rbac.yaml)
against the requests the operator makes, judged by the API simulator's RBAC
code (test/sim/kubesim/rbac.py, kube-apiserver's rules: list and watch match
resourceNames through fieldSelector=metadata.name).

- Every informer's list and watch, read from the watch tables themselves
  (controllers/common.h OPERATOR_WATCHES and the controllers' own WatchSpecs,
  with resources from operator/kube/resource.c), is allowed.
- Every write the controllers and the runtime make is allowed: the objects of
  manifests/static (get, create, update), ResourceSyncController's copies
  (parsed from controllers/resource-sync.c, delete included: review L1), and a
  table of the rest below, each naming its controller.
- The operator holds every permission of the Roles it creates and binds
  (escalation prevention), so kube-apiserver lets it create them.
- What review M6 and M7 took away stays refused: update on other namespaces,
  update or patch on other ClusterRoles and bindings, any Secret of
  openshift-config but etcd-client, kube-system's Events but bootstrap-finished,
  and the verbs no code uses.
Run by ctest (unit/operator-rbac) with PYTHONPATH naming test/sim."""
import glob
import os
import re
import sys
import unittest

import yaml

from kubesim import rbac

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SA = ("openshift-etcd-operator", "etcd-operator")


def read(rel):
    with open(os.path.join(ROOT, rel)) as f:
        return f.read()


def c_strings():
    """#define NAME "value" (one string) from the contract's names and controllers/common.h."""
    text = read("operator/base/contract.h") + read("controllers/common.h")
    return dict(re.findall(r'#define\s+(\w+)\s+("[^"]*")\s*(?:/\*.*)?$', text, re.M))


def c_value(tok, defs):
    tok = tok.strip()
    if tok == "NULL":
        return None
    tok = defs.get(tok, tok)
    return tok[1:-1] if tok.startswith('"') else tok


def resources():
    """KUBE_X -> (group, version, plural, kind)."""
    text = re.sub(r"\s+", " ", read("operator/kube/resource.c"))
    out = {}
    group = r'const KubeResource (KUBE_\w+) = GROUP\("([^"]*)", "([^"]*)", "([^"]*)", \w+\)'
    for name, g, p, k in re.findall(group, text):
        out[name] = (g, "v1", p, k)
    for name, p, k in re.findall(r'const KubeResource (KUBE_\w+) = CORE\("([^"]*)", "([^"]*)", \w+\)', text):
        out[name] = ("", "v1", p, k)
    for name, body in re.findall(r"const KubeResource (KUBE_\w+) = \{([^}]*)\}", text):
        f = {k: v.strip('"') for k, v in re.findall(r'\.(\w+) = ("[^"]*"|\w+)', body)}
        out[name] = (f["group"], f["version"], f["plural"], f["kind"])
    return out


def watches():
    """(resource, namespace, label selector, name) of every informer the controllers use."""
    defs = c_strings()
    out = {}
    lines = re.findall(r"^\s*X\((W_\w+),\s*(KUBE_\w+),\s*(\w+),\s*(.+?),\s*(\"[^\"]*\"|\w+)\)",
                       read("controllers/common.h"), re.M)
    for w, res, ns, sel, name in lines:
        # A selector only narrows what is listed, not what RBAC checks: kept as written.
        out[w] = (res, c_value(ns, defs), None if sel == "NULL" else sel, c_value(name, defs))
    own = []
    for path in glob.glob(os.path.join(ROOT, "controllers", "*.c")):
        for res, ns, sel, name in re.findall(r"\{&(KUBE_\w+),\s*(\w+),\s*(\"[^\"]*\"|\w+),\s*(\"[^\"]*\"|\w+)\}",
                                             read(path)):
            own.append((res, c_value(ns, defs), c_value(sel, defs), c_value(name, defs)))
    return out, own


def path_of(res, ns=None, name=None, sub=None):
    g, v, plural, _ = RES[res]
    p = "/api/v1" if not g else "/apis/%s/%s" % (g, v)
    if ns:
        p += "/namespaces/" + ns
    p += "/" + plural
    if name:
        p += "/" + name
    if sub:
        p += "/" + sub
    return p


RES = resources()
KIND_TO_RES = {v[3]: k for k, v in RES.items()}


class OperatorRules:
    """The rules the operator's ServiceAccount holds in each namespace ("" for cluster scope)."""

    def __init__(self):
        self.cluster, self.ns = [], {}
        docs = [d for d in yaml.safe_load_all(read("manifests/operator/0000_12_etcd-operator_02_rbac.yaml")) if d]
        roles = {(d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d.get("rules") or []
                 for d in docs if d["kind"] in ("Role", "ClusterRole")}
        for d in docs:
            if d["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
                continue
            if not any(s.get("kind") == "ServiceAccount" and (s.get("namespace"), s.get("name")) == SA
                       for s in d.get("subjects") or []):
                continue
            ns = d["metadata"].get("namespace", "")
            ref = d["roleRef"]
            rules = roles[(ref["kind"], ns if ref["kind"] == "Role" else "", ref["name"])]
            if d["kind"] == "ClusterRoleBinding":
                self.cluster += rules
            else:
                self.ns.setdefault(ns, []).extend(rules)

    def allows(self, method, path, query=None):
        a = rbac.request_attributes(method, path, query or {})
        return any(rbac.rule_allows(r, a) for r in self.cluster + self.ns.get(a.namespace, []))

    def holds(self, rules, ns):
        """Every permission of `rules` (a Role in ns, or a ClusterRole when ns is "")."""
        owned = self.cluster + (self.ns.get(ns, []) if ns else [])
        return [atom for rule in rules for atom in rbac.Rbac._atoms(rule)
                if not any(rbac.Rbac._covers(o, atom) for o in owned)]


E, OP, CFG, KS = "openshift-etcd", "openshift-etcd-operator", "openshift-config", "kube-system"

# Writes beyond manifests/static and resource sync: (method, resource, namespace, name, subresource, who).
WRITES = [
    ("GET", "KUBE_LEASES", OP, "openshift-cluster-etcd-operator-lock", None, "leader election"),
    ("POST", "KUBE_LEASES", OP, None, None, "leader election"),
    ("PUT", "KUBE_LEASES", OP, "openshift-cluster-etcd-operator-lock", None, "leader election"),
    ("POST", "KUBE_EVENTS", OP, None, None, "event recorder"),
    ("PATCH", "KUBE_EVENTS", OP, "etcd-operator.1", None, "event recorder"),
    ("GET", "KUBE_ETCDS", None, "cluster", None, "status writer"),
    ("PUT", "KUBE_ETCDS", None, "cluster", "status", "status writer, installer, node-status, revision"),
    ("POST", "KUBE_CLUSTEROPERATORS", None, None, None, "status.c"),
    ("GET", "KUBE_CLUSTEROPERATORS", None, "etcd", None, "status.c (settling a write)"),
    ("PUT", "KUBE_CLUSTEROPERATORS", None, "etcd", "status", "status.c"),
    ("POST", "KUBE_SECRETS", E, None, None, "cert-signer"),
    ("PUT", "KUBE_SECRETS", E, "etcd-peer-master-0", None, "cert-signer"),
    ("DELETE", "KUBE_SECRETS", E, "etcd-peer-master-0", None, "cert-signer, cert-cleaner, prune"),
    ("POST", "KUBE_CONFIGMAPS", E, None, None, "cert-signer, revision, target-config"),
    ("PUT", "KUBE_CONFIGMAPS", E, "etcd-pod", None, "revision, target-config"),
    ("PATCH", "KUBE_CONFIGMAPS", E, "etcd-endpoints", None, "etcd-endpoints"),
    ("DELETE", "KUBE_CONFIGMAPS", E, "etcd-pod-3", None, "cert-signer, prune"),
    ("GET", "KUBE_ENDPOINTS", E, "host-etcd-2", None, "host-endpoints"),
    ("POST", "KUBE_ENDPOINTS", E, None, None, "host-endpoints"),
    ("PUT", "KUBE_ENDPOINTS", E, "host-etcd-2", None, "host-endpoints"),
    ("PATCH", "KUBE_ENDPOINTS", E, "host-etcd-2", None, "host-endpoints"),
    ("GET", "KUBE_PDBS", E, "etcd-guard-pdb", None, "guard"),
    ("POST", "KUBE_PDBS", E, None, None, "guard"),
    ("PUT", "KUBE_PDBS", E, "etcd-guard-pdb", None, "guard"),
    ("POST", "KUBE_PODS", E, None, None, "installer, guard, prune"),
    ("DELETE", "KUBE_PODS", E, "installer-3-master-0", None, "guard, prune, machine-hooks"),
    ("PUT", "KUBE_MACHINES", "openshift-machine-api", "master-0", None, "machine-hooks"),
    ("POST", "KUBE_JOBS", E, None, None, "backup, periodic-backup"),
    ("PATCH", "KUBE_JOBS", E, "cluster-backup-job-x", None, "backup"),
    ("DELETE", "KUBE_JOBS", E, "cluster-backup-job-x", None, "backup, periodic-backup"),
    ("GET", "KUBE_CRONJOBS", E, "etcd-backup-x", None, "periodic-backup (apply)"),
    ("POST", "KUBE_CRONJOBS", E, None, None, "periodic-backup (apply)"),
    ("PUT", "KUBE_CRONJOBS", E, "etcd-backup-x", None, "periodic-backup (apply)"),
    ("DELETE", "KUBE_CRONJOBS", E, "etcd-backup-x", None, "periodic-backup"),
    ("PATCH", "KUBE_ETCDBACKUPS", None, "backup-1", None, "backup (label)"),
    ("PUT", "KUBE_ETCDBACKUPS", None, "backup-1", "status", "backup"),
    ("DELETE", "KUBE_ETCDBACKUPS", None, "backup-1", None, "backup removal"),
    ("PATCH", "KUBE_BACKUPS", None, "default", None, "periodic-backup (finalizer)"),
]

# What the narrowed rules must refuse (review M6, M7): (method, path, query, why).
DENIED = [
    ("PUT", path_of("KUBE_NAMESPACES", name="default"), None, "update on another namespace"),
    ("PUT", path_of("KUBE_CLUSTERROLES", name="admin"), None, "update on another ClusterRole"),
    ("PATCH", path_of("KUBE_CLUSTERROLES", name="openshift-etcd-backup"), None, "patch on ClusterRoles"),
    ("PUT", path_of("KUBE_CLUSTERROLEBINDINGS", name="cluster-admin"), None, "update on another binding"),
    ("PATCH", path_of("KUBE_CLUSTERROLEBINDINGS", name="openshift-etcd-backup"), None, "patch on bindings"),
    ("PUT", path_of("KUBE_ROLES", E, "other"), None, "update on another Role"),
    ("GET", path_of("KUBE_SECRETS", CFG), {"limit": "500"}, "list of openshift-config's Secrets"),
    ("GET", path_of("KUBE_SECRETS", CFG), {"watch": "1"}, "watch of openshift-config's Secrets"),
    ("GET", path_of("KUBE_SECRETS", CFG, "pull-secret"), None, "the pull secret"),
    ("PUT", path_of("KUBE_SECRETS", CFG, "pull-secret"), None, "update of the pull secret"),
    ("DELETE", path_of("KUBE_SECRETS", CFG, "pull-secret"), None, "delete of the pull secret"),
    ("PUT", path_of("KUBE_CONFIGMAPS", CFG, "admin-kubeconfig-client-ca"), None, "another ConfigMap"),
    ("DELETE", path_of("KUBE_SECRETS", OP, "other"), None, "delete of another Secret"),
    ("GET", path_of("KUBE_EVENTS", KS), {"watch": "1"}, "watch of every kube-system Event"),
    ("GET", path_of("KUBE_EVENTS", KS), {"limit": "500"}, "list of every kube-system Event"),
    ("PUT", path_of("KUBE_ETCDS", name="cluster"), None, "the Etcd's spec"),
    ("PATCH", path_of("KUBE_ETCDS", name="cluster"), None, "the Etcd's spec"),
    ("PUT", path_of("KUBE_CLUSTEROPERATORS", name="etcd"), None, "a ClusterOperator's spec"),
    ("PUT", path_of("KUBE_CLUSTEROPERATORS", name="kube-apiserver", sub="status"), None, "another operator"),
    ("PUT", path_of("KUBE_ETCDBACKUPS", name="b"), None, "update of an EtcdBackup"),
    ("PATCH", path_of("KUBE_ETCDBACKUPS", name="b", sub="status"), None, "patch of its status"),
    ("PUT", path_of("KUBE_JOBS", E, "j"), None, "update of a Job"),
    ("PATCH", path_of("KUBE_SERVICES", E, "etcd"), None, "patch of a Service"),
    ("DELETE", path_of("KUBE_SERVICEACCOUNTS", E, "etcd-sa"), None, "delete of a ServiceAccount"),
]


class OperatorRbacTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rules = OperatorRules()
        cls.watches, cls.own = watches()

    def allowed(self, method, path, query=None, why=""):
        if not self.rules.allows(method, path, query):
            self.fail("403 for the operator: %s %s %s (%s)" % (method, path, query or "", why))

    def test_informers(self):
        specs = list(self.watches.values()) + self.own
        self.assertEqual(len(self.watches), len(re.findall(r"^\s*X\(W_", read("controllers/common.h"), re.M)))
        self.assertGreater(len(self.own), 4)
        for res, ns, sel, name in specs:
            q = {"limit": "500"}
            if sel:
                q["labelSelector"] = "app=x"
            if name:
                q["fieldSelector"] = "metadata.name=" + name
            self.allowed("GET", path_of(res, ns), q, "list")
            self.allowed("GET", path_of(res, ns), dict(q, watch="1", allowWatchBookmarks="true"), "watch")

    def test_static_resources(self):
        n = 0
        for f in sorted(glob.glob(os.path.join(ROOT, "manifests", "static", "*.yaml"))):
            for d in yaml.safe_load_all(read(f)):
                if not d:
                    continue
                res = KIND_TO_RES[d["kind"]]
                ns, name = d["metadata"].get("namespace"), d["metadata"]["name"]
                why = "StaticResourcesController applies %s %s" % (d["kind"], name)
                self.allowed("GET", path_of(res, ns, name), None, why)
                self.allowed("POST", path_of(res, ns), None, why)
                self.allowed("PUT", path_of(res, ns, name), None, why)
                n += 1
                if d["kind"] in ("Role", "ClusterRole"):
                    missing = self.rules.holds(d.get("rules") or [], ns or "")
                    self.assertEqual(missing, [], "%s %s grants what the operator lacks" % (d["kind"], name))
        self.assertGreater(n, 6)

    def test_resource_sync(self):
        """Every copy's target: read, created, updated, and a Secret deleted (type change, review L1)."""
        defs = c_strings()
        copies = re.findall(r"\{(true|false), (W_\w+), (\w+), (\"[^\"]+\"|\w+), (W_\w+), (\w+),\s*(\"[^\"]+\"|\w+)\}",
                            read("controllers/resource-sync.c"))
        self.assertGreater(len(copies), 6)
        for secret, _, _, _, to_w, to_ns, to in copies:
            to = c_value(to, defs)
            res, ns, _, name = self.watches[to_w]
            self.assertIn(name, (None, to), "%s watches %s only, so the copy %s is never seen" % (to_w, name, to))
            ns = c_value(to_ns, defs)
            self.allowed("GET", path_of(res, ns, to), None, "resource sync")
            self.allowed("POST", path_of(res, ns), None, "resource sync")
            self.allowed("PUT", path_of(res, ns, to), None, "resource sync")
            if secret == "true":
                self.allowed("DELETE", path_of(res, ns, to), None, "resource sync: a Secret of another type")

    def test_writes(self):
        for method, res, ns, name, sub, who in WRITES:
            self.allowed(method, path_of(res, ns, name, sub), None, who)

    def test_narrowed(self):
        for method, path, query, why in DENIED:
            if self.rules.allows(method, path, query):
                self.fail("allowed, but should not be (review M6/M7): %s %s %s: %s"
                          % (method, path, query or "", why))


if __name__ == "__main__":
    unittest.main(verbosity=2)
