#!/usr/bin/env python3
"""The operator's RBAC (manifests/operator/0000_20_etcd-operator_04_rbac.yaml)
against the requests the operator makes, judged by kube-apiserver's own authorizer:
the manifest is applied to Kubernetes' own control plane (with-kube.sh) and every
request below is put to it as a SubjectAccessReview for the operator's ServiceAccount
(what `kubectl auth can-i --as=system:serviceaccount:openshift-etcd-operator:etcd-operator`
asks), all in one kubectl call. A list or watch with fieldSelector=metadata.name=N is
asked with resource name N, as kube-apiserver's RequestInfo names such a request.

- Every informer's list and watch, read from the watch tables themselves
  (controllers/common.h OPERATOR_WATCHES and the controllers' own WatchSpecs,
  with resources from operator/kube/resource.c), is allowed.
- Every write the controllers and the runtime make is allowed: the objects of
  manifests/static (get, create, update), ResourceSyncController's copies
  (parsed from controllers/resource-sync.c, delete included: review L1), and a
  table of the rest below, each naming its controller.
- The operator holds every permission of the Roles it creates and binds
  (escalation prevention): kube-apiserver lets it create each one (a server-side
  dry run as the operator, refused with Forbidden if it lacked any permission).
- What review M6 and M7 took away stays refused: update on other namespaces,
  update or patch on other ClusterRoles and bindings, any Secret of
  openshift-config but etcd-client, kube-system's Events but bootstrap-finished,
  and the verbs no code uses.
Run by ctest (integration/operator-rbac) through test/integration/with-kube.sh, which
exports KUBECONFIG (the admin's) and puts the pinned kubectl first on PATH."""
import glob
import json
import os
import re
import subprocess
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "test", "sim"))
from kubeletsim import yaml_lite  # noqa: E402  (the tree's stdlib-only YAML loader)

SA = ("openshift-etcd-operator", "etcd-operator")
USER = "system:serviceaccount:%s:%s" % SA
GROUPS = ["system:serviceaccounts", "system:serviceaccounts:" + SA[0], "system:authenticated"]


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
    """What a request names: (resource, namespace, name, subresource)."""
    return (res, ns, name, sub)


def attributes(method, target, query=None):
    """The SubjectAccessReview resourceAttributes kube-apiserver's RequestInfo derives from a
    request: the verb from the method (GET of a collection: list, or watch with watch=1),
    a list's or watch's name from fieldSelector=metadata.name=N."""
    res, ns, name, sub = target
    g, _, plural, _ = RES[res]
    query = query or {}
    if method == "GET" and not name:
        verb = "watch" if query.get("watch") in ("1", "true") else "list"
        m = re.match(r"metadata\.name=([^,]+)$", query.get("fieldSelector", ""))
        if m:
            name = m.group(1)
    else:
        verb = {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete" if name else "deletecollection"}[method]
    a = {"verb": verb, "resource": plural}
    for k, v in (("group", g), ("namespace", ns), ("name", name), ("subresource", sub)):
        if v:
            a[k] = v
    return a


def kubectl(*args, input=None):
    r = subprocess.run(["kubectl"] + list(args), capture_output=True, text=True, input=input)
    if r.returncode != 0:
        raise AssertionError("kubectl %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout


RES = resources()
KIND_TO_RES = {v[3]: k for k, v in RES.items()}


class Authorizer:
    """kube-apiserver's answers for the operator's ServiceAccount, once its RBAC is applied."""

    def __init__(self):
        docs = [d for d in yaml_lite.load_all(read("manifests/operator/0000_20_etcd-operator_04_rbac.yaml")) if d]
        namespaces = sorted({d["metadata"]["namespace"] for d in docs if d["metadata"].get("namespace")} |
                            {SA[0], "openshift-etcd", "openshift-machine-api"})
        have = set(kubectl("get", "namespaces", "-o", "jsonpath={.items[*].metadata.name}").split())
        for ns in namespaces:
            if ns not in have:
                kubectl("create", "namespace", ns)
        kubectl("apply", "-f", os.path.join(ROOT, "manifests/operator/0000_20_etcd-operator_04_rbac.yaml"))
        self.asked = {}
        self.collecting = None  # a list: questions are only noted, answered None

    def ask(self, checks):
        """checks: [(method, target, query)]; remembers kube-apiserver's answer to each."""
        unasked = []
        for method, target, query in checks:
            key = json.dumps(attributes(method, target, query), sort_keys=True)
            if key not in self.asked and key not in unasked:
                unasked.append(key)
        if not unasked:
            return
        items = [{"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                  "spec": {"user": USER, "groups": GROUPS, "resourceAttributes": json.loads(k)}} for k in unasked]
        out = kubectl("create", "-o", "json", "-f", "-",
                      input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        answers, at, dec = [], 0, json.JSONDecoder()  # one JSON object per review, one after the other
        while out[at:].strip():
            obj, at = dec.raw_decode(out, at + len(out[at:]) - len(out[at:].lstrip()))
            answers += obj["items"] if obj.get("kind") == "List" else [obj]
        assert len(answers) == len(unasked), (len(answers), len(unasked))
        for key, a in zip(unasked, answers):
            assert json.loads(key) == a["spec"]["resourceAttributes"], (key, a["spec"])
            self.asked[key] = bool(a["status"].get("allowed")) and not a["status"].get("denied")

    def allows(self, method, target, query=None):
        """kube-apiserver's answer (True or False); None while collecting."""
        if self.collecting is not None:
            self.collecting.append((method, target, query))
            return None
        self.ask([(method, target, query)])
        return self.asked[json.dumps(attributes(method, target, query), sort_keys=True)]

    def may_create(self, doc):
        """None when kube-apiserver would let the operator create doc (a Role or ClusterRole:
        escalation prevention refuses one granting what the operator lacks), else its answer."""
        if self.collecting is not None:
            return None
        r = subprocess.run(["kubectl", "create", "--dry-run=server", "--as=" + USER, "-f", "-", "-o", "name"],
                           capture_output=True, text=True, input=json.dumps(doc))
        return None if r.returncode == 0 else r.stderr.strip()


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
    ("POST", "KUBE_TOKENREVIEWS", None, None, None, "delegated auth of /metrics"),
    ("POST", "KUBE_SUBJECTACCESSREVIEWS", None, None, None, "delegated auth of /metrics"),
]

# What the narrowed rules must refuse (review M6, M7): (method, path, query, why).
DENIED = [
    ("PUT", path_of("KUBE_NAMESPACES", name="default"), None, "update on another namespace"),
    ("PUT", path_of("KUBE_CLUSTERROLES", name="admin"), None, "update on another ClusterRole"),
    ("PATCH", path_of("KUBE_CLUSTERROLES", name="system:openshift:operator:etcd-backup-role"), None, "patch on ClusterRoles"),
    ("PUT", path_of("KUBE_CLUSTERROLEBINDINGS", name="cluster-admin"), None, "update on another binding"),
    ("PATCH", path_of("KUBE_CLUSTERROLEBINDINGS", name="system:openshift:operator:etcd-backup-crb"), None, "patch on bindings"),
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
        cls.rules = Authorizer()
        cls.watches, cls.own = watches()
        # Every question the tests put, in one batch of SubjectAccessReviews: each test runs
        # once with its questions only noted, and then for real with the answers at hand.
        cls.rules.collecting = []
        for name in unittest.TestLoader().getTestCaseNames(cls):
            getattr(cls(name), name)()
        questions, cls.rules.collecting = cls.rules.collecting, None
        cls.rules.ask(questions)

    def allowed(self, method, target, query=None, why=""):
        if self.rules.allows(method, target, query) is False:
            self.fail("403 for the operator: %s %s (%s)" % (method, attributes(method, target, query), why))

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
            for d in yaml_lite.load_all(read(f)):
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
                    refused = self.rules.may_create(d)
                    self.assertIsNone(refused, "%s %s grants what the operator lacks" % (d["kind"], name))
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
        for method, target, query, why in DENIED:
            if self.rules.allows(method, target, query):
                self.fail("allowed, but should not be (review M6/M7): %s %s: %s"
                          % (method, attributes(method, target, query), why))


if __name__ == "__main__":
    unittest.main(verbosity=2)
