"""The type registry: built-in resources (https://kubernetes.io/docs/reference/kubernetes-api/) and installed CRDs.

A ResourceType is one served group/version/plural.  CRDs install one ResourceType
per served version; all versions of a CRD share the storage prefix (the simulator
does no conversion: conversion strategy None only rewrites apiVersion, as here).
"""

import threading

from . import jsonpath

ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
SUB_VERBS = {"status": ["get", "patch", "update"], "scale": ["get", "patch", "update"],
             "eviction": ["create"], "finalize": ["update"], "binding": ["create"],
             "token": ["create"]}


class ResourceType:
    def __init__(self, group, version, plural, kind, namespaced, singular=None, short_names=(),
                 categories=(), subresources=(), tracks_generation=False, list_kind=None,
                 return_deleted=False, create_on_update=False, crd=None, schema=None,
                 printer_columns=None, storage_version=None, scale=None):
        self.group = group
        self.version = version
        self.plural = plural
        self.kind = kind
        self.list_kind = list_kind or kind + "List"
        self.singular = singular or kind.lower()
        self.namespaced = namespaced
        self.short_names = list(short_names)
        self.categories = list(categories)
        self.subresources = set(subresources)
        self.tracks_generation = tracks_generation
        self.return_deleted = return_deleted
        self.create_on_update = create_on_update
        self.crd = crd                      # CRD name for custom resources
        self.schema = schema                # openAPIV3Schema of this version (CRs)
        self.printer_columns = printer_columns
        self.storage_version = storage_version or version
        # scale subresource paths (CRD subresources.scale; deployments use the defaults)
        self.scale = scale or {"specReplicasPath": ".spec.replicas",
                               "statusReplicasPath": ".status.replicas"}
        self._compiled_columns = None

    @property
    def is_custom(self):
        return self.crd is not None

    @property
    def api_version(self):
        return self.version if not self.group else "%s/%s" % (self.group, self.version)

    @property
    def has_status(self):
        return "status" in self.subresources

    def prefix(self, namespace=None):
        """etcd key prefix of the collection (all namespaces when namespace is None)."""
        base = "/registry/%s/" % self.plural if not self.group else \
            "/registry/%s/%s/" % (self.group, self.plural)
        if self.namespaced and namespace:
            return base + namespace + "/"
        return base

    def key(self, namespace, name):
        if self.namespaced:
            return self.prefix(namespace) + name
        return self.prefix() + name

    def columns(self):
        """Compiled additionalPrinterColumns: [(definition, steps)]."""
        if self._compiled_columns is None:
            out = []
            for c in self.printer_columns or []:
                try:
                    steps = jsonpath.compile_path(c.get("jsonPath", ""))
                except jsonpath.JsonPathError:
                    steps = None
                out.append((c, steps))
            self._compiled_columns = out
        return self._compiled_columns


def _builtins():
    R = ResourceType
    return [
        R("", "v1", "nodes", "Node", False, short_names=["no"], subresources=["status"]),
        R("", "v1", "pods", "Pod", True, short_names=["po"], categories=["all"],
          subresources=["status", "eviction", "binding"], return_deleted=True),
        R("", "v1", "endpoints", "Endpoints", True, singular="endpoints", short_names=["ep"],
          create_on_update=True),
        R("", "v1", "configmaps", "ConfigMap", True, short_names=["cm"]),
        R("", "v1", "secrets", "Secret", True),
        R("", "v1", "services", "Service", True, short_names=["svc"], categories=["all"],
          subresources=["status"]),
        R("", "v1", "namespaces", "Namespace", False, short_names=["ns"],
          subresources=["status", "finalize"], return_deleted=True),
        R("", "v1", "events", "Event", True, short_names=["ev"]),
        R("", "v1", "serviceaccounts", "ServiceAccount", True, short_names=["sa"],
          subresources=["token"], return_deleted=True),
        R("rbac.authorization.k8s.io", "v1", "roles", "Role", True),
        R("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", True),
        R("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
        R("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
        R("coordination.k8s.io", "v1", "leases", "Lease", True),
        R("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True,
          short_names=["pdb"], subresources=["status"], tracks_generation=True),
        R("", "v1", "persistentvolumes", "PersistentVolume", False, short_names=["pv"],
          subresources=["status"]),
        R("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, short_names=["pvc"],
          subresources=["status"]),
        R("batch", "v1", "jobs", "Job", True, categories=["all"], subresources=["status"],
          tracks_generation=True),
        R("batch", "v1", "cronjobs", "CronJob", True, short_names=["cj"], categories=["all"],
          subresources=["status"], tracks_generation=True),
        R("apps", "v1", "deployments", "Deployment", True, short_names=["deploy"],
          categories=["all"], subresources=["status", "scale"], tracks_generation=True),
        R("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition",
          False, short_names=["crd", "crds"], subresources=["status"], tracks_generation=True),
    ]


DEFAULT_CRD_COLUMNS = [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]


def crd_types(crd):
    """ResourceTypes for the served versions of a CRD object."""
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group", "")
    kind = names.get("kind", "")
    versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
    storage = next((v.get("name") for v in spec.get("versions") or [] if v.get("storage")),
                   versions[0].get("name") if versions else "")
    out = []
    for v in versions:
        subs = v.get("subresources") or {}
        out.append(ResourceType(
            group, v.get("name"), names.get("plural", ""), kind,
            spec.get("scope", "Namespaced") == "Namespaced",
            singular=names.get("singular") or kind.lower(),
            short_names=names.get("shortNames") or [], categories=names.get("categories") or [],
            subresources=[s for s in ("status", "scale") if s in subs],
            tracks_generation=True, list_kind=names.get("listKind") or kind + "List",
            crd=(crd.get("metadata") or {}).get("name"),
            schema=(v.get("schema") or {}).get("openAPIV3Schema"),
            printer_columns=v.get("additionalPrinterColumns") or DEFAULT_CRD_COLUMNS,
            storage_version=storage, scale=subs.get("scale")))
    return out


class Registry:
    def __init__(self):
        self._lock = threading.RLock()
        self._types = {}      # (group, version, plural) -> ResourceType
        self._crds = {}       # crd name -> [ResourceType]
        self.generation = 0   # bumped on every change (discovery/openapi caches)
        for rt in _builtins():
            self._types[(rt.group, rt.version, rt.plural)] = rt

    def lookup(self, group, version, plural):
        with self._lock:
            return self._types.get((group, version, plural))

    def by_crd(self, crd_name):
        with self._lock:
            return list(self._crds.get(crd_name, []))

    def find_kind(self, group, kind):
        with self._lock:
            for rt in self._types.values():
                if rt.group == group and rt.kind == kind:
                    return rt
        return None

    def all_types(self):
        with self._lock:
            return list(self._types.values())

    def install_crd(self, crd):
        name = (crd.get("metadata") or {}).get("name")
        with self._lock:
            for rt in self._crds.pop(name, []):
                self._types.pop((rt.group, rt.version, rt.plural), None)
            types = crd_types(crd)
            for rt in types:
                self._types[(rt.group, rt.version, rt.plural)] = rt
            self._crds[name] = types
            self.generation += 1
        return types

    def remove_crd(self, name):
        with self._lock:
            for rt in self._crds.pop(name, []):
                self._types.pop((rt.group, rt.version, rt.plural), None)
            self.generation += 1

    def groups(self):
        """[(group, [versions, preferred first])] in a stable order: core-ish built-in
        groups first (as kube-apiserver lists them), then CRD groups by name."""
        order = ["", "apps", "coordination.k8s.io", "policy", "rbac.authorization.k8s.io",
                 "apiextensions.k8s.io"]
        with self._lock:
            gv = {}
            for rt in self._types.values():
                vs = gv.setdefault(rt.group, [])
                if rt.version not in vs:
                    vs.append(rt.version)
        out = []
        for g in order + sorted(g for g in gv if g not in order):
            if g in gv:
                out.append((g, sorted(gv[g], key=_version_priority)))
        return out

    def types_in(self, group, version):
        with self._lock:
            return sorted((rt for rt in self._types.values()
                           if rt.group == group and rt.version == version), key=lambda r: r.plural)


def _version_priority(v):
    """Kubernetes version ordering: GA > beta > alpha, higher numbers first."""
    import re
    m = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", v)
    if not m:
        return (3, 0, 0, v)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, v)
