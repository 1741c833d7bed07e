"""Kubernetes Status errors (https://kubernetes.io/docs/reference/using-api/api-concepts/, the Status kind).

Every failure the simulator returns is an ApiError turned into a Status body, so
clients see the exact code/reason/details shapes a kube-apiserver produces.
NotFound/AlreadyExists/Conflict carry the plural in details.kind and qualify
group resources in the message (`etcds.operator.openshift.io "cluster"`);
Invalid carries the Kind.
"""


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None, headers=None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self):
        st = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
              "message": self.message, "reason": self.reason}
        if self.details:
            st["details"] = self.details
        st["code"] = self.code
        return st


def qualified(rt):
    """'configmaps' for core, 'etcds.operator.openshift.io' for named groups."""
    return rt.plural if not rt.group else "%s.%s" % (rt.plural, rt.group)


def _details(rt, name, **extra):
    d = {}
    if name is not None:
        d["name"] = name
    if rt.group:
        d["group"] = rt.group
    d["kind"] = rt.plural
    d.update(extra)
    return d


def not_found(rt, name):
    return ApiError(404, "NotFound", '%s "%s" not found' % (qualified(rt), name), _details(rt, name))


def already_exists(rt, name):
    return ApiError(409, "AlreadyExists", '%s "%s" already exists' % (qualified(rt), name),
                    _details(rt, name))


def conflict(rt, name, why=None):
    why = why or ("the object has been modified; please apply your changes to the latest "
                  "version and try again")
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s'
                    % (qualified(rt), name, why), _details(rt, name))


def invalid(rt, name, causes):
    """422 Invalid; causes = [(type, field, message)], type like FieldValueInvalid."""
    kind_q = rt.kind if not rt.group else "%s.%s" % (rt.kind, rt.group)
    parts = []
    out = []
    for ctype, field, msg in causes:
        parts.append("%s: %s" % (field, msg) if field else msg)
        out.append({"reason": ctype, "message": msg, "field": field})
    message = '%s "%s" is invalid: ' % (kind_q, name or "")
    message += parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    d = {"name": name or "", "kind": rt.kind, "causes": out}
    if rt.group:
        d = {"name": name or "", "group": rt.group, "kind": rt.kind, "causes": out}
    return ApiError(422, "Invalid", message, d)


def invalid_plain(kind, name, causes, group=""):
    """422 for option objects (ListOptions, PatchOptions) that are not resources."""
    class _RT:
        pass
    rt = _RT()
    rt.kind, rt.group, rt.plural = kind, group, kind
    return invalid(rt, name, causes)


def bad_request(message):
    return ApiError(400, "BadRequest", message)


def forbidden(rt, name, message, causes=None):
    msg = '%s "%s" is forbidden: %s' % (qualified(rt), name, message) if name is not None \
        else "%s is forbidden: %s" % (qualified(rt), message)
    extra = {"causes": causes} if causes else {}
    return ApiError(403, "Forbidden", msg, _details(rt, name, **extra))


def expired(message):
    return ApiError(410, "Expired", message)


def method_not_allowed(message="the server does not allow this method on the requested resource"):
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media(message):
    return ApiError(415, "UnsupportedMediaType", message)


def not_acceptable(message):
    return ApiError(406, "NotAcceptable", message)


def internal(message):
    return ApiError(500, "InternalError", "Internal error occurred: %s" % message,
                    {"causes": [{"message": message}]})


def unavailable(message, retry_after=1):
    return ApiError(503, "ServiceUnavailable", message, {"retryAfterSeconds": retry_after},
                    {"Retry-After": str(retry_after)})


def timeout(message, retry_after=1, causes=None):
    d = {"retryAfterSeconds": retry_after}
    if causes:
        d["causes"] = causes
    return ApiError(504, "Timeout", message, d, {"Retry-After": str(retry_after)})


def too_large_rv(requested, current):
    return timeout("Too large resource version: %d, current: %d" % (requested, current), 1,
                   [{"reason": "ResourceVersionTooLarge",
                     "message": "Too large resource version"}])


def path_not_found():
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def unauthorized():
    return ApiError(401, "Unauthorized", "Unauthorized")
