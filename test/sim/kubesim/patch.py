"""Patch formats (https://kubernetes.io/docs/tasks/manage-kubernetes-objects/update-api-object-kubectl-patch/).

merge_patch        RFC 7386 JSON merge patch (null deletes, lists replaced)
json_patch         RFC 6902 (add/remove/replace/move/copy/test, RFC 6901 pointers)
strategic_merge    the part of strategic merge patch that kubectl needs: maps merge,
                   lists of named items merge by their key (containers by name,
                   conditions by type, ...), primitive lists with a merge strategy
                   (finalizers) union, and the directives $patch (replace/delete/merge),
                   $retainKeys, $setElementOrder/<f>, $deleteFromPrimitiveList/<f>.
Built-in patch metadata cannot be read from Go struct tags here, so merge keys come
from a table of the fields kubectl's client-side apply and the operator touch.
"""

import copy
import json

from . import errors


class PatchError(Exception):
    """A patch that cannot be applied (reported as 422 or 400 by the caller)."""


# -- RFC 7386 -------------------------------------------------------------------
def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def merge_diff(original, modified):
    """The merge patch that turns original into modified (used by tests/tools)."""
    out = {}
    for k in original:
        if k not in modified:
            out[k] = None
    for k, v in modified.items():
        o = original.get(k)
        if isinstance(v, dict) and isinstance(o, dict):
            d = merge_diff(o, v)
            if d:
                out[k] = d
        elif o != v or k not in original:
            out[k] = v
    return out


# -- RFC 6902 -------------------------------------------------------------------
def _parse_pointer(ptr):
    if ptr == "":
        return []
    if not ptr.startswith("/"):
        raise PatchError("invalid JSON pointer %r" % ptr)
    return [p.replace("~1", "/").replace("~0", "~") for p in ptr[1:].split("/")]


def _index(container, tok, for_add=False):
    if tok == "-" and for_add:
        return len(container)
    if not tok.isdigit() or (len(tok) > 1 and tok.startswith("0")):
        raise PatchError("invalid array index %r" % tok)
    i = int(tok)
    if i > len(container) or (i == len(container) and not for_add):
        raise PatchError("array index %d out of bounds" % i)
    return i


def _walk(doc, toks, ptr):
    cur = doc
    for t in toks:
        if isinstance(cur, dict):
            if t not in cur:
                raise PatchError("doc is missing path: %s" % ptr)
            cur = cur[t]
        elif isinstance(cur, list):
            cur = cur[_index(cur, t)]
        else:
            raise PatchError("doc is missing path: %s" % ptr)
    return cur


def _get(doc, ptr):
    return _walk(doc, _parse_pointer(ptr), ptr)


def _add(doc, ptr, value):
    toks = _parse_pointer(ptr)
    if not toks:
        return value
    parent = _walk(doc, toks[:-1], ptr)
    last = toks[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, for_add=True), value)
    else:
        raise PatchError("doc is missing path: %s" % ptr)
    return doc


def _remove(doc, ptr):
    toks = _parse_pointer(ptr)
    if not toks:
        raise PatchError("cannot remove the whole document")
    parent = _walk(doc, toks[:-1], ptr)
    last = toks[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError("Unable to remove nonexistent key: %s: missing value" % last)
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last))
    raise PatchError("doc is missing path: %s" % ptr)


def json_patch(doc, ops):
    if not isinstance(ops, list):
        raise PatchError("json patch must be a list of operations")
    doc = copy.deepcopy(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise PatchError("invalid operation %r" % (op,))
        kind = op["op"]
        path = op.get("path")
        if not isinstance(path, str):
            raise PatchError("operation %s missing path" % kind)
        if kind in ("add", "replace", "test") and "value" not in op:
            raise PatchError("operation %s missing value" % kind)
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            if _parse_pointer(path):
                _get(doc, path)  # must exist
                _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(op["value"]))
        elif kind == "move":
            frm = op.get("from")
            if not isinstance(frm, str):
                raise PatchError("move missing from")
            if path.startswith(frm + "/"):
                raise PatchError("cannot move a value into one of its children")
            v = _remove(doc, frm)
            doc = _add(doc, path, v)
        elif kind == "copy":
            frm = op.get("from")
            if not isinstance(frm, str):
                raise PatchError("copy missing from")
            doc = _add(doc, path, copy.deepcopy(_get(doc, frm)))
        elif kind == "test":
            try:
                actual = _get(doc, path)
            except PatchError:
                actual = None
                if op["value"] is not None:
                    raise PatchError("testing value %s failed: doc is missing path" % path)
            if not _json_equal(actual, op["value"]):
                raise PatchError("testing value %s failed: test failed" % path)
        else:
            raise PatchError("Unexpected kind: %s" % kind)
    return doc


def _json_equal(a, b):
    # 1 and 1.0 are the same JSON number; True is not 1
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


# -- strategic merge patch --------------------------------------------------------
PRIMITIVE_MERGE = object()

# field name -> merge key, from the Go struct tags (patchMergeKey) of core/v1, apps/v1
# and meta/v1 types. `ports` depends on context: container ports use containerPort,
# service ports use port.
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
    "env": "name", "volumes": "name", "volumeMounts": "mountPath",
    "volumeDevices": "devicePath", "imagePullSecrets": "name", "conditions": "type",
    "ownerReferences": "uid", "addresses": "type", "taints": "key", "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey", "resourceClaims": "name",
    "containerStatuses": "name", "initContainerStatuses": "name",
    "finalizers": PRIMITIVE_MERGE,
}


def _merge_key(field, items):
    key = MERGE_KEYS.get(field)
    if field == "ports":
        sample = [i for i in items if isinstance(i, dict)]
        if sample and all("containerPort" in i for i in sample):
            return "containerPort"
        if sample and all("port" in i for i in sample):
            return "port"
        return None
    return key


def strategic_merge(original, patch):
    """Apply a strategic merge patch (dict) to original (dict); returns a new dict."""
    return _smp_map(copy.deepcopy(original) if isinstance(original, dict) else {}, patch)


def _smp_map(orig, patch):
    if not isinstance(patch, dict):
        raise PatchError("strategic merge patch must be an object")
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise PatchError("unknown patch type: %s" % directive)
    retain = patch.get("$retainKeys")
    out = orig
    orders = {}
    for k, v in patch.items():
        if k in ("$patch", "$retainKeys"):
            continue
        if k.startswith("$setElementOrder/"):
            orders[k.split("/", 1)[1]] = v
            continue
        if k.startswith("$deleteFromPrimitiveList/"):
            field = k.split("/", 1)[1]
            if isinstance(out.get(field), list) and isinstance(v, list):
                out[field] = [x for x in out[field] if x not in v]
            continue
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict):
            cur = out.get(k)
            merged = _smp_map(cur if isinstance(cur, dict) else {}, v)
            if merged is None:
                out.pop(k, None)
            else:
                out[k] = merged
        elif isinstance(v, list):
            out[k] = _smp_list(k, out.get(k), v)
        else:
            out[k] = v
    for field, order in orders.items():
        if isinstance(out.get(field), list) and isinstance(order, list):
            out[field] = _apply_order(field, out[field], order)
    if isinstance(retain, list):
        for k in list(out):
            if k not in retain:
                del out[k]
    return out


def _smp_list(field, orig, patch):
    orig = orig if isinstance(orig, list) else []
    # a {"$patch": "replace"} element replaces the whole list
    if any(isinstance(i, dict) and i.get("$patch") == "replace" for i in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    key = _merge_key(field, patch + orig)
    if key is PRIMITIVE_MERGE:
        out = list(orig)
        for v in patch:
            if v not in out:
                out.append(copy.deepcopy(v))
        return out
    if key is None or not all(isinstance(i, dict) for i in patch):
        return [copy.deepcopy(i) for i in patch]
    out = [copy.deepcopy(i) for i in orig]
    for item in patch:
        kv = item.get(key)
        idx = next((n for n, o in enumerate(out) if isinstance(o, dict) and o.get(key) == kv), None)
        if item.get("$patch") == "delete":
            if idx is not None:
                out.pop(idx)
            continue
        if idx is None:
            out.append(_smp_map({}, item))
        else:
            out[idx] = _smp_map(out[idx], item)
    return out


def _apply_order(field, items, order):
    """$setElementOrder: put items in the given order, unknown ones after."""
    if not items:
        return items
    if all(not isinstance(i, dict) for i in items):
        ordered = [v for v in order if v in items]
        return ordered + [v for v in items if v not in ordered]
    key = _merge_key(field, items)
    if key is None or key is PRIMITIVE_MERGE:
        return items
    by_key = {}
    for i in items:
        by_key.setdefault(json.dumps(i.get(key)), i)
    out = []
    for o in order:
        k = json.dumps(o.get(key)) if isinstance(o, dict) else None
        if k in by_key:
            out.append(by_key.pop(k))
    seen = set(id(i) for i in out)
    return out + [i for i in items if id(i) not in seen]


def apply_patch(ptype, current, body):
    """Apply a patch of the given content type; raises ApiError on bad input."""
    try:
        p = json.loads(body) if body else None
    except ValueError as e:
        raise errors.bad_request("error decoding patch: %s" % e)
    try:
        if ptype == "application/merge-patch+json":
            if not isinstance(p, dict):
                raise PatchError("merge patch must be a JSON object")
            return merge_patch(current, p)
        if ptype == "application/json-patch+json":
            return json_patch(current, p)
        if ptype == "application/strategic-merge-patch+json":
            return strategic_merge(current, p)
    except PatchError as e:
        raise errors.ApiError(422, "Invalid", "the server rejected our request due to an error "
                              "in our request: %s" % e)
    raise errors.unsupported_media("unsupported patch type %s" % ptype)
