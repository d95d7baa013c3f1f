# A svcflow webhook receiver in Python 3, standard library only.
# Run: SVC_WEBHOOK_SECRET=... PORT=8000 python3 receiver.py
import hashlib
import hmac
import json
import os
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

TOLERANCE = 300  # seconds: refuse deliveries signed more than 5 minutes from now


def verify(secret: bytes, timestamp: str, signature: str, body: bytes) -> bool:
    """Check X-Svc-Signature-Timestamped over the raw body and X-Svc-Timestamp."""
    if not timestamp or not signature:
        return False
    if not (timestamp.isascii() and timestamp.isdigit()):
        return False
    mac = hmac.new(secret, timestamp.encode() + b"." + body, hashlib.sha256)
    expected = "sha256=" + mac.hexdigest()
    if not hmac.compare_digest(expected.encode(), signature.encode()):
        return False
    return abs(time.time() - int(timestamp)) <= TOLERANCE


class Receiver(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))  # raw bytes
        ok = verify(
            os.environ["SVC_WEBHOOK_SECRET"].encode(),
            self.headers.get("X-Svc-Timestamp", ""),
            self.headers.get("X-Svc-Signature-Timestamped", ""),
            body,
        )
        if not ok:
            self.send_response(401)
            self.end_headers()
            return
        delivery = json.loads(body)
        # A retry repeats delivery_id: handle each one once.
        print(delivery["delivery_id"], delivery["event"], flush=True)
        self.send_response(204)
        self.end_headers()


server = HTTPServer(("127.0.0.1", int(os.environ.get("PORT", "8000"))), Receiver)
print("listening on", server.server_port, flush=True)
server.serve_forever()
