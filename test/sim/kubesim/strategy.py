"""Per-type rules of the built-in resources (the apiserver's registry strategies).

Only what clients can observe is modelled: defaults the apiserver fills in, status
reset on create, immutable fields, Secret stringData, Namespace phase and finalizers,
Service cluster IPs, Lease MicroTime normalisation, CRD status.  Each hook mutates
the object in place; validation returns causes (reason, field, message).
"""

import base64
import binascii
import hashlib
import json
import re

from . import cron, errors
from .objects import meta, normalize_micro, now_rfc3339

# top-level fields per built-in kind, for fieldValidation=Strict
_TOP = {
    "Node": {"spec", "status"}, "Pod": {"spec", "status"}, "Endpoints": {"subsets"},
    "ConfigMap": {"data", "binaryData", "immutable"},
    "Secret": {"data", "stringData", "type", "immutable"}, "Service": {"spec", "status"},
    "Namespace": {"spec", "status"},
    "Event": {"involvedObject", "reason", "message", "source", "firstTimestamp",
              "lastTimestamp", "count", "type", "eventTime", "series", "action", "related",
              "reportingComponent", "reportingInstance"},
    "ServiceAccount": {"secrets", "imagePullSecrets", "automountServiceAccountToken"},
    "Role": {"rules"}, "ClusterRole": {"rules", "aggregationRule"},
    "RoleBinding": {"subjects", "roleRef"}, "ClusterRoleBinding": {"subjects", "roleRef"},
    "Lease": {"spec"}, "PodDisruptionBudget": {"spec", "status"},
    "Deployment": {"spec", "status"}, "CustomResourceDefinition": {"spec", "status"},
    "Job": {"spec", "status"}, "CronJob": {"spec", "status"}, "PersistentVolume": {"spec", "status"},
    "PersistentVolumeClaim": {"spec", "status"},
}


def allowed_top_fields(rt):
    if rt.is_custom:
        return None
    return {"apiVersion", "kind", "metadata"} | _TOP.get(rt.kind, set())


# -- defaults ----------------------------------------------------------------------
def _pod_spec_defaults(spec):
    if not isinstance(spec, dict):
        return
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if not isinstance(c, dict):
            continue
        c.setdefault("terminationMessagePath", "/dev/termination-log")
        c.setdefault("terminationMessagePolicy", "File")
        c.setdefault("resources", {})
        image = c.get("image", "")
        tag_part = image.rsplit("/", 1)[-1]
        latest = "@" not in image and (":" not in tag_part or tag_part.endswith(":latest"))
        c.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
        for p in c.get("ports") or []:
            if isinstance(p, dict):
                p.setdefault("protocol", "TCP")


def _qos_class(spec):
    cs = [c for c in (spec or {}).get("containers") or [] if isinstance(c, dict)]
    reqs = [((c.get("resources") or {}).get("requests") or {}) for c in cs]
    lims = [((c.get("resources") or {}).get("limits") or {}) for c in cs]
    if not any(reqs) and not any(lims):
        return "BestEffort"
    for r, l in zip(reqs, lims):
        for res in ("cpu", "memory"):
            if res not in l or r.get(res, l[res]) != l[res]:
                return "Burstable"
    return "Guaranteed"


def _service_defaults(obj, old):
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("type", "ClusterIP")
    spec.setdefault("sessionAffinity", "None")
    for p in spec.get("ports") or []:
        if isinstance(p, dict):
            p.setdefault("protocol", "TCP")
            if "port" in p:
                p.setdefault("targetPort", p["port"])
    if spec["type"] == "ExternalName":
        return
    old_spec = (old or {}).get("spec") or {}
    if not spec.get("clusterIP") and old_spec.get("clusterIP"):
        spec["clusterIP"] = old_spec["clusterIP"]
        spec["clusterIPs"] = old_spec.get("clusterIPs") or [old_spec["clusterIP"]]
    if not spec.get("clusterIP"):
        # a stable fake address from the service network OpenShift uses by default
        md = meta(obj)
        h = hashlib.sha256(("%s/%s" % (md.get("namespace"), md.get("name"))).encode()).digest()
        spec["clusterIP"] = "172.30.%d.%d" % (h[0], max(h[1], 1))
    spec.setdefault("clusterIPs", [spec["clusterIP"]])
    if spec["clusterIP"] != "None":
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
    spec.setdefault("internalTrafficPolicy", "Cluster")


def _deployment_defaults(obj):
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    spec.setdefault("replicas", 1)
    spec.setdefault("revisionHistoryLimit", 10)
    spec.setdefault("progressDeadlineSeconds", 600)
    spec.setdefault("strategy", {"type": "RollingUpdate",
                                 "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
    tmpl = spec.get("template")
    if isinstance(tmpl, dict):
        _pod_spec_defaults(tmpl.get("spec"))


def _job_defaults(obj):
    """What kube-apiserver fills in on a Job: counts, and (without manualSelector) the
    selector and template labels that tie its pods to it by uid."""
    md = meta(obj)
    spec = obj.setdefault("spec", {})
    for k, v in (("parallelism", 1), ("completions", 1), ("backoffLimit", 6),
                 ("completionMode", "NonIndexed"), ("suspend", False)):
        spec.setdefault(k, v)
    tmpl = spec.setdefault("template", {})
    labels = meta(tmpl).setdefault("labels", {})
    if not spec.get("manualSelector"):
        uid, name = md.get("uid", ""), md.get("name", "")
        spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
        labels.update({"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": name,
                       "controller-uid": uid, "job-name": name})
    _pod_spec_defaults(tmpl.setdefault("spec", {}))


def _cronjob_defaults(obj):
    spec = obj.setdefault("spec", {})
    for k, v in (("concurrencyPolicy", "Allow"), ("suspend", False), ("successfulJobsHistoryLimit", 3),
                 ("failedJobsHistoryLimit", 1)):
        spec.setdefault(k, v)
    tmpl = spec.setdefault("jobTemplate", {}).setdefault("spec", {}).setdefault("template", {})
    _pod_spec_defaults(tmpl.setdefault("spec", {}))


def _secret_normalize(obj):
    obj.setdefault("type", "Opaque")
    sd = obj.pop("stringData", None)
    if isinstance(sd, dict) and sd:
        data = obj.get("data")
        if not isinstance(data, dict):
            data = {}
        for k, v in sd.items():
            data[k] = base64.b64encode(str(v).encode()).decode()
        obj["data"] = data
    for field in ("data",):
        for k, v in (obj.get(field) or {}).items():
            try:
                base64.b64decode(v or "", validate=True)
            except (binascii.Error, TypeError, ValueError):
                raise errors.bad_request("Secret in version \"v1\" cannot be handled as a Secret: "
                                         "illegal base64 data at input byte 0 (key %s)" % k)


def _lease_normalize(obj):
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    for f in ("acquireTime", "renewTime"):
        v = spec.get(f)
        if v is None:
            continue
        n = normalize_micro(v)
        if n is None:
            raise errors.bad_request('Lease in version "v1" cannot be handled as a Lease: '
                                     'parsing time "%s" as "2006-01-02T15:04:05.000000Z07:00": '
                                     "cannot parse" % v)
        spec[f] = n


def crd_status(crd):
    spec = crd.get("spec") or {}
    names = dict(spec.get("names") or {})
    names.setdefault("singular", (names.get("kind") or "").lower())
    names.setdefault("listKind", (names.get("kind") or "") + "List")
    now = now_rfc3339()
    old = crd.get("status") or {}
    stored = list(old.get("storedVersions") or [])
    for v in spec.get("versions") or []:
        if v.get("storage") and v.get("name") not in stored:
            stored.append(v.get("name"))
    return {"conditions": [
        {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now,
         "reason": "NoConflicts", "message": "no conflicts found"},
        {"type": "Established", "status": "True", "lastTransitionTime": now,
         "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}],
        "acceptedNames": names, "storedVersions": stored}


# -- hooks --------------------------------------------------------------------------
def on_create(rt, obj):
    """Type-specific create preparation (after generic metadata handling)."""
    k = (rt.group, rt.plural)
    if k == ("", "namespaces"):
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        spec.setdefault("finalizers", ["kubernetes"])
        obj["spec"] = spec
        obj["status"] = {"phase": "Active"}
    elif k == ("", "pods"):
        _pod_spec_defaults(obj.setdefault("spec", {}))
        obj["status"] = {"phase": "Pending", "qosClass": _qos_class(obj.get("spec"))}
    elif k == ("", "secrets"):
        _secret_normalize(obj)
    elif k == ("", "services"):
        obj["status"] = {"loadBalancer": {}}
        _service_defaults(obj, None)
    elif k == ("apps", "deployments"):
        obj.pop("status", None)
        _deployment_defaults(obj)
    elif k == ("batch", "jobs"):
        obj["status"] = {}
        _job_defaults(obj)
    elif k == ("batch", "cronjobs"):
        obj["status"] = {}
        _cronjob_defaults(obj)
    elif k == ("", "persistentvolumeclaims"):
        obj["status"] = {"phase": "Pending"}
    elif k == ("", "persistentvolumes"):
        obj["status"] = {"phase": "Available"}
    elif k == ("policy", "poddisruptionbudgets"):
        obj.pop("status", None)
    elif k == ("coordination.k8s.io", "leases"):
        _lease_normalize(obj)
    elif k == ("apiextensions.k8s.io", "customresourcedefinitions"):
        obj["status"] = crd_status(obj)


def on_update(rt, new, old, subresource):
    k = (rt.group, rt.plural)
    if subresource == "status":
        return
    if k == ("", "pods"):
        _pod_spec_defaults(new.setdefault("spec", {}))
    elif k == ("", "secrets"):
        _secret_normalize(new)
    elif k == ("", "services"):
        _service_defaults(new, old)
    elif k == ("apps", "deployments"):
        _deployment_defaults(new)
    elif k == ("coordination.k8s.io", "leases"):
        _lease_normalize(new)
    elif k == ("", "namespaces"):
        # spec.finalizers only change through /finalize
        new["spec"] = old.get("spec", {})
    elif k == ("apiextensions.k8s.io", "customresourcedefinitions"):
        st = dict(old.get("status") or crd_status(new))
        st["acceptedNames"] = crd_status(new)["acceptedNames"]
        st["storedVersions"] = crd_status(dict(new, status=st))["storedVersions"]
        new["status"] = st


_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_QUALIFIED = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                        r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


def _qualified_ok(k):
    name = k.rsplit("/", 1)[-1]
    return bool(_QUALIFIED.match(k)) and len(name) <= 63 and len(k) - len(name) <= 254


def validate_meta(obj):
    md = meta(obj)
    causes = []
    for k, v in (md.get("labels") or {}).items():
        if not _qualified_ok(k):
            causes.append(("FieldValueInvalid", "metadata.labels",
                           'Invalid value: "%s": name part must consist of alphanumeric characters, '
                           "'-', '_' or '.', and must start and end with an alphanumeric "
                           "character" % k))
        if not isinstance(v, str) or len(v) > 63 or not _LABEL_VALUE.match(v):
            causes.append(("FieldValueInvalid", "metadata.labels",
                           "Invalid value: %s: a valid label must be an empty string or consist of "
                           "alphanumeric characters, '-', '_' or '.', and must start and end with "
                           "an alphanumeric character" % json.dumps(v)))
    ann = md.get("annotations") or {}
    for k, v in ann.items():
        if not _qualified_ok(k.lower()):
            causes.append(("FieldValueInvalid", "metadata.annotations",
                           'Invalid value: "%s": name part must consist of alphanumeric '
                           "characters, '-', '_' or '.'" % k))
        if not isinstance(v, str):
            causes.append(("FieldValueTypeInvalid", "metadata.annotations." + k,
                           "Invalid value: must be a string"))
    if len(json.dumps(ann)) > 256 * 1024:
        causes.append(("FieldValueTooLong", "metadata.annotations",
                       "Too long: must have at most 262144 bytes"))
    for i, ref in enumerate(md.get("ownerReferences") or []):
        for f in ("apiVersion", "kind", "name", "uid"):
            if not isinstance(ref, dict) or not ref.get(f):
                causes.append(("FieldValueRequired" if f != "apiVersion" else "FieldValueInvalid",
                               "metadata.ownerReferences[%d].%s" % (i, f), "Required value"))
    fin = md.get("finalizers")
    if fin is not None and (not isinstance(fin, list) or not all(isinstance(f, str) for f in fin)):
        causes.append(("FieldValueTypeInvalid", "metadata.finalizers", "Invalid value: must be a "
                       "list of strings"))
    return causes


def _immutable(new, old, path, causes, what=None):
    cur_n, cur_o = new, old
    for p in path.split("."):
        cur_n = cur_n.get(p) if isinstance(cur_n, dict) else None
        cur_o = cur_o.get(p) if isinstance(cur_o, dict) else None
    if cur_n != cur_o:
        causes.append(("FieldValueInvalid", path, "Invalid value: %s: %s" %
                       (json.dumps(cur_n), what or "field is immutable")))


def validate(rt, obj, old, subresource=None):
    causes = validate_meta(obj)
    k = (rt.group, rt.plural)
    if subresource == "status":
        return causes
    if k in (("rbac.authorization.k8s.io", "rolebindings"),
             ("rbac.authorization.k8s.io", "clusterrolebindings")):
        ref = obj.get("roleRef")
        if not isinstance(ref, dict) or not ref.get("name") or not ref.get("kind"):
            causes.append(("FieldValueRequired", "roleRef.name", "Required value"))
        elif old is not None and old.get("roleRef") != ref:
            causes.append(("FieldValueInvalid", "roleRef", "Invalid value: %s: cannot change "
                           "roleRef" % json.dumps(ref)))
    if k in (("", "configmaps"), ("", "secrets")) and old is not None and old.get("immutable"):
        for f in ("data", "binaryData", "immutable"):
            if obj.get(f) != old.get(f):
                causes.append(("FieldValueForbidden", f, "Forbidden: field is immutable when "
                               "`immutable` is set"))
                break
    if k == ("apps", "deployments"):
        sel = (obj.get("spec") or {}).get("selector")
        if not sel:
            causes.append(("FieldValueRequired", "spec.selector", "Required value"))
        if old is not None:
            _immutable(obj, old, "spec.selector", causes)
    if k == ("batch", "jobs"):
        rp = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("restartPolicy")
        if rp not in ("Never", "OnFailure"):
            causes.append(("FieldValueNotSupported", "spec.template.spec.restartPolicy",
                           'Unsupported value: "%s": supported values: "OnFailure", "Never"' % rp))
        if old is not None:
            _immutable(obj, old, "spec.selector", causes)
            _immutable(obj, old, "spec.template", causes)
    if k == ("batch", "cronjobs"):
        spec = obj.get("spec") or {}
        try:
            cron.Schedule(spec.get("schedule") or "")
        except cron.CronError as e:
            causes.append(("FieldValueInvalid", "spec.schedule", 'Invalid value: "%s": %s' % (
                spec.get("schedule", ""), e)))
        if spec.get("timeZone"):
            try:
                cron.Schedule("* * * * *", spec["timeZone"])
            except cron.CronError:
                causes.append(("FieldValueInvalid", "spec.timeZone", 'Invalid value: "%s": unknown time zone %s'
                               % (spec["timeZone"], spec["timeZone"])))
        if spec.get("concurrencyPolicy") not in ("Allow", "Forbid", "Replace"):
            causes.append(("FieldValueNotSupported", "spec.concurrencyPolicy",
                           'Unsupported value: "%s": supported values: "Allow", "Forbid", "Replace"'
                           % spec.get("concurrencyPolicy")))
        rp = (((spec.get("jobTemplate") or {}).get("spec") or {}).get("template") or {}).get("spec", {}) \
            .get("restartPolicy")
        if rp not in ("Never", "OnFailure"):
            causes.append(("FieldValueNotSupported", "spec.jobTemplate.spec.template.spec.restartPolicy",
                           'Unsupported value: "%s": supported values: "OnFailure", "Never"' % rp))
    if k == ("", "persistentvolumeclaims") and old is not None:
        for f in ("spec.accessModes", "spec.storageClassName", "spec.resources"):
            _immutable(obj, old, f, causes, "spec is immutable after creation except "
                       "resources.requests and volumeAttributesClassName for bound claims")
    if k == ("", "pods") and old is not None:
        causes += _pod_update_problems(obj, old)
    if k == ("", "pods") and old is None:
        if not (obj.get("spec") or {}).get("containers"):
            causes.append(("FieldValueRequired", "spec.containers", "Required value"))
    if k == ("apiextensions.k8s.io", "customresourcedefinitions"):
        causes += _crd_problems(obj, old)
    return causes


def _pod_update_problems(new, old):
    def neutral(spec):
        s = json.loads(json.dumps(spec or {}))
        for f in ("activeDeadlineSeconds", "tolerations", "terminationGracePeriodSeconds"):
            s.pop(f, None)
        for c in (s.get("containers") or []) + (s.get("initContainers") or []):
            if isinstance(c, dict):
                c.pop("image", None)
        return s
    if neutral(new.get("spec")) != neutral(old.get("spec")):
        return [("FieldValueForbidden", "spec", "Forbidden: pod updates may not change fields other "
                 "than `spec.containers[*].image`,`spec.initContainers[*].image`,"
                 "`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing "
                 "tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it "
                 "was previously negative)")]
    return []


def _crd_problems(crd, old):
    causes = []
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group") or ""
    if not group or "." not in group:
        causes.append(("FieldValueInvalid", "spec.group", 'Invalid value: "%s": should be a domain '
                       "with at least one dot" % group))
    for f in ("plural", "kind"):
        if not names.get(f):
            causes.append(("FieldValueRequired", "spec.names." + f, "Required value"))
    name = meta(crd).get("name", "")
    if names.get("plural") and name != "%s.%s" % (names.get("plural"), group):
        causes.append(("FieldValueInvalid", "metadata.name", 'Invalid value: "%s": must be '
                       "spec.names.plural+\".\"+spec.group" % name))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        causes.append(("FieldValueNotSupported", "spec.scope", 'Unsupported value: "%s": supported '
                       'values: "Cluster", "Namespaced"' % spec.get("scope")))
    versions = spec.get("versions") or []
    if not versions:
        causes.append(("FieldValueRequired", "spec.versions", "Required value"))
    elif sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(("FieldValueInvalid", "spec.versions", "Invalid value: must have exactly one "
                       "version marked as storage version"))
    if old is not None:
        _immutable(crd, old, "spec.scope", causes)
        _immutable(crd, old, "spec.group", causes)
    return causes
