"""What several script tests share: a real HTTP server on loopback standing in for a service."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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
