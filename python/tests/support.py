"""What the tests share: the wasmpy binary, a fake OpenAI-compatible LLM
server, and a running `wasmpy serve`."""
import http.server
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.request
from typing import Any, Dict, List, Optional


def binary() -> str:
    path = os.environ.get("WASMPY_BIN") or shutil.which("wasmpy")
    if not path:
        raise unittest.SkipTest("no wasmpy binary: run `make test-python`, or set WASMPY_BIN")
    return path


def py_reply(code: str, tests: str = "") -> str:
    """A model's reply: the code fenced, and the tests in a second block."""
    reply = "Here it is:\n```python\n%s\n```\n" % code
    if tests:
        reply += "And its tests:\n```python\n%s\n```\n" % tests
    return reply


class FakeLLM:
    """An OpenAI-compatible chat-completions server replaying scripted
    replies in order (then 500), recording every request."""

    def __init__(self) -> None:
        self.replies: List[Dict[str, Any]] = []
        self.requests: List[Dict[str, Any]] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with fake.lock:
                    fake.requests.append(body)
                    reply = fake.replies.pop(0) if fake.replies else {"status": 500, "error": "no scripted reply left"}
                status = reply.get("status", 200)
                if status != 200:
                    doc: Dict[str, Any] = {"error": {"message": reply.get("error", "error")}}
                else:
                    doc = {"model": body.get("model", ""), "choices": [{"message": {"role": "assistant", "content": reply["content"]},
                                                                         "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = "http://127.0.0.1:%d/v1" % self.server.server_address[1]

    def enqueue(self, *contents: str) -> None:
        with self.lock:
            self.replies.extend({"content": c} for c in contents)

    def enqueue_error(self, status: int, message: str) -> None:
        with self.lock:
            self.replies.append({"status": status, "error": message})

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Serve:
    """`wasmpy serve --enable-exec` on a free port, with one token."""

    token = "test-token-123"

    def __init__(self, extra: Optional[List[str]] = None, db: Optional[str] = None) -> None:
        self.tmp = tempfile.TemporaryDirectory(prefix="wasmpy-serve-")
        self.db = db or os.path.join(self.tmp.name, "provenance.db")
        port = free_port()
        self.url = "http://127.0.0.1:%d" % port
        env = dict(os.environ, WASMPY_TOKENS=self.token)
        self.log = open(os.path.join(self.tmp.name, "serve.log"), "w+")
        self.proc = subprocess.Popen(
            [binary(), "serve", "--enable-exec", "--addr", "127.0.0.1:%d" % port,
             "--db", self.db, "--timeout", "10s"] + (extra or []),
            env=env, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while True:
            if self.proc.poll() is not None:
                self.log.seek(0)
                raise RuntimeError("wasmpy serve exited: " + self.log.read()[-2000:])
            try:
                req = urllib.request.Request(self.url + "/health", headers={"Authorization": "Bearer " + self.token})
                with urllib.request.urlopen(req, timeout=5) as resp:
                    health = json.loads(resp.read())
                    if health.get("status") == "ok" and not health.get("loading_skills"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.close()
                raise RuntimeError("wasmpy serve did not answer /health within 120s")
            time.sleep(0.1)

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()
        self.tmp.cleanup()
