"""An HTTP server on localhost, in a thread of the test process, for as long as a test needs
it (the schema registry the decoder asks, the documentation site a browser reads)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@contextmanager
def serving(handler: Callable[..., BaseHTTPRequestHandler]) -> Iterator[str]:
    """``http://127.0.0.1:PORT`` (no trailing slash) while the block runs; then the server is
    shut down, its socket closed and its thread joined."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class Quiet:
    """A request handler's mixin: no access log on stderr (pytest would show it with every
    failure)."""

    def log_message(self, format: str, *args: Any) -> None:
        pass
