"""A Prometheus query endpoint on 127.0.0.1 answering DCGM exporter samples from a fixed table.

Used by the Prometheus client's tests (tests/unit/compiler/observe/test_prometheus.py) and by
``migc status --prometheus`` (tests/test_status.py).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse


# The HTTP API's instant query answer (prometheus web/api/v1/api.go): {"status": "success",
# "data": {"resultType": "vector", "result": [{"metric": {...}, "value": [<unix time>, "<value>"]}]}}
# and for a failure {"status": "error", "errorType": ..., "error": ...} with a 4xx/5xx code.
def dcgm_sample(
    metric: str, node: str, gpu: int, value: float, gi: str = "", profile: str = "", **extra: str
) -> dict[str, Any]:
    labels = {
        "__name__": metric,
        "Hostname": node,
        "gpu": str(gpu),
        "modelName": "NVIDIA A100-SXM4-80GB",
        **extra,
    }
    if gi:
        labels.update({"GPU_I_ID": gi, "GPU_I_PROFILE": profile})
    return {"metric": labels, "value": [1764568800.0, repr(value)]}


class FakePrometheus:
    """A Prometheus query endpoint on 127.0.0.1 answering from a fixed table of samples."""

    def __init__(
        self, samples: dict[str, list[dict[str, Any]]], *, status: int = 200, delay: float = 0.0
    ) -> None:
        self.samples, self.status, self.delay = samples, status, delay
        self.queries: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlparse(self.path)
                q = parse_qs(url.query).get("query", [""])[0]
                outer.queries.append(q)
                body: dict[str, Any]
                time.sleep(outer.delay)
                if url.path != "/api/v1/query":
                    code, body = 404, {"status": "error", "errorType": "not_found", "error": "no route"}
                elif outer.status != 200:
                    code, body = outer.status, {"status": "error", "errorType": "internal", "error": "boom"}
                else:
                    code = 200
                    body = {
                        "status": "success",
                        "data": {"resultType": "vector", "result": outer.samples.get(q, [])},
                    }
                raw = json.dumps(body).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    self.end_headers()
                    self.wfile.write(raw)
                except OSError:
                    pass  # the client gave up (timeout test)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakePrometheus:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
