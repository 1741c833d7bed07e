"""HTTP(S) plumbing: threaded HTTP/1.1 server, TLS with optional client certs,
authentication, JSON and chunked responses.

The TLS handshake runs in the per-connection thread (not in accept), so one slow
or broken client cannot stall the listener.  Client certificates are requested but
optional: a request is authenticated by a certificate the CA verified or by the
bearer token.  Keep-alive is on for ordinary responses; a watch stream closes its
connection when it ends.
"""

import hashlib
import json
import select
import socket
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import errors

MAX_BODY = 3 * 1024 * 1024          # the apiserver's request size limit


class SimHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def __init__(self, sock, app, ssl_ctx):
        # the socket is bound by the caller (port 0 must be resolved before the
        # certificates and files are written)
        super().__init__(sock.getsockname()[:2], Handler, bind_and_activate=False)
        self.socket.close()
        self.socket = sock
        self.server_address = sock.getsockname()[:2]
        self.socket.listen(self.request_queue_size)
        self.app = app
        self.ssl_ctx = ssl_ctx

    def finish_request(self, request, client_address):
        # Responses go out as header + body writes; without TCP_NODELAY, Nagle's
        # algorithm holds the second write for the client's delayed ACK (~40 ms).
        try:
            request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass
        if self.ssl_ctx is None:
            self.RequestHandlerClass(request, client_address, self)
            return
        request.settimeout(10)
        try:
            tls = self.ssl_ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            request.close()
            return
        try:
            tls.settimeout(None)
            self.RequestHandlerClass(tls, client_address, self)
        finally:
            try:
                tls.close()
            except OSError:
                pass

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, ssl.SSLError, socket.timeout, TimeoutError)):
            return  # clients going away mid-response are normal (watch cancellation)
        super().handle_error(request, client_address)


def make_ssl_context(cert, key, ca):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.load_verify_locations(ca)
    ctx.verify_mode = ssl.CERT_OPTIONAL
    ctx.set_alpn_protocols(["http/1.1"])   # no HTTP/2 here: tell Go clients so
    return ctx


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "kube-apiserver-sim"
    sys_version = ""
    timeout = 300   # idle keep-alive connections are closed after this

    def do_GET(self):
        self.body_read = False      # per request: connections are kept alive
        self.server.app.handle(self)

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def send_error(self, code, message=None, explain=None):
        """http.server's own errors (bad request line, unsupported method) as Status."""
        reasons = {400: "BadRequest", 404: "NotFound", 405: "MethodNotAllowed",
                   408: "Timeout", 413: "RequestEntityTooLarge", 414: "RequestURITooLong",
                   431: "RequestHeaderFieldsTooLarge", 505: "BadRequest"}
        self.close_connection = True
        if code == 501:
            code = 405      # unknown HTTP method: the apiserver says MethodNotAllowed
        try:
            err = errors.ApiError(code, reasons.get(code, "InternalError"), message or
                                  "request rejected by the HTTP layer")
            self.send_json(code, err.status(), {"Connection": "close"})
        except OSError:
            pass

    def log_message(self, fmt, *args):
        self.server.app.access_log(self, fmt % args)

    # -- request helpers ----------------------------------------------------------
    def peer_certificate(self):
        """The verified client certificate (ssl's dict form), or None."""
        getpeercert = getattr(self.connection, "getpeercert", None)
        if getpeercert is None:
            return None
        try:
            return getpeercert() or None
        except (ValueError, ssl.SSLError):
            return None

    def discard_body(self):
        if self.body_read:
            return
        try:
            self.read_body()
        except (errors.ApiError, ValueError, OSError):
            self.close_connection = True

    def read_body(self):
        body = self._read_body()
        if body:
            self.body_digest = hashlib.sha256(body).hexdigest()[:16]
        return body

    def _read_body(self):
        if self.body_read:
            return b""
        self.body_read = True
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                line = self.rfile.readline(1024)
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline(16)
                if len(out) > MAX_BODY:
                    raise errors.ApiError(413, "RequestEntityTooLarge",
                                          "Request entity too large: limit is 3145728")
        n = int(self.headers.get("Content-Length") or 0)
        if n > MAX_BODY:
            self.close_connection = True
            raise errors.ApiError(413, "RequestEntityTooLarge",
                                  "Request entity too large: limit is 3145728")
        return self.rfile.read(n) if n > 0 else b""

    # -- responses -------------------------------------------------------------------
    def send_bytes(self, code, body, content_type="application/json", headers=None):
        lost = getattr(self, "lose_response", None)
        if lost is not None:
            # An `after` fault (faults.py): the request was carried out; its answer is lost.
            self.lose_response, self.status_served = None, code
            return self.send_error_status(lost)
        self.status_sent = code
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache, private")
        for k, v in (headers or {}).items():
            if isinstance(v, list):
                for item in v:
                    self.send_header(k, item)
            else:
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_json(self, code, obj, headers=None, content_type="application/json"):
        self.send_bytes(code, json.dumps(obj, separators=(",", ":")).encode() + b"\n",
                        content_type, headers)

    def send_error_status(self, err):
        self.send_json(err.code, err.status(), err.headers)

    def start_chunked(self, code=200, content_type="application/json", headers=None):
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Transfer-Encoding", "chunked")
        # This connection ends with the stream, and says so: a client (or the HTTP/2
        # front's connection pool) that took it for a kept-alive one would send its next
        # request into the close, and a proxy does not send a POST again.
        self.send_header("Connection", "close")
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True

    def write_chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_chunked(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def client_gone(self):
        """True if the client closed its side (checked while a watch is idle)."""
        sock = self.connection
        try:
            r, _, _ = select.select([sock], [], [], 0)
        except (OSError, ValueError):
            return True
        if not r:
            return False
        prev = sock.gettimeout()
        try:
            sock.setblocking(False)
            try:
                data = sock.recv(1)
            finally:
                sock.settimeout(prev)
            return data == b""
        except (ssl.SSLWantReadError, BlockingIOError):
            return False
        except (OSError, ValueError):
            return True
