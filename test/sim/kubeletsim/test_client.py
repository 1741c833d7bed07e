"""kubelet-sim's API client on a server that cuts its replies short.

kube-apiserver restarts under the kubelets in every e2e (a new revision of its etcd-servers):
a watch's chunked stream or a reply's body then ends mid-way, which http.client reports as an
HTTPException, not an OSError. The client must turn it into the OSError its callers retry on;
on 2026-11-29 it did not, the pod source's thread died, and a node never ran its installer pod.
"""

import http.client
import socket
import threading
import unittest

from kubeletsim import client


class CuttingServer:
    """A loopback HTTP server that answers every request with `reply` and closes."""

    def __init__(self, reply):
        self.reply = reply
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with c:
                c.recv(65536)
                c.sendall(self.reply)

    def close(self):
        self.sock.close()


class Kc:
    scheme, host, token, insecure = "http", "127.0.0.1", None, False


class CutReplies(unittest.TestCase):
    def client(self, reply):
        srv = CuttingServer(reply)
        self.addCleanup(srv.close)
        kc = Kc()
        kc.port = srv.port
        return client.Client(kc)

    def test_watch_cut_inside_a_chunk(self):
        c = self.client(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        b"Transfer-Encoding: chunked\r\n\r\n"
                        b"1d\r\n{\"type\":\"ADDED\",\"object\":{}}\n\r\n"
                        b"40\r\n{\"type\":")
        events = []
        with self.assertRaises(OSError) as cm:
            for ev in c.watch("/api/v1/pods?watch=true", read_timeout=5):
                events.append(ev)
        self.assertEqual(events, [{"type": "ADDED", "object": {}}])
        self.assertIsInstance(cm.exception, client.TransportError)
        self.assertIsInstance(cm.exception.__cause__, http.client.HTTPException)

    def test_watch_error_body_cut(self):
        c = self.client(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 100\r\n\r\n{")
        with self.assertRaises(OSError):
            list(c.watch("/api/v1/pods?watch=true", read_timeout=5))

    def test_request_body_cut(self):
        c = self.client(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"kind\":")
        with self.assertRaises(OSError) as cm:
            c.get("/api/v1/pods")
        self.assertIsInstance(cm.exception, client.TransportError)

    def test_request_whole_reply(self):
        c = self.client(b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\n\r\n{\"kind\":\"A\"}\n")
        self.assertEqual(c.get("/api/v1/pods"), {"kind": "A"})


if __name__ == "__main__":
    unittest.main()
