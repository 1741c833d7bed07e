"""LIST semantics (https://kubernetes.io/docs/reference/using-api/api-concepts/): resourceVersion / resourceVersionMatch rules,
pagination with continue tokens, selectors.

Pages of one list form a snapshot: the first page reads etcd at its current
revision R and every continue token carries R, so later pages read at R too.  Once
R is compacted the token expires (410), exactly like the apiserver's etcd3 store.
"""

import base64
import json

from . import errors
from .etcd import EtcdCompacted, EtcdFutureRevision, prefix_end
from .store import etcd_errors

_CONTINUE_EXPIRED = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this response "
    "to retrieve the remainder of the results. Continuing with the provided token results in an "
    "inconsistent list - objects that were created, modified, or deleted between the time the "
    "first chunk was returned and now may show up in the list.")


def encode_continue(rv, start):
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_continue(token):
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
        d = json.loads(raw)
        rv, start = int(d["rv"]), d["start"]
        if d.get("v") != "meta.k8s.io/v1" or not isinstance(start, str) or rv <= 0 \
                or start.startswith("/") or ".." in start.split("/"):
            raise ValueError
        return rv, start
    except (ValueError, KeyError, TypeError):
        raise errors.bad_request("continue key is not valid: invalid continue token")


def _opts_invalid(field, msg):
    return errors.invalid_plain("ListOptions", "", [("FieldValueForbidden", field, msg)],
                                group="meta.k8s.io")


def parse_rv(text):
    try:
        v = int(text)
        if v < 0:
            raise ValueError
        return v
    except (TypeError, ValueError):
        raise errors.bad_request("invalid resource version: %s" % text)


def validate_list_options(q, watch):
    """The 400/422 rules shared by list and watch; returns (rv_text, match)."""
    rv = q.get("resourceVersion", "")
    match = q.get("resourceVersionMatch", "")
    cont = q.get("continue", "")
    sie = q.get("sendInitialEvents")
    if match and match not in ("NotOlderThan", "Exact"):
        raise errors.invalid_plain("ListOptions", "", [
            ("FieldValueNotSupported", "resourceVersionMatch",
             'Unsupported value: "%s": supported values: "Exact", "NotOlderThan", ""' % match)],
            group="meta.k8s.io")
    if sie is not None and sie not in ("true", "false", "1", "0"):
        raise errors.bad_request("invalid sendInitialEvents: %s" % sie)
    if not watch:
        if sie is not None:
            raise _opts_invalid("sendInitialEvents", "Forbidden: sendInitialEvents is forbidden "
                                "for list")
        if match and cont:
            raise _opts_invalid("resourceVersionMatch", "Forbidden: resourceVersionMatch is "
                                "forbidden when continue is provided")
        if match and not rv:
            raise _opts_invalid("resourceVersionMatch", "Forbidden: resourceVersionMatch is "
                                "forbidden unless resourceVersion is provided")
        if match == "Exact" and rv == "0":
            raise _opts_invalid("resourceVersionMatch", 'Forbidden: resourceVersionMatch "exact" '
                                'is forbidden for resourceVersion "0"')
        if cont and rv and rv != "0":
            raise errors.bad_request("specifying resource version is not allowed when using continue")
    else:
        if sie is not None:
            if match != "NotOlderThan":
                raise _opts_invalid("sendInitialEvents", "Forbidden: sendInitialEvents requires "
                                    'setting resourceVersionMatch to "NotOlderThan"')
            if q.get("allowWatchBookmarks") not in ("true", "1"):
                raise _opts_invalid("allowWatchBookmarks", "Forbidden: allowWatchBookmarks is "
                                    "required when sendInitialEvents is set")
        elif match:
            raise _opts_invalid("resourceVersionMatch", "Forbidden: resourceVersionMatch is "
                                "forbidden for watch unless sendInitialEvents is provided")
    if rv:
        parse_rv(rv)
    return rv, match


def _limit(q):
    try:
        n = int(q.get("limit") or 0)
    except ValueError:
        raise errors.bad_request("invalid limit: %s" % q.get("limit"))
    return max(n, 0)


class ListResult:
    def __init__(self, items, rv, cont=None, remaining=None):
        self.items = items
        self.rv = rv
        self.cont = cont
        self.remaining = remaining


@etcd_errors
def list_objects(store, rt, ns, q, pred):
    rv_text, match = validate_list_options(q, watch=False)
    limit = _limit(q)
    cont = q.get("continue", "")
    prefix = rt.prefix(ns)
    start = prefix
    read_rev = 0
    exact = False
    if cont:
        read_rev, rel = decode_continue(cont)
        start = prefix + rel
        exact = True
    elif rv_text and rv_text != "0":
        n = parse_rv(rv_text)
        if match == "Exact" or (not match and limit > 0):
            read_rev, exact = n, True
        else:
            current = store.etcd.current_revision()
            if n > current:
                raise errors.too_large_rv(n, current)
    elif rv_text == "0":
        limit = 0  # served "from the cache": any state, no pagination
    try:
        return _scan(store, rt, prefix, start, read_rev, limit, pred)
    except EtcdCompacted:
        if cont:
            raise errors.expired(_CONTINUE_EXPIRED)
        raise errors.expired("The resourceVersion for the provided list is too old.")
    except EtcdFutureRevision:
        raise errors.too_large_rv(read_rev, store.etcd.current_revision())


def _scan(store, rt, prefix, start, rev, limit, pred):
    end = prefix_end(prefix)
    items = []
    batch = limit if (limit and pred.everything) else (max(limit, 250) if limit else 0)
    name = pred.fields.exact_name()
    if name is not None and start == prefix and (not rt.namespaced or prefix != rt.prefix()):
        # a list pinned to one name (kubectl wait/delete) reads a single key
        hdr, kvs, _, _ = store.etcd.range(prefix + name, revision=rev)
        objs = [store._decode(rt, kv) for kv in kvs]
        return ListResult([_item(rt, o) for o in objs if pred.matches(o)], rev or hdr)
    last_key = None
    more_after = False
    while True:
        hdr, kvs, more, _ = store.etcd.range(start, end, revision=rev, limit=batch)
        if not rev:
            rev = hdr  # the first read fixes the snapshot every later page uses
        stopped = False
        for i, kv in enumerate(kvs):
            obj = store._decode(rt, kv)
            last_key = kv.key
            if pred.matches(obj):
                items.append(_item(rt, obj))
                if limit and len(items) >= limit:
                    stopped = True
                    more_after = i < len(kvs) - 1 or more
                    break
        if stopped or not more or not kvs:
            break
        start = last_key + "\0"
    if not more_after:
        return ListResult(items, rev)
    token = encode_continue(rev, last_key[len(prefix):] + "\0")
    remaining = None
    if pred.everything:
        _, _, _, count = store.etcd.range(last_key + "\0", end, revision=rev, count_only=True)
        remaining = count
    return ListResult(items, rev, token, remaining)


def _item(rt, obj):
    if not rt.is_custom:
        obj.pop("kind", None)
        obj.pop("apiVersion", None)
    return obj
