"""A small HTTP proxy in front of the tests' S3 server that breaks chosen answers, run as its own
process: ``python faultproxy.py UPSTREAM_PORT RULES_FILE`` prints the port it listens on.

Requests pass through byte for byte (the Host header too, so SigV4 signatures still verify
upstream). ``RULES_FILE`` (JSON, re-read for every request, so a test changes faults without a
restart) is a list of rules ``{"match": "<substring of the path>", "fault": F, "after": N,
"times": T}``: the rule skips the first N GETs whose path holds ``match`` and breaks the next T
(all of them when T is absent). Faults:

- ``503``: answer ``503 SlowDown`` (S3's throttling answer, which clients retry);
- ``cut``: send the status, the headers and half of the body, then close the connection;
- ``short``: send the first half of the body as if it were all (a store answering fewer bytes
  than were asked: a truncated object);
- ``404``: answer ``404 NoSuchKey`` (an object listed but gone when read).

Each fault served is a line ``<fault> <path>`` in ``RULES_FILE.served``.
"""

from __future__ import annotations

import http.client
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection"}
_LOCK = threading.Lock()
_SEEN: dict[int, int] = {}
"""Rule number -> matching GETs seen so far."""


def _fault(path: str, rules_file: str) -> str | None:
    try:
        with open(rules_file) as f:
            rules = json.load(f)
    except (OSError, ValueError):
        return None
    with _LOCK:
        for n, rule in enumerate(rules):
            if rule["match"] not in path:
                continue
            seen = _SEEN.get(n, 0)
            _SEEN[n] = seen + 1
            after = rule.get("after", 0)
            times = rule.get("times")
            if seen >= after and (times is None or seen < after + times):
                # what was broken, for the test to see its fault was met (never vacuous)
                with open(rules_file + ".served", "a") as served:
                    served.write(f"{rule['fault']} {path}\n")
                return str(rule["fault"])
    return None


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    upstream_port = 0
    rules_file = ""

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _forward(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        fault = _fault(self.path, self.rules_file) if self.command == "GET" else None
        if fault == "503":
            self._error(503, "SlowDown", "Please reduce your request rate.")
            return
        if fault == "404":
            self._error(404, "NoSuchKey", "The specified key does not exist.")
            return
        upstream = http.client.HTTPConnection("127.0.0.1", self.upstream_port, timeout=30)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP}
        upstream.request(self.command, self.path, body=body, headers=headers)
        answer = upstream.getresponse()
        data = answer.read()
        upstream.close()
        if fault == "short" and answer.status in (200, 206):
            data = data[: len(data) // 2]
        self.send_response(answer.status, answer.reason)
        for k, v in answer.getheaders():
            if k.lower() not in _HOP and k.lower() != "content-length":
                self.send_header(k, v)
        if self.command == "HEAD":  # the object's length, though no body follows
            self.send_header("Content-Length", answer.getheader("Content-Length") or "0")
            self.end_headers()
            return
        if fault == "cut" and answer.status in (200, 206):
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, code: str, message: str) -> None:
        body = (
            f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
            f"<Message>{message}</Message><Resource>{self.path}</Resource></Error>"
        ).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _forward


def main() -> None:
    Proxy.upstream_port = int(sys.argv[1])
    Proxy.rules_file = sys.argv[2]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    server.daemon_threads = True
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
