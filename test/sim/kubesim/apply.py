"""Server-side apply, simplified (application/apply-patch+yaml,
https://kubernetes.io/docs/reference/using-api/server-side-apply/).

The applied configuration is merged into the live object: maps recursively, lists
with known keys (x-kubernetes-list-type=map in a CRD schema, or the built-in merge
keys of patch.MERGE_KEYS) item by item, sets as unions, other lists atomically.
Fields that this manager applied last time but no longer applies are removed unless
another manager also owns them.  Ownership conflicts between managers are not
detected (force is accepted and ignored), which the README states.
"""

import copy
import json

from . import patch as patchmod
from .objects import meta


def _schema_at(schema, path):
    """Sub-schema of a CR at a fieldset path like '.spec.items[].name'."""
    cur = schema
    for seg in path.split(".")[1:]:
        if cur is None:
            return None
        is_item = seg.endswith("[]")
        name = seg[:-2] if is_item else seg
        while name.endswith("[]"):
            name = name[:-2]
            cur = (cur or {}).get("items")
        if name:
            props = (cur or {}).get("properties") or {}
            cur = props.get(name) or ((cur or {}).get("additionalProperties")
                                      if isinstance((cur or {}).get("additionalProperties"), dict)
                                      else None)
        if is_item:
            cur = (cur or {}).get("items")
    return cur


def list_keys_for(rt):
    """callback(path, items) -> list of key fields, "set", or None (atomic)."""
    if rt.is_custom:
        root = rt.schema or {}
        cache = {}

        def keys(path, items=None):
            if path not in cache:
                s = _schema_at(root, path) or {}
                lt = s.get("x-kubernetes-list-type")
                if lt == "map":
                    cache[path] = list(s.get("x-kubernetes-list-map-keys") or []) or None
                elif lt == "set":
                    cache[path] = "set"
                else:
                    cache[path] = None
            return cache[path]
        return keys

    def builtin_keys(path, items=None):
        field = path.rsplit(".", 1)[-1]
        k = patchmod._merge_key(field, list(items or []))
        if k is patchmod.PRIMITIVE_MERGE:
            return "set"
        return [k] if k else None
    return builtin_keys


def fieldset(value, keys_fn, path=""):
    if isinstance(value, dict):
        return {"f:" + k: fieldset(v, keys_fn, path + "." + k) for k, v in value.items()}
    if isinstance(value, list):
        keys = keys_fn(path, value)
        if keys == "set":
            return {"v:" + json.dumps(v, separators=(",", ":")): {} for v in value}
        if keys and all(isinstance(i, dict) for i in value):
            out = {}
            for i in value:
                kid = json.dumps({k: i.get(k) for k in keys}, separators=(",", ":"), sort_keys=True)
                sub = fieldset(i, keys_fn, path + "[]")
                sub["."] = {}
                out["k:" + kid] = sub
            return out
    return {}


def apply_fieldset(rt, config):
    """Fields an apply configuration sets (what its manager comes to own)."""
    c = {k: v for k, v in config.items() if k not in ("apiVersion", "kind")}
    md = dict(c.get("metadata") or {})
    for f in ("name", "namespace", "resourceVersion", "uid", "creationTimestamp",
              "managedFields", "generation"):
        md.pop(f, None)
    if md:
        c["metadata"] = md
    else:
        c.pop("metadata", None)
    return fieldset(c, list_keys_for(rt))


def _match(item, keys, other):
    return isinstance(item, dict) and isinstance(other, dict) and \
        all(item.get(k) == other.get(k) for k in keys)


def _merge_into(dst, src, path, keys_fn):
    for k, v in src.items():
        p = path + "." + k
        if v is None:
            dst.pop(k, None)
        elif isinstance(v, dict) and isinstance(dst.get(k), dict):
            _merge_into(dst[k], v, p, keys_fn)
        elif isinstance(v, list) and isinstance(dst.get(k), list):
            keys = keys_fn(p, v + dst[k])
            if keys == "set":
                for x in v:
                    if x not in dst[k]:
                        dst[k].append(copy.deepcopy(x))
            elif keys and all(isinstance(i, dict) for i in v):
                for item in v:
                    cur = next((d for d in dst[k] if _match(d, keys, item)), None)
                    if cur is None:
                        dst[k].append(copy.deepcopy(item))
                    else:
                        _merge_into(cur, item, p + "[]", keys_fn)
            else:
                dst[k] = copy.deepcopy(v)
        else:
            dst[k] = copy.deepcopy(v)


def _locate(obj, k):
    if k.startswith("f:") and isinstance(obj, dict):
        return obj.get(k[2:])
    if k.startswith("k:") and isinstance(obj, list):
        want = json.loads(k[2:])
        return next((i for i in obj if isinstance(i, dict) and
                     all(i.get(f) == v for f, v in want.items())), None)
    return None


def _remove(obj, k):
    if k.startswith("f:") and isinstance(obj, dict):
        obj.pop(k[2:], None)
    elif k.startswith("k:") and isinstance(obj, list):
        item = _locate(obj, k)
        if item is not None:
            obj.remove(item)
    elif k.startswith("v:") and isinstance(obj, list):
        v = json.loads(k[2:])
        if v in obj:
            obj.remove(v)


def _remove_dropped(obj, prev, new, others):
    for k, sub in prev.items():
        if k == ".":
            continue
        if k in new:
            if sub:
                child = _locate(obj, k)
                if child is not None:
                    _remove_dropped(child, sub, new[k], others.get(k, {}))
            continue
        if k in others:
            child = _locate(obj, k)
            if child is not None and sub:
                _remove_dropped(child, sub, {}, others[k])
            continue
        _remove(obj, k)


def _union(a, b):
    out = dict(a)
    for k, v in b.items():
        out[k] = _union(out[k], v) if k in out else v
    return out


def merge(rt, live, config, manager, sub=None):
    """The object that results from applying config as manager onto live."""
    md = meta(live)
    prev, others = {}, {}
    for e in md.get("managedFields") or []:
        fs = e.get("fieldsV1") or {}
        if e.get("manager") == manager and e.get("operation") == "Apply" and \
                e.get("subresource") == sub:
            prev = fs
        else:
            others = _union(others, fs)
    keys_fn = list_keys_for(rt)
    new_fs = apply_fieldset(rt, config)
    result = copy.deepcopy(live)
    _remove_dropped(result, prev, new_fs, others)
    cfg = copy.deepcopy(config)
    cmd = cfg.get("metadata") or {}
    for f in ("resourceVersion", "managedFields", "uid", "creationTimestamp", "generation"):
        cmd.pop(f, None)
    _merge_into(result, cfg, "", keys_fn)
    rv = meta(config).get("resourceVersion")
    meta(result)["resourceVersion"] = rv or md.get("resourceVersion")
    return result
