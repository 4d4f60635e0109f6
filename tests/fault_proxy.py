"""A fault-injecting HTTP proxy in front of an S3 endpoint (the moto server), for the tests.

It runs in its own process, bound to 127.0.0.1 on a port the OS picks, and is stopped by its
PID (:meth:`FaultProxy.stop`)::

    with FaultProxy(upstream, share=0.3, faults=["503", "500", "reset"], seed=7) as proxy:
        client = boto3.client("s3", endpoint_url=proxy.url, ...)
        ...
        proxy.stats()  # what it did

Rules (given at start, changeable at run time with :meth:`FaultProxy.set_rules`):

``share``     share of the *eligible* requests that get a fault (0..1), drawn from a
              ``random.Random(seed)`` in arrival order, so a single client's run is deterministic
``faults``    the fault kinds, one picked per faulted request (same RNG):
              ``"503"``   503 SlowDown with an S3 XML error body, not forwarded;
              ``"500"``   500 InternalError with an S3 XML error body, not forwarded;
              ``"reset"`` the request is read, not forwarded, and the connection reset (RST);
              ``"drop"``  the request IS forwarded (it takes effect), then the connection is
                          reset instead of answering: the client cannot know it landed;
              ``"stall"`` the request is held, never forwarded, for ``stall_s`` then reset (to
                          kill a client while it waits between objects)
``methods``   only these HTTP methods are eligible (None: all)
``key_regex`` only requests whose object key matches (``re.search``) are eligible (None: all;
              bucket-level requests have the key "")
``latency_s`` a delay before every forwarded request (lets concurrent clients interleave)
``watch``     ``["bucket/prefix/", ...]``: the proxy reads that prefix's ``_manifest.json``
              from upstream and records a *violation* if the manifest lists a file that is
              missing or whose size or sha256 differs: a reader that looked at that moment would
              have seen a manifest pointing at missing or wrong files. Requests are then handled
              one at a time, and the check runs before the first request, before every request
              that follows a forwarded write (PUT/POST/DELETE) and when stats are read, so every
              state the store passes through is checked. (The checks are signed
              boto3 reads from the environment's credentials: moto refuses anonymous ones.)

Control endpoints (not S3 paths: bucket names cannot contain ``_``): ``GET /__proxy__/stats``,
``POST /__proxy__/rules`` (JSON; resets the RNG and counters).
"""

from __future__ import annotations

import argparse
import hashlib
import http.client
import json
import random
import re
import select
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

CONTROL = "/__proxy__/"
MANIFEST = "_manifest.json"
FAULT_KINDS = ("503", "500", "reset", "drop", "stall")
HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
              "trailer", "transfer-encoding", "upgrade", "expect", "content-length"}
S3_ERRORS = {
    "503": ("SlowDown", "Please reduce your request rate."),
    "500": ("InternalError", "We encountered an internal error. Please try again."),
}
DEFAULT_RULES: dict[str, Any] = {"share": 0.0, "faults": ["503"], "methods": None,
                                 "key_regex": None, "seed": 0, "latency_s": 0.0,
                                 "stall_s": 30.0, "watch": []}


# --------------------------------------------------------------------------- the server


class State:
    def __init__(self, upstream: str, rules: dict[str, Any]):
        u = urllib.parse.urlsplit(upstream)
        self.upstream_host = u.hostname or "127.0.0.1"
        self.upstream_port = u.port or 80
        self.meta = threading.Lock()  # counters, log, rules
        self.serial = threading.Lock()  # one request at a time while watching
        self._s3: Any = None
        self.set_rules(rules)

    def set_rules(self, rules: dict[str, Any]) -> None:
        merged = {**DEFAULT_RULES, **rules}
        bad = [k for k in merged["faults"] if k not in FAULT_KINDS]
        unknown = sorted(set(rules) - set(DEFAULT_RULES))
        if bad or unknown:
            raise ValueError(f"unknown fault kinds {bad} or rules {unknown}")
        with self.meta:
            self.rules = merged
            self.rng = random.Random(merged["seed"])
            self.key_re = re.compile(merged["key_regex"]) if merged["key_regex"] else None
            self.methods = {m.upper() for m in merged["methods"]} if merged["methods"] else None
            self.requests = 0
            self.forwarded = 0
            self.checks = 0
            self.stalled = 0
            self.log: list[dict[str, Any]] = []
            self.violations: list[dict[str, Any]] = []
            self.dirty = True  # check the state before the first request

    def decide(self, method: str, key: str) -> tuple[int, str | None]:
        with self.meta:
            self.requests += 1
            n = self.requests
            eligible = ((self.methods is None or method in self.methods)
                        and (self.key_re is None or self.key_re.search(key) is not None))
            kind = None
            if eligible and self.rules["share"] > 0 and self.rng.random() < self.rules["share"]:
                kind = self.rng.choice(self.rules["faults"])
            return n, kind

    def record(self, n: int, method: str, key: str, outcome: str) -> None:
        with self.meta:
            self.log.append({"n": n, "method": method, "key": key, "outcome": outcome})
            if not outcome.startswith("fault:"):
                self.forwarded += 1

    def stats(self) -> dict[str, Any]:
        if self.rules["watch"]:
            with self.serial:  # the state after the last request counts too
                if self.dirty:
                    self.check_watched("at the end")
        with self.meta:
            faults = [e for e in self.log if e["outcome"].startswith("fault:")]
            return {"requests": self.requests, "forwarded": self.forwarded, "checks": self.checks,
                    "stalled": self.stalled, "faults": faults, "log": list(self.log),
                    "violations": list(self.violations), "rules": self.rules}

    # -- upstream

    def upstream(self, method: str, path: str, body: bytes | None = None,
                 headers: dict[str, str] | None = None) -> tuple[int, list[tuple[str, str]], bytes]:
        conn = http.client.HTTPConnection(self.upstream_host, self.upstream_port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
            return resp.status, resp.getheaders(), data
        finally:
            conn.close()

    def _reader(self) -> Any:
        """A signed S3 client straight to upstream (moto refuses anonymous reads)."""
        if self._s3 is None:
            import boto3
            from botocore.config import Config

            self._s3 = boto3.client(
                "s3", endpoint_url=f"http://{self.upstream_host}:{self.upstream_port}",
                region_name="us-east-1", config=Config(retries={"total_max_attempts": 3}))
        return self._s3

    def check_watched(self, when: str) -> None:
        """Read every watched manifest and verify the files it lists (as a reader would)."""
        self.dirty = False
        for watched in self.rules["watch"]:
            bucket, _, prefix = watched.partition("/")
            s3 = self._reader()
            with self.meta:
                self.checks += 1
            problems: list[str] = []
            try:
                data = s3.get_object(Bucket=bucket, Key=prefix + MANIFEST)["Body"].read()
            except Exception as exc:  # noqa: BLE001
                if getattr(exc, "response", {}).get("Error", {}).get("Code") == "NoSuchKey":
                    continue
                data = b""
                problems.append(f"manifest unreadable: {exc}")
            files: list[dict[str, Any]] = []
            if data:
                try:
                    files = json.loads(data)["files"]
                except (ValueError, KeyError, TypeError) as exc:
                    problems.append(f"manifest unreadable: {exc}")
            for f in files:
                try:
                    body = s3.get_object(Bucket=bucket, Key=prefix + f["path"])["Body"].read()
                except Exception as exc:  # noqa: BLE001
                    problems.append(f"{f['path']}: missing ({exc})")
                    continue
                if len(body) != f["size"] or hashlib.sha256(body).hexdigest() != f["sha256"]:
                    problems.append(f"{f['path']}: content differs from the manifest")
            if problems:
                with self.meta:
                    self.violations.append({"when": when, "prefix": watched,
                                            "problems": problems})


def _error_body(code: str, message: str) -> bytes:
    rid = f"{random.getrandbits(64):016X}"
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>{message}</Message><RequestId>{rid}</RequestId>"
            f"<HostId>fault-proxy</HostId></Error>").encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and 100-continue for botocore's PUTs
    server: ProxyServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
        pass

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _reset(self) -> None:
        """Abort the connection with a TCP RST, no response."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass

    def _send(self, status: int, headers: list[tuple[str, str]], body: bytes,
              head: bool = False) -> None:
        self.send_response_only(status)
        length = None
        for k, v in headers:
            if k.lower() in HOP_BY_HOP:
                if k.lower() == "content-length":
                    length = v
                continue
            self.send_header(k, v)
        self.send_header("Content-Length", length if head and length else str(len(body)))
        self.end_headers()
        if not head and body:
            self.wfile.write(body)

    def _control(self, body: bytes) -> None:
        state = self.server.state
        if self.path.startswith(CONTROL + "stats"):
            out = json.dumps(state.stats()).encode()
            return self._send(200, [("Content-Type", "application/json")], out)
        if self.path.startswith(CONTROL + "rules") and self.command == "POST":
            try:
                state.set_rules(json.loads(body or b"{}"))
            except (ValueError, re.error) as exc:
                return self._send(400, [], str(exc).encode())
            return self._send(200, [("Content-Type", "application/json")], b"{}")
        return self._send(404, [], b"no such control endpoint")

    def _handle(self) -> None:
        body = self._read_body()
        if self.path.startswith(CONTROL):
            return self._control(body)
        state = self.server.state
        path = urllib.parse.urlsplit(self.path).path
        _, _, key = urllib.parse.unquote(path).lstrip("/").partition("/")
        method = self.command
        n, kind = state.decide(method, key)
        if kind == "stall":
            with state.meta:
                state.stalled += 1
            state.record(n, method, key, "fault:stall")
            time.sleep(state.rules["stall_s"])
            return self._reset()
        watching = bool(state.rules["watch"])
        if watching:
            state.serial.acquire()
        try:
            if watching and state.dirty:
                state.check_watched(f"before request {n}")
            if kind in S3_ERRORS:
                state.record(n, method, key, f"fault:{kind}")
                code, message = S3_ERRORS[kind]
                return self._send(int(kind), [("Content-Type", "application/xml")],
                                  _error_body(code, message), head=method == "HEAD")
            if kind == "reset":
                state.record(n, method, key, "fault:reset")
                return self._reset()
            if state.rules["latency_s"]:
                time.sleep(state.rules["latency_s"])
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
            status, resp_headers, data = state.upstream(method, self.path, body or None, headers)
            if method not in ("GET", "HEAD"):
                state.dirty = True  # the store may have changed: check before the next one
            if kind == "drop":
                state.record(n, method, key, "fault:drop")
                return self._reset()
            state.record(n, method, key, str(status))
        finally:
            if watching:
                state.serial.release()
        self._send(status, resp_headers, data, head=method == "HEAD")

    do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle  # noqa: N815


class ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    state: State


def serve(upstream: str, rules: dict[str, Any], port: int = 0) -> None:
    server = ProxyServer(("127.0.0.1", port), Handler)
    server.state = State(upstream, rules)
    print(f"READY {server.server_address[1]}", flush=True)
    server.serve_forever()


# --------------------------------------------------------------------------- the test side


class FaultProxy:
    """Starts the proxy in a subprocess; :meth:`stop` ends it by its PID."""

    def __init__(self, upstream: str, **rules: Any):
        self.upstream = upstream
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--upstream", upstream, "--rules", json.dumps(rules)],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            stdout = self.proc.stdout
            assert stdout is not None
            ready, _, _ = select.select([stdout], [], [], 20)
            line = stdout.readline() if ready else ""
            if not line.startswith("READY "):
                raise RuntimeError(f"fault proxy did not start (exit {self.proc.poll()})")
            self.port = int(line.split()[1])
        except BaseException:
            self.stop()
            raise
        self.url = f"http://127.0.0.1:{self.port}"

    def _call(self, path: str, data: dict | None = None) -> dict:
        body = None if data is None else json.dumps(data).encode()
        req = urllib.request.Request(self.url + CONTROL + path, data=body,
                                     method="GET" if body is None else "POST")
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read())

    def set_rules(self, **rules: Any) -> None:
        """Replace the rules (unnamed ones take their defaults); resets the RNG and counters."""
        self._call("rules", rules)

    def stats(self) -> dict[str, Any]:
        return self._call("stats")

    def wait_for(self, predicate, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            stats = self.stats()
            if predicate(stats):
                return stats
            if time.monotonic() > deadline:
                raise TimeoutError(f"proxy never reached the expected state: {stats['log'][-5:]}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM to self.proc.pid
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()

    def __enter__(self) -> FaultProxy:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--upstream", required=True)
    parser.add_argument("--rules", default="{}", help="JSON object of rules")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    serve(args.upstream, json.loads(args.rules), args.port)
