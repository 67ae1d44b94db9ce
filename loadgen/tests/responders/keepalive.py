"""A small keep-alive HTTP/1.1 responder for tests: `python keepalive.py PORT [DELAY_MS [PATH]]` answers every GET with
"ok" after DELAY_MS (default 0), one thread per connection; with PATH, only requests of that path are delayed (a
request mix's slow route). Tests stall it from outside (SIGSTOP/SIGCONT)."""

import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep connections alive, as the load tools expect
    disable_nagle_algorithm = True  # headers and body are two writes: Nagle + delayed ACK would add 40 ms
    delay_s = 0.0
    delayed_path: str | None = None  # None: every path

    def do_GET(self):
        if self.delay_s and self.delayed_path in (None, self.path):
            time.sleep(self.delay_s)
        body = b"ok"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024

    def handle_error(self, request, client_address):
        pass  # a client that gave up (a timed-out request) is expected here, not worth a traceback


if __name__ == "__main__":
    Handler.delay_s = float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0.0
    Handler.delayed_path = sys.argv[3] if len(sys.argv) > 3 else None
    Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
