"""Label and field selectors (https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/).

Label selectors: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`,
`k>n`, `k<n`, comma = AND.  `!=` and `notin` match objects without the label, as
in apimachinery's labels package.

Field selectors: `=`, `==`, `!=`, comma = AND, `\\` escapes.  Each resource supports
metadata.name and metadata.namespace plus a fixed per-resource set; anything else is
400 `field label not supported: <field>`, as the apiserver answers.
"""

import re

from . import errors

_KEY_RE = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                     r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE_RE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _bad(msg):
    return errors.bad_request("unable to parse requirement: %s" % msg)


def _check_key(k):
    name = k.rsplit("/", 1)[-1]
    prefix = k[:-len(name) - 1] if "/" in k else ""
    if not _KEY_RE.match(k) or len(name) > 63 or len(prefix) > 253:
        raise _bad('key: Invalid value: "%s": name part must consist of alphanumeric '
                   "characters, '-', '_' or '.', and must start and end with an "
                   "alphanumeric character" % k)


def _check_value(v):
    if len(v) > 63 or not _VALUE_RE.match(v):
        raise _bad('values[0]: Invalid value: "%s": a valid label must be an empty string '
                   "or consist of alphanumeric characters, '-', '_' or '.', and must start "
                   "and end with an alphanumeric character" % v)


_TOKEN_RE = re.compile(r"\s*(==|!=|=|!|\(|\)|,|<|>|[^\s=!(),<>]+)")


def _tokens(s):
    pos = 0
    out = []
    while pos < len(s):
        m = _TOKEN_RE.match(s, pos)
        if not m:
            if s[pos:].strip() == "":
                break
            raise _bad("invalid selector %r" % s)
        out.append(m.group(1))
        pos = m.end()
    return out


class LabelSelector:
    """Parsed label selector: a list of (key, op, values)."""

    def __init__(self, text):
        self.text = text or ""
        self.reqs = self._parse(_tokens(self.text)) if self.text.strip() else []

    @staticmethod
    def _parse(toks):
        reqs = []
        i = 0

        def need(cond, what):
            if not cond:
                raise _bad("expected %s in %r" % (what, " ".join(toks)))

        while i < len(toks):
            if toks[i] == "!":
                need(i + 1 < len(toks), "key after '!'")
                _check_key(toks[i + 1])
                reqs.append((toks[i + 1], "!", ()))
                i += 2
            else:
                key = toks[i]
                need(key not in ("(", ")", ",", "=", "==", "!=", "<", ">"), "key")
                _check_key(key)
                i += 1
                if i >= len(toks) or toks[i] == ",":
                    reqs.append((key, "exists", ()))
                elif toks[i] in ("=", "==", "!="):
                    op = "!=" if toks[i] == "!=" else "="
                    i += 1
                    val = ""
                    if i < len(toks) and toks[i] not in (",", "(", ")"):
                        val = toks[i]
                        i += 1
                    _check_value(val)
                    reqs.append((key, op, (val,)))
                elif toks[i] in ("<", ">"):
                    op = toks[i]
                    i += 1
                    need(i < len(toks), "a number")
                    try:
                        int(toks[i])
                    except ValueError:
                        raise _bad("for 'Gt', 'Lt' operators, the value must be an integer")
                    reqs.append((key, op, (toks[i],)))
                    i += 1
                elif toks[i] in ("in", "notin"):
                    op = toks[i]
                    i += 1
                    need(i < len(toks) and toks[i] == "(", "'('")
                    i += 1
                    vals = []
                    while i < len(toks) and toks[i] != ")":
                        if toks[i] == ",":
                            i += 1
                            continue
                        _check_value(toks[i])
                        vals.append(toks[i])
                        i += 1
                    need(i < len(toks), "')'")
                    i += 1
                    if not vals:
                        vals = [""]
                    reqs.append((key, op, tuple(vals)))
                else:
                    raise _bad("found '%s', expected: '=', '!=', '==', 'in', notin'" % toks[i])
            if i < len(toks):
                need(toks[i] == ",", "','")
                i += 1
                need(i < len(toks), "requirement after ','")
        return reqs

    @property
    def empty(self):
        return not self.reqs

    def matches(self, labels):
        labels = labels or {}
        for key, op, vals in self.reqs:
            has = key in labels
            v = labels.get(key)
            if op == "exists" and not has:
                return False
            if op == "!" and has:
                return False
            if op in ("=", "in") and (not has or v not in vals):
                return False
            if op in ("!=", "notin") and has and v in vals:
                return False
            if op in ("<", ">"):
                try:
                    n = int(v)
                except (TypeError, ValueError):
                    return False
                if (op == "<" and not n < int(vals[0])) or (op == ">" and not n > int(vals[0])):
                    return False
        return True


def _get(obj, path):
    cur = obj
    for p in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(p)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


# Field selectors each resource supports beyond metadata.name/metadata.namespace
# (from the apiserver's registry strategies).
_FIELDS = {
    ("", "pods"): ("spec.nodeName", "spec.restartPolicy", "spec.schedulerName",
                   "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
                   "status.podIP", "status.nominatedNodeName"),
    ("", "nodes"): ("spec.unschedulable",),
    ("", "secrets"): ("type",),
    ("", "namespaces"): ("status.phase",),
    ("", "services"): ("spec.clusterIP", "spec.type"),
    ("", "events"): ("involvedObject.kind", "involvedObject.namespace", "involvedObject.name",
                     "involvedObject.uid", "involvedObject.apiVersion",
                     "involvedObject.resourceVersion", "involvedObject.fieldPath", "reason",
                     "reportingComponent", "source", "type"),
}


def field_value(group, plural, obj, field):
    if field == "metadata.name":
        return (obj.get("metadata") or {}).get("name", "")
    if field == "metadata.namespace":
        return (obj.get("metadata") or {}).get("namespace", "")
    if field == "source" and plural == "events":
        return _get(obj, "source.component")
    if field == "spec.hostNetwork":
        return _get(obj, field) or "false"
    if field == "spec.unschedulable":
        return _get(obj, field) or "false"
    return _get(obj, field)


def _split_unescaped(s, sep):
    parts, cur, i = [], "", 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            cur += c + s[i + 1]
            i += 2
            continue
        if c == sep:
            parts.append(cur)
            cur = ""
        else:
            cur += c
        i += 1
    parts.append(cur)
    return parts


def _unescape(s):
    return re.sub(r"\\(.)", r"\1", s)


class FieldSelector:
    def __init__(self, text, group, plural):
        self.text = text or ""
        self.group, self.plural = group, plural
        self.reqs = []
        if not self.text.strip():
            return
        allowed = ("metadata.name", "metadata.namespace") + _FIELDS.get((group, plural), ())
        for part in _split_unescaped(self.text, ","):
            m = re.match(r"^([^=!]+)(==|!=|=)(.*)$", part.strip(), re.S)
            if not m:
                raise errors.bad_request("invalid selector: '%s'; can't understand '%s'"
                                         % (self.text, part))
            field, op, value = m.group(1).strip(), m.group(2), _unescape(m.group(3))
            if field not in allowed:
                raise errors.bad_request('field label not supported: %s' % field)
            self.reqs.append((field, "!=" if op == "!=" else "=", value))

    @property
    def empty(self):
        return not self.reqs

    def matches(self, obj):
        for field, op, value in self.reqs:
            actual = field_value(self.group, self.plural, obj, field)
            if (op == "=") != (actual == value):
                return False
        return True

    def exact_name(self):
        """The name if the selector pins metadata.name (lets lists read one key)."""
        for field, op, value in self.reqs:
            if field == "metadata.name" and op == "=":
                return value
        return None


class Predicate:
    """Label + field selector of one request."""

    def __init__(self, label_text, field_text, group, plural):
        self.labels = LabelSelector(label_text)
        self.fields = FieldSelector(field_text, group, plural)

    @property
    def everything(self):
        return self.labels.empty and self.fields.empty

    def matches(self, obj):
        if obj is None:
            return False
        return self.labels.matches((obj.get("metadata") or {}).get("labels")) and \
            self.fields.matches(obj)


def selector_matches(sel, labels):
    """A LabelSelector object (matchLabels, matchExpressions) against a label map; a null
    selector matches nothing, an empty one everything (as policy/v1 budgets read it)."""
    if sel is None:
        return False
    if any(labels.get(k) != v for k, v in (sel.get("matchLabels") or {}).items()):
        return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e.get("key"), e.get("operator"), e.get("values") or []
        if (op == "In" and labels.get(k) not in vals) or \
                (op == "NotIn" and k in labels and labels[k] in vals) or \
                (op == "Exists" and k not in labels) or (op == "DoesNotExist" and k in labels):
            return False
    return True
