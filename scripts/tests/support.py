"""What several script tests share: the built executables (the launcher among them) and a real HTTP
server on loopback standing in for a service."""

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import harness

# Where `swift build` put the executables: scripts/test.sh runs these tests after it and says where.
BIN = os.environ.get("PIPELINE_BIN_DIR") or os.path.join(os.path.dirname(__file__), "..", "..", ".build", "debug")


def use_built_binaries():
    """Names the built executables to the harness (its Redis comes from `attribution-bench redis`);
    fails, never skips, where they are not built."""
    launcher = os.path.join(BIN, "attribution-bench")
    if not os.access(launcher, os.X_OK):
        raise RuntimeError(f"{launcher} is not built: run `swift build` first (scripts/test.sh does)")
    harness.use_binaries(BIN)


class JSONServer:
    """Answers every GET with `answer` (a dict the test may change meanwhile) as JSON, from a thread,
    on a free loopback port (`url`) until `close`."""

    def __init__(self, answer):
        self.answer = answer
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                body = json.dumps(owner.answer).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
