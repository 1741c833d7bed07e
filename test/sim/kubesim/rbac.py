"""Authentication of ServiceAccount tokens and RBAC authorization, as kube-apiserver does.

Users:
* the admin token and the client certificate of O=system:masters are system:admin in
  group system:masters, which kube-apiserver lets do anything (no RBAC check);
* another client certificate is the user of its CN, in the groups of its O;
* a ServiceAccount token (TokenRequest: POST .../serviceaccounts/NAME/token, what
  `kubectl create token` and the kubelet's projected tokens use) is the user
  system:serviceaccount:NS:NAME in groups system:serviceaccounts,
  system:serviceaccounts:NS and system:authenticated.  Tokens are JWTs signed with a
  key derived from the admin token (so they survive a restart on the same dir); one
  whose ServiceAccount was deleted or re-created (other uid), or that expired, is 401.

Authorization (request attributes as kube-apiserver's RequestInfoFactory derives them):
ClusterRoleBindings grant their ClusterRole everywhere, RoleBindings grant their Role
or ClusterRole in their namespace only; rules match verbs, apiGroups, resources
("res", "res/sub", "*", "*/sub"), resourceNames, and nonResourceURLs ("/path",
"/prefix*", "*") as pkg/apis/rbac/helpers do.  Every authenticated user also has the
bootstrap policy's system:discovery, system:basic-user and system:public-info-viewer
(discovery, /version, /healthz, self access reviews), which a real cluster binds to
system:authenticated.  Denials read exactly as kube-apiserver's.

Escalation prevention: creating or updating a Role or ClusterRole needs every
permission it grants (in that namespace, or cluster-wide) or the `escalate` verb on
it; a binding needs every permission of the role it refers to or the `bind` verb on
that role (rbac/validation.ConfirmNoEscalation, bind/escalate checks).

The roles and bindings are cached (rebuilt at once after a write through this server,
and at most a second old otherwise, like the informer cache kube-apiserver uses).
Denied requests are kept (forbidden_log, /sim/forbidden) so tests can fail on them.
"""

import base64
import hashlib
import hmac
import json
import threading
import time
import urllib.parse

from . import errors
from .etcd import prefix_end
from .store import etcd_errors

RBAC_GROUP = "rbac.authorization.k8s.io"
MASTERS = "system:masters"
SA_PREFIX = "system:serviceaccount:"
ISSUER = "https://kubernetes.default.svc"
NAMESPACE_SUBRESOURCES = ("status", "finalize")

# The bootstrap policy every authenticated user has (system:discovery,
# system:public-info-viewer, system:basic-user).
AUTHENTICATED_RULES = [
    {"verbs": ["get"], "nonResourceURLs": ["/api", "/api/*", "/apis", "/apis/*", "/healthz",
                                           "/livez", "/readyz", "/version", "/version/",
                                           "/openapi", "/openapi/*"]},
    {"verbs": ["create"], "apiGroups": ["authorization.k8s.io"],
     "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]},
]


class User:
    __slots__ = ("name", "groups", "uid")

    def __init__(self, name, groups, uid=""):
        self.name = name
        self.groups = list(groups)
        self.uid = uid

    @property
    def is_master(self):
        return MASTERS in self.groups


ADMIN = User("system:admin", [MASTERS, "system:authenticated"])


class Attributes:
    """What kube-apiserver's RequestInfoFactory makes of a request."""
    __slots__ = ("resource_request", "verb", "group", "resource", "subresource", "namespace",
                 "name", "path")

    def __init__(self, resource_request, verb, path, group="", resource="", subresource="",
                 namespace="", name=""):
        self.resource_request = resource_request
        self.verb = verb
        self.path = path
        self.group = group
        self.resource = resource
        self.subresource = subresource
        self.namespace = namespace
        self.name = name


def request_attributes(method, path, query):
    verb = method.lower()
    parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/") if p]
    # /api/v1 and /apis/GROUP/VERSION are discovery: non-resource requests
    if len(parts) < 3 or parts[0] not in ("api", "apis") or (parts[0] == "apis" and len(parts) < 4):
        return Attributes(False, verb, path)
    group = ""
    rest = parts[1:]
    if parts[0] == "apis":
        group, rest = rest[0], rest[1:]
    rest = rest[1:]     # the version
    if rest and rest[0] in ("watch", "proxy"):
        if len(rest) < 2:
            return Attributes(False, verb, path)
        verb, rest = rest[0], rest[1:]
    else:
        verb = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch",
                "DELETE": "delete"}.get(method, "")
    ns = ""
    if rest and rest[0] == "namespaces" and len(rest) > 1:
        ns = rest[1]
        if len(rest) > 2 and rest[2] not in NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    a = Attributes(True, verb, path, group, rest[0] if rest else "",
                   rest[2] if len(rest) >= 3 else "", ns, rest[1] if len(rest) >= 2 else "")
    if not a.name and a.verb == "get":
        a.verb = "watch" if query.get("watch") in ("true", "1") else "list"
        fs = query.get("fieldSelector") or ""
        for term in fs.split(","):
            k, _, v = term.partition("=")
            if k.strip() == "metadata.name" and not v.startswith("="):
                a.name = v.strip()
    if not a.name and a.verb == "delete":
        a.verb = "deletecollection"
    return a


def _has(lst, v):
    return "*" in (lst or []) or v in (lst or [])


def rule_allows(rule, a):
    if not _has(rule.get("verbs"), a.verb):
        return False
    if not a.resource_request:
        for u in rule.get("nonResourceURLs") or []:
            if u == "*" or u == a.path or (u.endswith("*") and a.path.startswith(u[:-1])):
                return True
        return False
    if not _has(rule.get("apiGroups"), a.group):
        return False
    combined = a.resource + ("/" + a.subresource if a.subresource else "")
    ok = False
    for r in rule.get("resources") or []:
        if r == "*" or r == combined or (a.subresource and r == "*/" + a.subresource):
            ok = True
            break
    if not ok:
        return False
    names = rule.get("resourceNames") or []
    return not names or a.name in names


def _subject_matches(s, user):
    kind = s.get("kind")
    if kind == "User":
        return s.get("name") == user.name
    if kind == "Group":
        return s.get("name") in user.groups
    if kind == "ServiceAccount":
        return user.name == "%s%s:%s" % (SA_PREFIX, s.get("namespace", ""), s.get("name", ""))
    return False


def _b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def _unb64url(s):
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


class Rbac:
    MAX_AGE = 1.0
    FORBIDDEN_KEEP = 500

    def __init__(self, store, registry, admin_token, log=None):
        self.store = store
        self.registry = registry
        self.key = hashlib.sha256(b"kube-apiserver-sim service account tokens\0" +
                                  admin_token.encode()).digest()
        self.log = log or (lambda *a: None)
        self._lock = threading.Lock()
        self._built = 0.0
        self._dirty = True
        self._roles = {}            # (ns or "", name) -> rules of Role / ClusterRole
        self._cluster_bindings = []
        self._bindings = {}         # ns -> [binding]
        self._sa_seen = {}          # (ns, name, uid) -> monotonic time it was last found
        self.forbidden_log = []     # what was denied: dicts, newest last

    # -- cache -------------------------------------------------------------------------
    def after_write(self, rt, event, obj):
        if rt.group == RBAC_GROUP or (rt.plural == "serviceaccounts" and not rt.group):
            with self._lock:
                self._dirty = True
                if rt.plural == "serviceaccounts":
                    self._sa_seen.clear()

    @etcd_errors    # storage failures answer as the store's do (503 while etcd is gone)
    def _list(self, plural):
        rt = self.registry.lookup(RBAC_GROUP if plural != "serviceaccounts" else "", "v1", plural)
        prefix = rt.prefix(None)
        _, kvs, _, _ = self.store.etcd.range(prefix, prefix_end(prefix))
        return [self.store._decode(rt, kv) for kv in kvs]

    def _refresh_locked(self):
        if not self._dirty and time.monotonic() - self._built < self.MAX_AGE:
            return
        roles, cbs, bs = {}, [], {}
        for o in self._list("clusterroles"):
            roles[("", o["metadata"]["name"])] = o.get("rules") or []
        for o in self._list("roles"):
            md = o["metadata"]
            roles[(md.get("namespace", ""), md["name"])] = o.get("rules") or []
        cbs = self._list("clusterrolebindings")
        for o in self._list("rolebindings"):
            bs.setdefault(o["metadata"].get("namespace", ""), []).append(o)
        self._roles, self._cluster_bindings, self._bindings = roles, cbs, bs
        self._built, self._dirty = time.monotonic(), False

    def _role_rules(self, ref, ns):
        if ref.get("kind") == "ClusterRole":
            return self._roles.get(("", ref.get("name")))
        return self._roles.get((ns, ref.get("name")))

    def rules_for(self, user, ns):
        """Every rule that applies to user in namespace ns ("" = cluster-wide only)."""
        with self._lock:
            self._refresh_locked()
            out = list(AUTHENTICATED_RULES)
            for b in self._cluster_bindings:
                if any(_subject_matches(s, user) for s in b.get("subjects") or []):
                    out.extend(self._role_rules(b.get("roleRef") or {}, "") or [])
            if ns:
                for b in self._bindings.get(ns, []):
                    if any(_subject_matches(s, user) for s in b.get("subjects") or []):
                        out.extend(self._role_rules(b.get("roleRef") or {}, ns) or [])
            return out

    # -- authentication ----------------------------------------------------------------
    def issue_token(self, ns, sa, expiration_s, audiences, bound=None):
        now = int(time.time())
        md = sa.get("metadata") or {}
        claims = {"iss": ISSUER, "sub": "%s%s:%s" % (SA_PREFIX, ns, md.get("name")),
                  "aud": audiences or [ISSUER], "iat": now, "nbf": now, "exp": now + expiration_s,
                  "kubernetes.io": {"namespace": ns,
                                    "serviceaccount": {"name": md.get("name"), "uid": md.get("uid")}}}
        if bound:
            claims["kubernetes.io"][bound.get("kind", "").lower() or "pod"] = {
                "name": bound.get("name"), "uid": bound.get("uid")}
        head = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
        body = _b64url(json.dumps(claims, separators=(",", ":")).encode())
        sig = hmac.new(self.key, ("%s.%s" % (head, body)).encode(), hashlib.sha256).digest()
        return "%s.%s.%s" % (head, body, _b64url(sig)), now + expiration_s

    def user_of_token(self, token):
        """The ServiceAccount user of a valid token, or None."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        sig = hmac.new(self.key, ("%s.%s" % (parts[0], parts[1])).encode(), hashlib.sha256).digest()
        try:
            if not hmac.compare_digest(_unb64url(parts[2]), sig):
                return None
            claims = json.loads(_unb64url(parts[1]))
        except (ValueError, TypeError):
            return None
        if claims.get("exp", 0) < time.time():
            return None
        k8s = claims.get("kubernetes.io") or {}
        ns, sa = k8s.get("namespace"), (k8s.get("serviceaccount") or {})
        if not ns or not sa.get("name") or not self._sa_exists(ns, sa.get("name"), sa.get("uid")):
            return None
        return User("%s%s:%s" % (SA_PREFIX, ns, sa["name"]),
                    ["system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"],
                    sa.get("uid") or "")

    def _sa_exists(self, ns, name, uid):
        key = (ns, name, uid)
        with self._lock:
            seen = self._sa_seen.get(key)
            if seen is not None and time.monotonic() - seen < 5.0:
                return True
        rt = self.registry.lookup("", "v1", "serviceaccounts")
        obj, _ = self.store.read(rt, ns, name)
        if obj is None or (uid and (obj.get("metadata") or {}).get("uid") != uid):
            return False
        with self._lock:
            self._sa_seen[key] = time.monotonic()
        return True

    @staticmethod
    def user_of_cert(cert):
        cn, orgs = "", []
        for rdn in cert.get("subject") or ():
            for k, v in rdn:
                if k == "commonName":
                    cn = v
                elif k == "organizationName":
                    orgs.append(v)
        return User(cn, orgs + ["system:authenticated"])

    # -- authorization -----------------------------------------------------------------
    def allowed(self, user, a):
        if user.is_master:
            return True
        return any(rule_allows(r, a) for r in self.rules_for(user, a.namespace if a.resource_request else ""))

    def authorize(self, user, a, agent=""):
        """Raise kube-apiserver's 403 unless user may do a."""
        if self.allowed(user, a):
            return
        if a.resource_request:
            gr = a.resource + ("." + a.group if a.group else "")
            what = 'resource "%s"' % (a.resource + ("/" + a.subresource if a.subresource else ""))
            where = 'in the namespace "%s"' % a.namespace if a.namespace else "at the cluster scope"
            why = 'User "%s" cannot %s %s in API group "%s" %s' % (user.name, a.verb, what, a.group, where)
            msg = ('%s "%s" is forbidden: %s' % (gr, a.name, why)) if a.name else "%s is forbidden: %s" % (gr, why)
            details = {"name": a.name, "group": a.group, "kind": a.resource} if a.name else \
                {"group": a.group, "kind": a.resource}
            if not a.group:
                details.pop("group")
        else:
            msg = 'forbidden: User "%s" cannot %s path "%s"' % (user.name, a.verb, a.path)
            details = None
        self._record(user, a, agent, msg)
        raise errors.ApiError(403, "Forbidden", msg, details)

    def _record(self, user, a, agent, msg):
        with self._lock:
            self.forbidden_log.append({"time": time.time(), "user": user.name, "agent": agent,
                                       "verb": a.verb, "path": a.path, "message": msg})
            del self.forbidden_log[:-self.FORBIDDEN_KEEP]
        self.log("RBAC DENY %s" % msg)

    # -- escalation prevention ---------------------------------------------------------
    @staticmethod
    def _atoms(rule):
        """A rule broken into single permissions (pkg/registry/rbac/validation BreakdownRule)."""
        out = []
        for v in rule.get("verbs") or []:
            for g in rule.get("apiGroups") or []:
                for r in rule.get("resources") or []:
                    for n in rule.get("resourceNames") or [""]:
                        out.append(("r", v, g, r, n))
            for u in rule.get("nonResourceURLs") or []:
                out.append(("u", v, u))
        return out

    @staticmethod
    def _covers(owner, atom):
        """Does an owned rule hold this single permission (wildcards only by wildcards)?"""
        if atom[0] == "u":
            _, v, u = atom
            if not _has(owner.get("verbs"), v):
                return False
            return any(o == "*" or o == u or (o.endswith("*") and u.startswith(o[:-1]))
                       for o in owner.get("nonResourceURLs") or [])
        _, v, g, r, n = atom
        if not _has(owner.get("verbs"), v) or not _has(owner.get("apiGroups"), g):
            return False
        res = owner.get("resources") or []
        sub = r.split("/", 1)[1] if "/" in r else ""
        if not ("*" in res or r in res or (sub and "*/" + sub in res)):
            return False
        names = owner.get("resourceNames") or []
        return not names or (n and n in names)

    def not_held(self, user, ns, rules):
        owned = self.rules_for(user, ns)
        return [atom for rule in rules for atom in self._atoms(rule)
                if not any(self._covers(o, atom) for o in owned)]

    def check_escalation(self, user, rt, ns, obj, agent=""):
        """For creates and updates of roles and bindings, after the request itself was allowed."""
        if user.is_master or rt.group != RBAC_GROUP:
            return
        name = (obj.get("metadata") or {}).get("name", "")
        if rt.plural in ("roles", "clusterroles"):
            a = Attributes(True, "escalate", "", RBAC_GROUP, rt.plural, "", ns or "", name)
            if self.allowed(user, a):
                return
            missing = self.not_held(user, ns or "", obj.get("rules") or [])
            if missing:
                self._deny_escalation(user, rt, name, missing, agent)
        elif rt.plural in ("rolebindings", "clusterrolebindings"):
            ref = obj.get("roleRef") or {}
            role_plural = "clusterroles" if ref.get("kind") == "ClusterRole" else "roles"
            a = Attributes(True, "bind", "", RBAC_GROUP, role_plural, "", ns or "", ref.get("name", ""))
            if self.allowed(user, a):
                return
            with self._lock:
                self._refresh_locked()
                rules = self._role_rules(ref, ns or "")
            if rules is None:
                raise errors.ApiError(
                    404, "NotFound", '%s.%s "%s" not found' % (role_plural, RBAC_GROUP, ref.get("name")),
                    {"name": ref.get("name"), "group": RBAC_GROUP, "kind": role_plural})
            missing = self.not_held(user, ns or "", rules)
            if missing:
                self._deny_escalation(user, rt, name, missing, agent)

    def _deny_escalation(self, user, rt, name, missing, agent):
        def fmt(atom):
            if atom[0] == "u":
                return "{NonResourceURLs:[%s], Verbs:[%s]}" % (json.dumps(atom[2]), json.dumps(atom[1]))
            s = "{APIGroups:[%s], Resources:[%s]" % (json.dumps(atom[2]), json.dumps(atom[3]))
            if atom[4]:
                s += ", ResourceNames:[%s]" % json.dumps(atom[4])
            return s + ", Verbs:[%s]}" % json.dumps(atom[1])
        msg = ('%s.%s "%s" is forbidden: user "%s" (groups=%s) is attempting to grant RBAC permissions '
               "not currently held:\n%s" % (rt.plural, RBAC_GROUP, name, user.name,
                                            json.dumps(user.groups), "\n".join(fmt(m) for m in missing)))
        a = Attributes(True, "escalate", "", RBAC_GROUP, rt.plural, "", "", name)
        self._record(user, a, agent, msg)
        raise errors.ApiError(403, "Forbidden", msg, {"name": name, "group": RBAC_GROUP, "kind": rt.plural})
