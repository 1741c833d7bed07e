"""Structural schema handling for custom resources (openAPIV3Schema of a CRD version).

What a kube-apiserver does on every CR write, in its order:
  1. prune: drop fields the schema does not declare (unless
     x-kubernetes-preserve-unknown-fields / additionalProperties allow them) and
     unknown metadata fields; the dropped paths feed fieldValidation (Strict -> 400,
     Warn -> Warning header);
  2. drop nulls of non-nullable fields, then apply `default`s;
  3. validate: type, enum, pattern, bounds, lengths, item counts, required,
     list-type set/map uniqueness, and the CEL rules the cel module can evaluate
     (x-kubernetes-validations, with oldSelf on updates).
Formats are not checked.
"""

import copy
import json
import re

OBJECT_META_FIELDS = {"name", "generateName", "namespace", "selfLink", "uid", "resourceVersion",
                      "generation", "creationTimestamp", "deletionTimestamp",
                      "deletionGracePeriodSeconds", "labels", "annotations", "ownerReferences",
                      "finalizers", "managedFields"}


def _join(path, key):
    return key if not path else "%s.%s" % (path, key)


# -- pruning and defaulting --------------------------------------------------------
def prune_and_default(schema, obj, unknown):
    """Prune/default a whole custom resource in place; unknown collects dropped paths."""
    if not isinstance(obj, dict):
        return obj
    props = (schema or {}).get("properties") or {}
    for k in list(obj):
        if k in ("apiVersion", "kind"):
            continue
        if k == "metadata":
            md = obj[k]
            if isinstance(md, dict):
                for mk in list(md):
                    if mk not in OBJECT_META_FIELDS:
                        unknown.append("metadata." + mk)
                        del md[mk]
            continue
        if k not in props and not (schema or {}).get("x-kubernetes-preserve-unknown-fields"):
            unknown.append(k)
            del obj[k]
    _defaults_into(schema or {}, obj, "")
    for k, sub in props.items():
        if k in ("apiVersion", "kind", "metadata") or k not in obj:
            continue
        obj[k] = _walk(sub, obj[k], k, unknown)
    return obj


def _walk(schema, value, path, unknown):
    if value is None:
        return None
    if isinstance(value, dict) and (schema.get("type") in (None, "object")):
        props = schema.get("properties")
        addl = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields")
        embedded = schema.get("x-kubernetes-embedded-resource")
        if props is not None or addl is not None:
            for k in list(value):
                if props and k in props:
                    continue
                if embedded and k in ("apiVersion", "kind", "metadata"):
                    continue
                if isinstance(addl, dict) or addl is True:
                    continue
                if preserve:
                    continue
                unknown.append(_join(path, k))
                del value[k]
        elif not preserve and schema.get("type") == "object" and not embedded:
            # type: object with no properties and no preserve flag prunes everything
            for k in list(value):
                unknown.append(_join(path, k))
                del value[k]
        _defaults_into(schema, value, path)
        for k in list(value):
            if props and k in props:
                sub = props[k]
            elif isinstance(addl, dict):
                sub = addl
            else:
                continue
            value[k] = _walk(sub, value[k], _join(path, k), unknown)
        return value
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        items = schema["items"]
        for i, v in enumerate(value):
            if v is None and items.get("default") is not None:
                value[i] = copy.deepcopy(items["default"])
            value[i] = _walk(items, value[i], "%s[%d]" % (path, i), unknown)
        return value
    return value


def _defaults_into(schema, obj, path):
    props = schema.get("properties") or {}
    for k, sub in props.items():
        if k in obj and obj[k] is None and not sub.get("nullable"):
            del obj[k]  # non-nullable nulls are pruned (and may then be defaulted)
        if k not in obj and "default" in sub:
            obj[k] = copy.deepcopy(sub["default"])


# -- validation -----------------------------------------------------------------------
_TYPE_NAMES = {dict: "object", list: "array", str: "string", bool: "boolean", int: "integer",
               float: "number", type(None): "null"}


def _type_of(v):
    return _TYPE_NAMES.get(type(v), "unknown")


def _type_ok(t, v):
    if t == "object":
        return isinstance(v, dict)
    if t == "array":
        return isinstance(v, list)
    if t == "string":
        return isinstance(v, str)
    if t == "boolean":
        return isinstance(v, bool)
    if t == "integer":
        return (isinstance(v, int) and not isinstance(v, bool)) or \
            (isinstance(v, float) and v.is_integer())
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return True


def _q(v):
    return json.dumps(v)


class Validator:
    """Collects causes (reason, field, message) for one object; cel_eval is optional."""

    def __init__(self, cel_eval=None):
        self.causes = []
        self.cel_eval = cel_eval

    def add(self, reason, field, msg):
        self.causes.append((reason, field, msg))

    def validate_root(self, schema, obj, old):
        props = (schema or {}).get("properties") or {}
        for k, sub in props.items():
            if k in ("apiVersion", "kind", "metadata"):
                continue
            if k in obj:
                self.validate(sub, obj[k], k, (old or {}).get(k) if isinstance(old, dict) else None,
                              old is not None and isinstance(old, dict) and k in old)
        for r in (schema or {}).get("required") or []:
            if r not in obj and r not in ("apiVersion", "kind", "metadata"):
                self.add("FieldValueRequired", r, "Required value")
        self._cel(schema or {}, obj, "", old, old is not None)

    def validate(self, s, v, path, old=None, has_old=False):
        if v is None:
            if not s.get("nullable"):
                t = s.get("type")
                if t:
                    self.add("FieldValueTypeInvalid", path, 'Invalid value: "null": %s in body '
                             "must be of type %s: \"null\"" % (path, t))
            return
        if s.get("x-kubernetes-int-or-string"):
            if not (isinstance(v, str) or (isinstance(v, int) and not isinstance(v, bool))):
                self.add("FieldValueTypeInvalid", path, 'Invalid value: "%s": %s in body must be '
                         "of type integer or string: %s" % (_type_of(v), path, _q(_type_of(v))))
                return
        else:
            t = s.get("type")
            if t and not _type_ok(t, v):
                self.add("FieldValueTypeInvalid", path, 'Invalid value: "%s": %s in body must be '
                         'of type %s: "%s"' % (_type_of(v), path, t, _type_of(v)))
                return
        if "enum" in s and v not in s["enum"]:
            self.add("FieldValueNotSupported", path, "Unsupported value: %s: supported values: %s"
                     % (_q(v), ", ".join(_q(e) for e in s["enum"])))
        if isinstance(v, str):
            self._string(s, v, path)
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            self._number(s, v, path)
        elif isinstance(v, list):
            self._array(s, v, path, old if has_old else None, has_old)
        elif isinstance(v, dict):
            self._object(s, v, path, old if has_old else None, has_old)
        self._cel(s, v, path, old, has_old)

    def _string(self, s, v, path):
        if "maxLength" in s and len(v) > s["maxLength"]:
            self.add("FieldValueTooLong", path, "Too long: may not be longer than %d" % s["maxLength"])
        if "minLength" in s and len(v) < s["minLength"]:
            self.add("FieldValueInvalid", path, 'Invalid value: %s: %s in body should be at least '
                     "%d chars long" % (_q(v), path, s["minLength"]))
        if "pattern" in s:
            try:
                ok = re.search(s["pattern"], v) is not None
            except re.error:
                ok = True  # a Go-only regex feature: do not fail the write on our limitation
            if not ok:
                self.add("FieldValueInvalid", path, "Invalid value: %s: %s in body should match "
                         "'%s'" % (_q(v), path, s["pattern"]))

    def _number(self, s, v, path):
        if "maximum" in s:
            if v > s["maximum"] or (s.get("exclusiveMaximum") and v >= s["maximum"]):
                self.add("FieldValueInvalid", path, "Invalid value: %s: %s in body should be less "
                         "than or equal to %s" % (_q(v), path, s["maximum"]))
        if "minimum" in s:
            if v < s["minimum"] or (s.get("exclusiveMinimum") and v <= s["minimum"]):
                self.add("FieldValueInvalid", path, "Invalid value: %s: %s in body should be "
                         "greater than or equal to %s" % (_q(v), path, s["minimum"]))
        if s.get("format") == "int32" and isinstance(v, int) and not -2**31 <= v < 2**31:
            self.add("FieldValueInvalid", path, "Invalid value: %s: %s in body must be of type "
                     "int32" % (v, path))

    def _array(self, s, v, path, old, has_old):
        if "maxItems" in s and len(v) > s["maxItems"]:
            self.add("FieldValueTooMany", path, "Too many: %d: must have at most %d items"
                     % (len(v), s["maxItems"]))
        if "minItems" in s and len(v) < s["minItems"]:
            self.add("FieldValueInvalid", path, "Invalid value: %d: %s in body should have at "
                     "least %d items" % (len(v), path, s["minItems"]))
        lt = s.get("x-kubernetes-list-type")
        keys = s.get("x-kubernetes-list-map-keys") or []
        if lt == "set":
            seen = []
            for i, it in enumerate(v):
                if it in seen:
                    self.add("FieldValueDuplicate", "%s[%d]" % (path, i), "Duplicate value: %s" % _q(it))
                seen.append(it)
        elif lt == "map" and keys:
            seen = set()
            for i, it in enumerate(v):
                if isinstance(it, dict):
                    k = json.dumps([it.get(x) for x in keys])
                    if k in seen:
                        self.add("FieldValueDuplicate", "%s[%d]" % (path, i),
                                 "Duplicate value: %s" % json.dumps({x: it.get(x) for x in keys}))
                    seen.add(k)
        items = s.get("items")
        if isinstance(items, dict):
            old_by_key = {}
            if has_old and isinstance(old, list) and lt == "map" and keys:
                for o in old:
                    if isinstance(o, dict):
                        old_by_key[json.dumps([o.get(x) for x in keys])] = o
            for i, it in enumerate(v):
                o, ho = None, False
                if old_by_key and isinstance(it, dict):
                    k = json.dumps([it.get(x) for x in keys])
                    if k in old_by_key:
                        o, ho = old_by_key[k], True
                # without list-map keys there is no correlation: oldSelf is absent
                self.validate(items, it, "%s[%d]" % (path, i), o, ho)

    def _object(self, s, v, path, old, has_old):
        for r in s.get("required") or []:
            if r not in v:
                self.add("FieldValueRequired", _join(path, r), "Required value")
        if "maxProperties" in s and len(v) > s["maxProperties"]:
            self.add("FieldValueTooMany", path, "Too many: %d: must have at most %d items"
                     % (len(v), s["maxProperties"]))
        if "minProperties" in s and len(v) < s["minProperties"]:
            self.add("FieldValueInvalid", path, "Invalid value: %d: %s in body should have at "
                     "least %d properties" % (len(v), path, s["minProperties"]))
        props = s.get("properties") or {}
        addl = s.get("additionalProperties")
        for k, val in v.items():
            sub = props.get(k) if props else None
            if sub is None and isinstance(addl, dict):
                sub = addl
            if sub is None:
                continue
            ho = has_old and isinstance(old, dict) and k in old
            self.validate(sub, val, _join(path, k), old.get(k) if ho else None, ho)

    def _cel(self, s, v, path, old, has_old):
        rules = s.get("x-kubernetes-validations")
        if not rules or self.cel_eval is None:
            return
        for rule in rules:
            expr = rule.get("rule", "")
            # transition rules (using oldSelf) only run on updates with an old value,
            # unless they are written with optionalOldSelf
            uses_old = "oldSelf" in expr
            if uses_old and not has_old and not rule.get("optionalOldSelf"):
                continue
            ok = self.cel_eval(expr, v, old, has_old, rule.get("optionalOldSelf", False))
            if ok is False:
                msg = rule.get("message") or ("failed rule: %s" % expr)
                if rule.get("messageExpression"):
                    msg = rule.get("message") or "failed rule: %s" % expr
                reason = {"FieldValueForbidden": "FieldValueForbidden",
                          "FieldValueRequired": "FieldValueRequired",
                          "FieldValueDuplicate": "FieldValueDuplicate"}.get(
                    rule.get("reason"), "FieldValueInvalid")
                fpath = path
                if rule.get("fieldPath"):
                    fpath = path + rule["fieldPath"] if path else rule["fieldPath"].lstrip(".")
                if reason == "FieldValueInvalid":
                    self.add(reason, fpath, "Invalid value: \"%s\": %s" % (_type_of(v), msg))
                else:
                    self.add(reason, fpath, msg)


def unknown_top_fields(obj, allowed):
    """Unknown top-level fields of a built-in object (for fieldValidation=Strict)."""
    out = [k for k in obj if k not in allowed]
    md = obj.get("metadata")
    if isinstance(md, dict):
        out += ["metadata." + k for k in md if k not in OBJECT_META_FIELDS]
    return out
