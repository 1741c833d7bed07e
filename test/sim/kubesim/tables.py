"""Table output for `kubectl get` (https://kubernetes.io/docs/reference/using-api/api-concepts/#receiving-resources-as-tables).

Built-ins get the columns of the apiserver's printers (nodes NAME STATUS ROLES AGE
VERSION, pods NAME READY STATUS RESTARTS AGE, and a few more); custom resources use
their additionalPrinterColumns; anything else Name + Age.  Rows carry the object
as PartialObjectMetadata unless includeObject says otherwise.
"""

import time

from . import jsonpath
from .objects import age, parse_time, human_duration

_DESC = {"Name": "Name must be unique within a namespace. Is required when creating resources, "
                 "although some resources may allow a client to request the generation of an "
                 "appropriate name automatically.",
         "Age": "CreationTimestamp is a timestamp representing the server time when this object "
                "was created."}


def _g(obj, path, default=None):
    cur = obj
    for p in path.split("."):
        if not isinstance(cur, dict):
            return default
        cur = cur.get(p)
    return default if cur is None else cur


def _name(o):
    return _g(o, "metadata.name", "")


def _age(o):
    return age(_g(o, "metadata.creationTimestamp"))


def _node_status(o):
    ready = "Unknown"
    for c in _g(o, "status.conditions", []) or []:
        if c.get("type") == "Ready":
            ready = "Ready" if c.get("status") == "True" else "NotReady"
    out = [ready]
    if _g(o, "spec.unschedulable"):
        out.append("SchedulingDisabled")
    return ",".join(out)


def _node_roles(o):
    roles = sorted(k.split("/", 1)[1] for k in (_g(o, "metadata.labels", {}) or {})
                   if k.startswith("node-role.kubernetes.io/") and "/" in k)
    roles = [r for r in roles if r]
    return ",".join(roles) if roles else "<none>"


def _node_addr(kind):
    def f(o):
        for a in _g(o, "status.addresses", []) or []:
            if a.get("type") == kind:
                return a.get("address", "")
        return "<none>"
    return f


def _pod_ready(o):
    cs = _g(o, "status.containerStatuses", []) or []
    total = len(_g(o, "spec.containers", []) or [])
    return "%d/%d" % (sum(1 for c in cs if c.get("ready")), total)


def _pod_status(o):
    if _g(o, "metadata.deletionTimestamp"):
        return "Terminating"
    reason = _g(o, "status.reason") or _g(o, "status.phase", "Unknown")
    for c in _g(o, "status.initContainerStatuses", []) or []:
        st = c.get("state") or {}
        if st.get("terminated", {}).get("exitCode", 0) != 0:
            return "Init:" + (st["terminated"].get("reason") or "Error")
        if st.get("waiting", {}).get("reason") not in (None, "PodInitializing"):
            return "Init:" + st["waiting"]["reason"]
    for c in _g(o, "status.containerStatuses", []) or []:
        st = c.get("state") or {}
        if st.get("waiting", {}).get("reason"):
            reason = st["waiting"]["reason"]
        elif st.get("terminated", {}).get("reason"):
            reason = st["terminated"]["reason"]
    return reason


def _pod_restarts(o):
    return sum(int(c.get("restartCount") or 0) for c in _g(o, "status.containerStatuses", []) or [])


def _event_object(o):
    io = o.get("involvedObject") or {}
    return "%s/%s" % ((io.get("kind") or "").lower(), io.get("name", ""))


def _event_last_seen(o):
    ts = o.get("lastTimestamp") or o.get("eventTime") or _g(o, "metadata.creationTimestamp")
    return age(ts)


def _svc_ports(o):
    out = []
    for p in _g(o, "spec.ports", []) or []:
        s = "%s/%s" % (p.get("port"), p.get("protocol", "TCP"))
        if p.get("nodePort"):
            s = "%s:%s/%s" % (p.get("port"), p.get("nodePort"), p.get("protocol", "TCP"))
        out.append(s)
    return ",".join(out) if out else "<none>"


def _col(name, fn, ctype="string", priority=0, fmt=""):
    return (name, ctype, priority, fmt, fn)


_NAME = _col("Name", _name, fmt="name")
_AGE = _col("Age", _age)

BUILTIN = {
    ("", "nodes"): [_NAME, _col("Status", _node_status), _col("Roles", _node_roles), _AGE,
                    _col("Version", lambda o: _g(o, "status.nodeInfo.kubeletVersion", "")),
                    _col("Internal-IP", _node_addr("InternalIP"), priority=1),
                    _col("External-IP", _node_addr("ExternalIP"), priority=1),
                    _col("OS-Image", lambda o: _g(o, "status.nodeInfo.osImage", "<unknown>"), priority=1),
                    _col("Kernel-Version", lambda o: _g(o, "status.nodeInfo.kernelVersion", "<unknown>"),
                         priority=1),
                    _col("Container-Runtime", lambda o: _g(o, "status.nodeInfo.containerRuntimeVersion",
                                                           "<unknown>"), priority=1)],
    ("", "pods"): [_NAME, _col("Ready", _pod_ready), _col("Status", _pod_status),
                   _col("Restarts", _pod_restarts, "integer"), _AGE,
                   _col("IP", lambda o: _g(o, "status.podIP", "<none>"), priority=1),
                   _col("Node", lambda o: _g(o, "spec.nodeName", "<none>"), priority=1),
                   _col("Nominated Node", lambda o: _g(o, "status.nominatedNodeName", "<none>"),
                        priority=1),
                   _col("Readiness Gates", lambda o: "<none>", priority=1)],
    ("", "namespaces"): [_NAME, _col("Status", lambda o: _g(o, "status.phase", "")), _AGE],
    ("", "configmaps"): [_NAME, _col("Data", lambda o: len(o.get("data") or {}) +
                                     len(o.get("binaryData") or {}), "integer"), _AGE],
    ("", "secrets"): [_NAME, _col("Type", lambda o: o.get("type", "")),
                      _col("Data", lambda o: len(o.get("data") or {}), "integer"), _AGE],
    ("", "services"): [_NAME, _col("Type", lambda o: _g(o, "spec.type", "")),
                       _col("Cluster-IP", lambda o: _g(o, "spec.clusterIP", "<none>")),
                       _col("External-IP", lambda o: "<none>"),
                       _col("Port(s)", _svc_ports), _AGE,
                       _col("Selector", lambda o: ",".join("%s=%s" % kv for kv in
                                                           (_g(o, "spec.selector", {}) or {}).items())
                            or "<none>", priority=1)],
    ("", "endpoints"): [_NAME, _col("Endpoints", lambda o: ",".join(
        "%s:%s" % (a.get("ip"), p.get("port")) for s in o.get("subsets") or []
        for a in s.get("addresses") or [] for p in s.get("ports") or [{}]) or "<none>"), _AGE],
    ("", "serviceaccounts"): [_NAME, _col("Secrets", lambda o: len(o.get("secrets") or []),
                                          "integer"), _AGE],
    ("", "events"): [_col("Last Seen", _event_last_seen), _col("Type", lambda o: o.get("type", "")),
                     _col("Reason", lambda o: o.get("reason", "")), _col("Object", _event_object),
                     _col("Message", lambda o: (o.get("message") or "").strip())],
    ("apps", "deployments"): [_NAME,
                              _col("Ready", lambda o: "%d/%d" % (_g(o, "status.readyReplicas", 0),
                                                                 _g(o, "spec.replicas", 0))),
                              _col("Up-to-date", lambda o: _g(o, "status.updatedReplicas", 0),
                                   "integer"),
                              _col("Available", lambda o: _g(o, "status.availableReplicas", 0),
                                   "integer"), _AGE],
    ("coordination.k8s.io", "leases"): [_NAME, _col("Holder", lambda o: _g(o, "spec.holderIdentity",
                                                                           "")), _AGE],
    ("policy", "poddisruptionbudgets"): [
        _NAME, _col("Min Available", lambda o: str(_g(o, "spec.minAvailable", "N/A"))),
        _col("Max Unavailable", lambda o: str(_g(o, "spec.maxUnavailable", "N/A"))),
        _col("Allowed Disruptions", lambda o: _g(o, "status.disruptionsAllowed", 0), "integer"),
        _AGE],
    ("apiextensions.k8s.io", "customresourcedefinitions"): [
        _NAME, _col("Created At", lambda o: _g(o, "metadata.creationTimestamp", ""), "date")],
    ("rbac.authorization.k8s.io", "rolebindings"): [
        _NAME, _col("Role", lambda o: "%s/%s" % (_g(o, "roleRef.kind", ""), _g(o, "roleRef.name", ""))),
        _AGE],
    ("rbac.authorization.k8s.io", "clusterrolebindings"): [
        _NAME, _col("Role", lambda o: "%s/%s" % (_g(o, "roleRef.kind", ""), _g(o, "roleRef.name", ""))),
        _AGE],
    ("rbac.authorization.k8s.io", "roles"): [
        _NAME, _col("Created At", lambda o: _g(o, "metadata.creationTimestamp", ""), "date")],
    ("rbac.authorization.k8s.io", "clusterroles"): [
        _NAME, _col("Created At", lambda o: _g(o, "metadata.creationTimestamp", ""), "date")],
}


def _cr_cell(ctype, value):
    """cellForJSONValue of apiextensions' table convertor."""
    if value is None:
        return None
    if ctype == "integer":
        if isinstance(value, bool):
            return None
        if isinstance(value, (int, float)):
            return int(value)
    elif ctype == "number":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return value
    elif ctype == "boolean":
        return value if isinstance(value, bool) else None
    elif ctype == "string":
        return value if isinstance(value, str) else None
    elif ctype == "date":
        if isinstance(value, str):
            t = parse_time(value)
            return "<invalid>" if t is None else human_duration(time.time() - t)
    return None


def _definitions(rt):
    if rt.is_custom:
        defs = [{"name": "Name", "type": "string", "format": "name", "description": _DESC["Name"],
                 "priority": 0}]
        for c, _ in rt.columns():
            defs.append({"name": c.get("name", ""), "type": c.get("type", "string"),
                         "format": c.get("format", ""), "description": c.get("description", ""),
                         "priority": int(c.get("priority", 0))})
        return defs
    cols = BUILTIN.get((rt.group, rt.plural), [_NAME, _AGE])
    return [{"name": n, "type": t, "format": f, "description": _DESC.get(n, n), "priority": p}
            for (n, t, p, f, _) in cols]


def _cells(rt, obj):
    if rt.is_custom:
        cells = [_name(obj)]
        for c, steps in rt.columns():
            v = None
            if steps is not None:
                res = jsonpath.find(obj, steps)
                v = res[0] if res else None
            cells.append(_cr_cell(c.get("type", "string"), v))
        return cells
    cols = BUILTIN.get((rt.group, rt.plural), [_NAME, _AGE])
    out = []
    for (n, t, p, f, fn) in cols:
        try:
            out.append(fn(obj))
        except (TypeError, ValueError, AttributeError):
            out.append(None)
    return out


def partial_metadata(obj, api_version="meta.k8s.io/v1"):
    return {"kind": "PartialObjectMetadata", "apiVersion": api_version,
            "metadata": obj.get("metadata") or {}}


def _row(rt, obj, include):
    row = {"cells": _cells(rt, obj)}
    if include == "Object":
        o = dict(obj)
        o.setdefault("kind", rt.kind)
        o.setdefault("apiVersion", rt.api_version)
        row["object"] = o
    elif include != "None":
        row["object"] = partial_metadata(obj)
    return row


def table(rt, objs, rv=None, cont=None, remaining=None, include="Metadata", headers=True,
          api_version="meta.k8s.io/v1"):
    md = {}
    if rv is not None:
        md["resourceVersion"] = str(rv)
    if cont:
        md["continue"] = cont
    if remaining is not None:
        md["remainingItemCount"] = remaining
    return {"kind": "Table", "apiVersion": api_version, "metadata": md,
            "columnDefinitions": _definitions(rt) if headers else None,
            "rows": [_row(rt, o, include) for o in objs]}
