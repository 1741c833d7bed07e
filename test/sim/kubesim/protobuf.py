"""Decoding of Kubernetes protobuf request bodies for a few simple kinds.

kubectl's typed clients (`kubectl create configmap|secret|namespace|serviceaccount`)
send `application/vnd.kubernetes.protobuf` and do not fall back to JSON on 415, so
the simulator decodes those kinds: the "k8s\\0" magic, the runtime.Unknown envelope,
and the message itself, with field numbers from k8s.io/api generated.proto.
Anything else (or any field not in the tables below) is refused with 415 rather
than silently dropped.  Responses are always JSON (kubectl accepts both).
"""

import base64
import datetime

MAGIC = b"k8s\x00"


class ProtoError(ValueError):
    pass


def _varint(buf, i):
    shift = result = 0
    while True:
        if i >= len(buf):
            raise ProtoError("truncated varint")
        b = buf[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise ProtoError("varint too long")


def _fields(buf):
    """[(field number, wire type, value)] of one message."""
    out = []
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(buf, i)
        elif wt == 2:
            n, i = _varint(buf, i)
            if i + n > len(buf):
                raise ProtoError("truncated field %d" % num)
            v, i = buf[i:i + n], i + n
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ProtoError("unsupported wire type %d" % wt)
        out.append((num, wt, v))
    return out


def _int64(v):
    return v - (1 << 64) if v >= 1 << 63 else v


# -- schemas: field number -> (json name, type) -------------------------------------
TIME = "time"
STRING, BYTES, INT, BOOL = "string", "bytes", "int", "bool"
MAP_SS, MAP_SB = "map_ss", "map_sb"

OWNER_REF = {1: ("kind", STRING), 3: ("name", STRING), 4: ("uid", STRING),
             5: ("apiVersion", STRING), 6: ("controller", BOOL), 7: ("blockOwnerDeletion", BOOL)}
OBJECT_META = {1: ("name", STRING), 2: ("generateName", STRING), 3: ("namespace", STRING),
               4: ("selfLink", STRING), 5: ("uid", STRING), 6: ("resourceVersion", STRING),
               7: ("generation", INT), 8: ("creationTimestamp", TIME),
               9: ("deletionTimestamp", TIME), 10: ("deletionGracePeriodSeconds", INT),
               11: ("labels", MAP_SS), 12: ("annotations", MAP_SS),
               13: ("ownerReferences", ("repeated", OWNER_REF)),
               14: ("finalizers", ("repeated", STRING))}
OBJECT_REF = {1: ("kind", STRING), 2: ("namespace", STRING), 3: ("name", STRING),
              4: ("uid", STRING), 5: ("apiVersion", STRING), 6: ("resourceVersion", STRING),
              7: ("fieldPath", STRING)}
POLICY_RULE = {1: ("verbs", ("repeated", STRING)), 2: ("apiGroups", ("repeated", STRING)),
               3: ("resources", ("repeated", STRING)), 4: ("resourceNames", ("repeated", STRING)),
               5: ("nonResourceURLs", ("repeated", STRING))}
SUBJECT = {1: ("kind", STRING), 2: ("apiGroup", STRING), 3: ("name", STRING), 4: ("namespace", STRING)}
ROLE_REF = {1: ("apiGroup", STRING), 2: ("kind", STRING), 3: ("name", STRING)}

KINDS = {
    ("v1", "ConfigMap"): {1: ("metadata", OBJECT_META), 2: ("data", MAP_SS),
                          3: ("binaryData", MAP_SB), 4: ("immutable", BOOL)},
    ("v1", "Secret"): {1: ("metadata", OBJECT_META), 2: ("data", MAP_SB), 3: ("type", STRING),
                       4: ("stringData", MAP_SS), 5: ("immutable", BOOL)},
    ("v1", "Namespace"): {1: ("metadata", OBJECT_META),
                          2: ("spec", {1: ("finalizers", ("repeated", STRING))}),
                          3: ("status", {1: ("phase", STRING)})},
    ("v1", "ServiceAccount"): {1: ("metadata", OBJECT_META),
                               2: ("secrets", ("repeated", OBJECT_REF)),
                               3: ("imagePullSecrets", ("repeated", {1: ("name", STRING)})),
                               4: ("automountServiceAccountToken", BOOL)},
    # `kubectl create role|rolebinding|clusterrole|clusterrolebinding` (k8s.io/api/rbac/v1)
    ("rbac.authorization.k8s.io/v1", "Role"): {1: ("metadata", OBJECT_META), 2: ("rules", ("repeated", POLICY_RULE))},
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): {1: ("metadata", OBJECT_META),
                                                      2: ("rules", ("repeated", POLICY_RULE))},
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): {1: ("metadata", OBJECT_META),
                                                      2: ("subjects", ("repeated", SUBJECT)), 3: ("roleRef", ROLE_REF)},
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): {1: ("metadata", OBJECT_META),
                                                             2: ("subjects", ("repeated", SUBJECT)),
                                                             3: ("roleRef", ROLE_REF)},
    # `kubectl create token`
    ("authentication.k8s.io/v1", "TokenRequest"): {
        1: ("metadata", OBJECT_META),
        2: ("spec", {1: ("audiences", ("repeated", STRING)), 4: ("expirationSeconds", INT),
                     3: ("boundObjectRef", {1: ("kind", STRING), 2: ("apiVersion", STRING),
                                            3: ("name", STRING), 4: ("uid", STRING)})}),
        3: ("status", {1: ("token", STRING), 2: ("expirationTimestamp", TIME)})},
}


def _scalar(t, wt, v, where):
    if t == STRING:
        if wt != 2:
            raise ProtoError("%s: expected bytes" % where)
        return v.decode("utf-8")
    if t == BYTES:
        return base64.b64encode(bytes(v)).decode()
    if t == INT:
        return _int64(v)
    if t == BOOL:
        return bool(v)
    if t == TIME:
        f = {n: val for n, _, val in _fields(v)}
        secs = _int64(f.get(1, 0))
        if not secs and not f.get(2):
            return None
        return datetime.datetime.fromtimestamp(secs, datetime.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
    raise ProtoError("%s: unknown type %s" % (where, t))


def _message(schema, buf, where):
    out = {}
    for num, wt, v in _fields(buf):
        if num not in schema:
            raise ProtoError("%s: field %d is not supported by the simulator" % (where, num))
        name, t = schema[num]
        path = "%s.%s" % (where, name)
        if t in (MAP_SS, MAP_SB):
            kv = {n: val for n, _, val in _fields(v)}
            key = kv.get(1, b"").decode("utf-8")
            val = kv.get(2, b"")
            out.setdefault(name, {})[key] = val.decode("utf-8") if t == MAP_SS else \
                base64.b64encode(bytes(val)).decode()
        elif isinstance(t, tuple):
            item = t[1]
            val = _message(item, v, path) if isinstance(item, dict) else _scalar(item, wt, v, path)
            out.setdefault(name, []).append(val)
        elif isinstance(t, dict):
            out[name] = _message(t, v, path)
        else:
            out[name] = _scalar(t, wt, v, path)
    # JSON omits empty values (omitempty) where protobuf carries them
    return {k: v for k, v in out.items() if v not in ("", 0, False, None, {}, [])}


def decode(body, expected_api_version=None, expected_kind=None):
    """A k8s protobuf request body -> JSON-compatible dict."""
    if not body.startswith(MAGIC):
        raise ProtoError("missing protobuf magic")
    env = {n: v for n, _, v in _fields(body[len(MAGIC):])}
    tm = {n: v for n, _, v in _fields(env.get(1, b""))}
    api_version = tm.get(1, b"").decode() or expected_api_version
    kind = tm.get(2, b"").decode() or expected_kind
    schema = KINDS.get((api_version, kind))
    if schema is None:
        raise ProtoError("protobuf bodies of %s %s are not supported by the simulator; send JSON"
                         % (api_version, kind))
    obj = _message(schema, env.get(2, b""), kind)
    obj["apiVersion"], obj["kind"] = api_version, kind
    return obj
