#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""upload_receiver.py DIR [PORT | down] — a Pyroscope-like /ingest (and OTLP/HTTP
/v1development/profiles) receiver for the upload tests. With "down" it binds a free port
(DIR/port) but refuses connections until DIR/up exists.

Python's standard library only (http.server, email). Listens on 127.0.0.1 on PORT or a free
port (written to DIR/port once listening) and records every request it answers 2xx as
DIR/req-N/: `query` (the raw query string), `headers`, and one file per multipart part
(`jfr`, `labels`, `profile`); an OTLP request (POST /v1development/profiles, gzip'd
protobuf) as `otlp` (the body, gunzipped) and `path`. Every request, whatever the answer, is a line of DIR/log:
"N MONOTONIC_SECONDS MODE BODY_BYTES_READ".

What it answers is read from DIR/mode before each request (the test changes it while the
daemon runs):
  ok            200 (the default when DIR/mode is missing)
  CODE          that status (500, 400, 401, 403, 404, 413, 422...)
  429 SECONDS   429 with Retry-After: SECONDS
  auth CODE TOKEN
                200 when the request carries "Authorization: Bearer TOKEN", else CODE
                (401, 403, 404: a backend whose credentials were rotated; the log's mode
                of a denied request is "denied CODE")
  partial N MSG 200 with an ExportProfilesServiceResponse whose partial success rejects N
                profiles with message MSG (an OTLP receiver's answer)
  refuse-once CODE
                CODE for the next request (saved as DIR/refused-N/, like req-N/), then
                mode ok
  hang          reads nothing and answers nothing until the client gives up
  close         reads half the body, then closes the connection without an answer
"""
import email.parser
import gzip
import email.policy
import http.server
import os
import socket
import sys
import threading
import time

DIR = sys.argv[1]
lock = threading.Lock()
counter = [0]


def mode():
    try:
        with open(os.path.join(DIR, "mode")) as f:
            return f.read().split()
    except FileNotFoundError:
        return ["ok"]


def log(n, m, nbytes):
    with lock, open(os.path.join(DIR, "log"), "a") as f:
        f.write("%d %.3f %s %d\n" % (n, time.monotonic(), m, nbytes))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def answer(self, code, extra=None):
        body = b"refused by the test receiver\n" if code >= 400 else b"ok\n"
        self.send_response(code)
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        with lock:
            counter[0] += 1
            n = counter[0]
        m = mode()
        length = int(self.headers.get("Content-Length", "0"))
        if m[0] == "hang":
            log(n, "hang", 0)
            time.sleep(3600)
            return
        if m[0] == "close":
            got = self.rfile.read(length // 2)
            log(n, "close", len(got))
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        body = self.rfile.read(length)
        if m[0] == "auth" and self.headers.get("Authorization") != "Bearer " + m[2]:
            m = ["denied", m[1]]
        log(n, " ".join(m), len(body))
        if m[0] == "429":
            return self.answer(429, {"Retry-After": m[1]})
        if m[0].isdigit():
            return self.answer(int(m[0]))
        if m[0] == "denied":
            return self.answer(int(m[1]))
        if m[0] == "refuse-once":
            self.save("refused-%d" % n, body)
            with open(os.path.join(DIR, "mode.tmp"), "w") as f:
                f.write("ok\n")
            os.rename(os.path.join(DIR, "mode.tmp"), os.path.join(DIR, "mode"))
            return self.answer(int(m[1]))
        self.save("req-%d" % n, body)
        if m[0] == "partial":
            return self.answer_partial(int(m[1]), " ".join(m[2:]))
        self.answer(200)

    def answer_partial(self, rejected, msg):
        def varint(v):
            out = b""
            while True:
                b = v & 0x7F
                v >>= 7
                out += bytes([b | (0x80 if v else 0)])
                if not v:
                    return out
        inner = b"\x08" + varint(rejected) + b"\x12" + varint(len(msg)) + msg.encode()
        body = b"\x0a" + varint(len(inner)) + inner
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def save(self, name, body):
        d = os.path.join(DIR, name)
        # built under a hidden name: a glob of the tests (req-[0-9]*) also matched req-N.tmp,
        # hashing a request being saved as a second delivery of it
        tmp = os.path.join(DIR, ".saving-" + name)
        os.makedirs(tmp)
        with open(os.path.join(tmp, "query"), "w") as f:
            f.write(self.path.split("?", 1)[1] if "?" in self.path else "")
        with open(os.path.join(tmp, "headers"), "w") as f:
            f.write(str(self.headers))
        if self.path.split("?", 1)[0].endswith("/v1development/profiles"):
            with open(os.path.join(tmp, "path"), "w") as f:
                f.write(self.path)
            with open(os.path.join(tmp, "otlp"), "wb") as f:
                f.write(gzip.decompress(body) if self.headers.get("Content-Encoding") == "gzip" else body)
            os.rename(tmp, d)
            return
        head = b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n"
        msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + body)
        for part in msg.iter_parts():
            name = part.get_param("name", header="content-disposition")
            if name not in ("jfr", "labels", "profile"):
                continue
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(part.get_payload(decode=True))
        os.rename(tmp, d)  # complete requests only


http.server.ThreadingHTTPServer.allow_reuse_address = True
server = http.server.ThreadingHTTPServer(
    ("127.0.0.1", int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] != "down" else 0),
    Handler, bind_and_activate=False)
server.daemon_threads = True
server.server_bind()
with open(os.path.join(DIR, "port.tmp"), "w") as f:
    f.write(str(server.server_address[1]))
os.rename(os.path.join(DIR, "port.tmp"), os.path.join(DIR, "port"))
# "down": the port bound, not listening (a connection is refused, as with no server at all,
# and no other process can take the port meanwhile) until DIR/up exists
while sys.argv[-1] == "down" and not os.path.exists(os.path.join(DIR, "up")):
    time.sleep(0.05)
server.server_activate()
server.serve_forever()
