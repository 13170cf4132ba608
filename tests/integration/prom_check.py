#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""prom_check.py — the client side of test_daemon_metrics.sh (python3 standard library only).

  prom_check.py scrape URL        GET URL; check the status, the content type and the text
                                  with a strict parser of the Prometheus text format 0.0.4;
                                  print {"series{labels}": value} as JSON; exit 1 and say why
                                  on any deviation
  prom_check.py parse FILE        the same on a file
  prom_check.py abuse HOST PORT   hostile and odd clients: wrong paths (404), methods (405),
                                  HEAD, bytes that are not HTTP, a request cut in the middle,
                                  an oversized request, idle connections, many scrapes at once;
                                  exit 1 unless the endpoint answered each as it should and
                                  still serves a valid scrape afterwards

The parser is strict on purpose (stricter than Prometheus where the format allows choices
that ctxprof does not make): every line is a HELP, a TYPE or a sample; a family's HELP and
TYPE come once, before its samples, and its samples are contiguous; names and label names
match the format's grammar; label values use only the escapes \\\\, \\" and \\n; values are
floats, NaN or +-Inf; no series appears twice; a counter is never negative; the text ends
with a newline.
"""
import http.client
import json
import math
import re
import socket
import sys
import threading
import time
import urllib.request

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
HELP_RE = re.compile(r"^# HELP (" + NAME + r") ((?:[^\\\n]|\\\\|\\n)*)$")
TYPE_RE = re.compile(r"^# TYPE (" + NAME + r") (counter|gauge|histogram|summary|untyped)$")
SAMPLE_RE = re.compile(r"^(" + NAME + r")(\{.*\})? (\S+)( -?[0-9]+)?$")
PAIR_RE = re.compile(r'(' + LABEL + r')="((?:[^"\\\n]|\\\\|\\"|\\n)*)"(,|$)')
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def fail(msg):
    print("prom_check: " + msg, file=sys.stderr)
    sys.exit(1)


def value_of(s, line):
    if s in ("NaN", "+Inf", "-Inf"):
        return float(s.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.fullmatch(r"[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?", s):
        fail("line %d: bad value %r" % (line, s))
    return float(s)


def labels_of(s, line):
    """'{a="x",b="y"}' -> (('a','x'),('b','y')), strictly."""
    if not s:
        return ()
    body, out, pos = s[1:-1], [], 0
    if not body:
        return ()
    while pos < len(body):
        m = PAIR_RE.match(body, pos)
        if not m:
            fail("line %d: bad labels %r" % (line, s))
        if m.group(1).startswith("__"):
            fail("line %d: reserved label name %s" % (line, m.group(1)))
        out.append((m.group(1), m.group(2)))
        pos = m.end()
        if m.group(3) == "," and pos == len(body):
            fail("line %d: trailing comma in %r" % (line, s))
    names = [n for n, _ in out]
    if len(set(names)) != len(names):
        fail("line %d: a label twice in %r" % (line, s))
    return tuple(out)


def parse(text):
    if not text.endswith("\n"):
        fail("the text does not end with a newline")
    helps, types, done, series = {}, {}, set(), {}
    current = None
    for n, line in enumerate(text[:-1].split("\n"), 1):
        if line.startswith("#"):
            m = HELP_RE.match(line) or TYPE_RE.match(line)
            if not m:
                fail("line %d: a comment that is neither HELP nor TYPE: %r" % (n, line))
            name, table = m.group(1), helps if line.startswith("# HELP") else types
            if name in table or name in done:
                fail("line %d: %s declared again" % (n, name))
            if current != name:
                if current:
                    done.add(current)
                current = name
            table[name] = m.group(2)
            continue
        m = SAMPLE_RE.match(line)
        if not m:
            fail("line %d: not a sample: %r" % (n, line))
        name = m.group(1)
        if name != current:
            fail("line %d: sample of %s outside its family (current %s)" % (n, name, current))
        if name not in types or name not in helps:
            fail("line %d: %s has no TYPE or HELP before its samples" % (n, name))
        labels = labels_of(m.group(2), n)
        v = value_of(m.group(3), n)
        if types[name] == "counter" and (v < 0 or math.isnan(v)):
            fail("line %d: counter %s is %r" % (n, name, v))
        key = name + ("{" + ",".join('%s="%s"' % kv for kv in labels) + "}" if labels else "")
        if key in series:
            fail("line %d: %s twice" % (n, key))
        series[key] = v
    return series


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        if r.status != 200:
            fail("%s: HTTP %d" % (url, r.status))
        ct = r.headers.get("Content-Type")
        if ct != CONTENT_TYPE:
            fail("%s: Content-Type %r" % (url, ct))
        return parse(r.read().decode("utf-8"))


def request(host, port, method, path, body=None):
    c = http.client.HTTPConnection(host, port, timeout=10)
    c.request(method, path, body=body)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, dict(r.getheaders()), data


def raw(host, port, data, read=True):
    """Send bytes; return what comes back until the server closes (b'' if nothing)."""
    s = socket.create_connection((host, port), timeout=15)
    s.sendall(data)
    got = b""
    if read:
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                got += b
        except socket.timeout:
            fail("the server kept a connection open after %r" % data[:40])
    s.close()
    return got


def abuse(host, port):
    url = "http://%s:%d/metrics" % (host, port)
    for path in ("/", "/metricsx", "/metrics/", "/favicon.ico", "/%00", "/" + "a" * 2000):
        st, _, _ = request(host, port, "GET", path)
        if st != 404:
            fail("GET %s: HTTP %d, want 404" % (path[:40], st))
    for method in ("POST", "PUT", "DELETE"):
        st, h, _ = request(host, port, method, "/metrics", body=b"x=1")
        if st != 405 or "GET" not in h.get("Allow", ""):
            fail("%s /metrics: HTTP %d (Allow %r), want 405" % (method, st, h.get("Allow")))
    st, h, body = request(host, port, "HEAD", "/metrics")
    if st != 200 or body or int(h.get("Content-Length", "0")) <= 0:
        fail("HEAD /metrics: HTTP %d, %d body bytes, Content-Length %r" %
             (st, len(body), h.get("Content-Length")))
    # not HTTP at all, a request line cut short, a header far too large: an error or a
    # closed connection, never a hang or a crash
    for junk in (b"\x00\xff\x16\x03\x01garbage\r\n\r\n", b"GET /metrics HTTP/1.1\r\nHost:",
                 b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 100000 + b"\r\n\r\n",
                 b"GET /metrics HTTP/9.9\r\n\r\n"):
        got = raw(host, port, junk, read=junk.endswith(b"\r\n\r\n"))
        if got.startswith(b"HTTP/1.1 200"):
            fail("%r answered 200" % junk[:40])
    # idle connections (fewer than the endpoint's limit) while scrapes go on
    idle = [socket.create_connection((host, port), timeout=5) for _ in range(20)]
    scrape(url)
    # many scrapes at once
    errors = []

    def one():
        try:
            scrape(url)
        except SystemExit:
            errors.append("invalid text")
        except Exception as e:  # noqa: BLE001 - any failure is the test's failure
            errors.append(repr(e))

    threads = [threading.Thread(target=one) for _ in range(50)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in idle:
        s.close()
    if errors:
        fail("%d of 50 concurrent scrapes failed: %s" % (len(errors), errors[:3]))
    print("50 concurrent scrapes in %.2f s" % (time.time() - t0))
    # a flood past the connection limit: the extra ones are refused, the endpoint serves
    # again once they are gone
    flood = []
    for _ in range(300):
        try:
            flood.append(socket.create_connection((host, port), timeout=5))
        except OSError:
            break
    for s in flood:
        s.close()
    print("flood: %d connections opened and closed" % len(flood))
    deadline = time.time() + 20
    while True:
        try:
            scrape(url)
            break
        except (OSError, http.client.HTTPException) as e:
            if time.time() > deadline:
                fail("no scrape served after the flood: %r" % e)
            time.sleep(0.1)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "scrape":
        print(json.dumps(scrape(sys.argv[2])))
    elif len(sys.argv) == 3 and sys.argv[1] == "parse":
        with open(sys.argv[2], encoding="utf-8") as f:
            print(json.dumps(parse(f.read())))
    elif len(sys.argv) == 4 and sys.argv[1] == "abuse":
        abuse(sys.argv[2], int(sys.argv[3]))
    else:
        fail(__doc__)


if __name__ == "__main__":
    main()
