"""Small helpers on Kubernetes objects: time formats, names, metadata, managedFields."""

import copy
import datetime
import json
import random
import re
import time
import uuid

_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_GEN_CHARS = "bcdfghjklmnpqrstvwxz2456789"   # apiserver's generateName alphabet


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def now_micro():
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%06dZ" % int((t % 1) * 1e6)


def parse_time(s):
    """RFC 3339 (with optional fraction and offset) -> POSIX seconds, or None."""
    if not isinstance(s, str):
        return None
    m = re.match(r"^(\d{4}-\d{2}-\d{2})[Tt](\d{2}:\d{2}:\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$", s)
    if not m:
        return None
    try:
        base = datetime.datetime.strptime(m.group(1) + "T" + m.group(2), "%Y-%m-%dT%H:%M:%S")
    except ValueError:
        return None
    tz = m.group(4)
    off = 0
    if tz not in ("Z", "z"):
        sign = 1 if tz[0] == "+" else -1
        off = sign * (int(tz[1:3]) * 3600 + int(tz[4:6]) * 60)
    frac = float(m.group(3)) if m.group(3) else 0.0
    return base.replace(tzinfo=datetime.timezone.utc).timestamp() - off + frac


def normalize_micro(s):
    """MicroTime as the apiserver re-serialises it: UTC with exactly 6 digits."""
    t = parse_time(s)
    if t is None:
        return None
    secs = int(t // 1)
    micros = int(round((t - secs) * 1e6))
    if micros == 1000000:
        secs, micros = secs + 1, 0
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(secs)) + ".%06dZ" % micros


def normalize_time(s):
    """metav1.Time: second precision, UTC."""
    t = parse_time(s)
    if t is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(t // 1)))


def human_duration(seconds):
    """apimachinery duration.HumanDuration, used for AGE columns."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 120:
        return "%ds" % s
    minutes = s // 60
    if minutes < 10:
        return "%dm" % minutes if s % 60 == 0 else "%dm%ds" % (minutes, s % 60)
    if minutes < 180:
        return "%dm" % minutes
    hours = s // 3600
    if hours < 8:
        return "%dh" % hours if minutes % 60 == 0 else "%dh%dm" % (hours, minutes % 60)
    if hours < 48:
        return "%dh" % hours
    if hours < 24 * 8:
        return "%dd" % (hours // 24) if hours % 24 == 0 else "%dd%dh" % (hours // 24, hours % 24)
    if hours < 24 * 365 * 2:
        return "%dd" % (hours // 24)
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return "%dy" % (hours // 24 // 365) if dy == 0 else "%dy%dd" % (hours // 24 // 365, dy)
    return "%dy" % (hours // 24 // 365)


def age(ts):
    t = parse_time(ts)
    return "<unknown>" if t is None else human_duration(time.time() - t)


def new_uid():
    return str(uuid.uuid4())


def generate_name(prefix):
    if len(prefix) > 58:
        prefix = prefix[:58]
    return prefix + "".join(random.choice(_GEN_CHARS) for _ in range(5))


def name_problem(rt, name):
    """Why a name is invalid for this resource (None if fine)."""
    if rt.group == "rbac.authorization.k8s.io":
        # RBAC names are path segments: "system:controller:x" is legal
        if name in (".", "..") or "/" in name or "%" in name:
            return "may not contain '/' or '%', or be '.' or '..'"
        return None
    if rt.plural == "namespaces":
        if len(name) > 63 or not _DNS_LABEL.match(name):
            return ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                    "or '-', and must start and end with an alphanumeric character")
        return None
    if rt.plural == "services":
        if len(name) > 63 or not _DNS1035_LABEL.match(name):
            return ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                    "start with an alphabetic character, and end with an alphanumeric character")
        return None
    if len(name) > 253 or not _DNS_SUBDOMAIN.match(name):
        return ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                "'-' or '.', and must start and end with an alphanumeric character")
    return None


def meta(obj):
    md = obj.get("metadata")
    if not isinstance(md, dict):
        md = {}
        obj["metadata"] = md
    return md


def deepcopy(obj):
    return copy.deepcopy(obj)


def encode(obj):
    """Stored form: compact JSON without resourceVersion (the key's mod_revision is)."""
    md = obj.get("metadata")
    rv = None
    if isinstance(md, dict) and "resourceVersion" in md:
        rv = md.pop("resourceVersion")
    try:
        return json.dumps(obj, separators=(",", ":")).encode()
    finally:
        if rv is not None:
            md["resourceVersion"] = rv


def decode(value, rv):
    obj = json.loads(value)
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    meta(obj)["resourceVersion"] = str(rv)
    return obj


def normalize_meta(obj, builtin=True):
    """What a round trip through Go's ObjectMeta (omitempty) does: empty or null
    labels, annotations, finalizers, ownerReferences and managedFields disappear.
    Built-in objects also lose null top-level fields."""
    md = meta(obj)
    for k in ("labels", "annotations", "finalizers", "ownerReferences", "managedFields",
              "generateName", "deletionGracePeriodSeconds", "deletionTimestamp", "generation"):
        if k in md and (md[k] is None or md[k] == [] or md[k] == {} or md[k] == ""):
            del md[k]
    if builtin:
        for k in [k for k, v in obj.items() if v is None]:
            del obj[k]
    return obj


def without_volatile(obj):
    """The object minus fields that do not count as a change (no-op detection)."""
    o = dict(obj)
    md = dict(o.get("metadata") or {})
    for k in ("resourceVersion", "managedFields"):
        md.pop(k, None)
    o["metadata"] = md
    return o


# -- managedFields ---------------------------------------------------------------
def merge_fieldsets(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = merge_fieldsets(out[k], v) if k in out and isinstance(out[k], dict) else v
    return out


def _plain_fieldset(value):
    if isinstance(value, dict):
        return {"f:" + k: _plain_fieldset(v) for k, v in value.items()}
    return {}


def changed_fieldset(old, new):
    """Fields of new that differ from old (what an Update manager comes to own).
    Lists are treated as atomic here; only apply tracks list items by key."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = {}
        for k, v in new.items():
            if k not in old:
                out["f:" + k] = _plain_fieldset(v)
            elif old[k] != v:
                out["f:" + k] = changed_fieldset(old[k], v)
        return out
    return {}


def strip_server_fields(fs):
    """Fields a manager never owns: uid, resourceVersion, timestamps, managedFields..."""
    md = fs.get("f:metadata")
    if isinstance(md, dict):
        for k in ("f:name", "f:namespace", "f:uid", "f:resourceVersion", "f:creationTimestamp",
                  "f:generation",
                  "f:managedFields", "f:deletionTimestamp", "f:deletionGracePeriodSeconds",
                  "f:selfLink"):
            md.pop(k, None)
        if not md:
            fs.pop("f:metadata")
    return fs


def set_managed(obj, manager, operation, api_version, fields, subresource=None, replace=False):
    md = meta(obj)
    entries = [e for e in md.get("managedFields") or [] if isinstance(e, dict)]
    entry = None
    for e in entries:
        if e.get("manager") == manager and e.get("operation") == operation and \
                e.get("subresource") == subresource:
            entry = e
            break
    fields = strip_server_fields(fields)
    if entry is None:
        if not fields and operation == "Update":
            md["managedFields"] = entries
            if not entries:
                md.pop("managedFields", None)
            return
        entry = {"manager": manager, "operation": operation}
        entries.append(entry)
        prev = {}
    else:
        prev = entry.get("fieldsV1") or {}
    entry["apiVersion"] = api_version
    entry["time"] = now_rfc3339()
    entry["fieldsType"] = "FieldsV1"
    entry["fieldsV1"] = fields if replace else merge_fieldsets(prev, fields)
    if subresource:
        entry["subresource"] = subresource
    # keep the apiserver's key order
    ordered = {k: entry[k] for k in ("manager", "operation", "apiVersion", "time", "fieldsType",
                                     "fieldsV1", "subresource") if k in entry}
    entries[entries.index(entry)] = ordered
    md["managedFields"] = entries
