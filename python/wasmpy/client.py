"""The HTTP transport: talks to `wasmpy serve`."""
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from .errors import SERVICE_ERRORS, ServiceError, WasmpyError
from .limits import Limits, size_bytes
from .result import Result


class Client:
    """A client of `wasmpy serve` at url (e.g. "http://127.0.0.1:8002"),
    sending token as a bearer token when set. timeout (seconds) bounds each
    HTTP request; None waits as long as the service takes."""

    def __init__(self, url: str, token: Optional[str] = None, *, timeout: Optional[float] = None) -> None:
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ValueError("Client: %r is not an http(s) URL" % url)
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def __repr__(self) -> str:
        return "Client(%r)" % self.url

    # -- requests --

    def _request(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        data = None if body is None else json.dumps(body).encode("utf-8")
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return decode(resp.read(), resp.status)
        except urllib.error.HTTPError as e:
            doc = decode(e.read(), e.code)
            err = doc.get("error") if isinstance(doc.get("error"), dict) else {}
            if isinstance(doc.get("run"), dict) and doc["run"].get("error"):
                # The run failed: the body carries the run and its provenance.
                return doc
            code = str(err.get("code", "http_%d" % e.code))
            cls = SERVICE_ERRORS.get(code, ServiceError)
            raise cls(str(err.get("message", e.reason)), code, e.code, doc) from None
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            raise WasmpyError("cannot reach %s: %s" % (self.url, reason)) from None

    # -- the API --

    def health(self) -> Dict[str, Any]:
        """GET /health: its status is "loading" (a 503) until the service's
        skills have loaded, then "ok" (or "degraded": none loaded)."""
        try:
            return self._request("GET", "/health")
        except ServiceError as e:
            if e.status == 503 and isinstance(e.record, dict) and e.record.get("status") == "loading":
                return e.record
            raise

    def run(self, code: str, *, limits: Optional[Limits] = None, stdin: Optional[str] = None,
            args: Sequence[str] = (), check: bool = True) -> Result:
        """Runs code with POST /exec (the service must have --enable-exec).
        Raises the run's error kind unless check is False."""
        return self._run("/exec", code, limits, stdin, args, check)

    def _run(self, path: str, code: str, limits: Optional[Limits], stdin: Optional[str],
             args: Sequence[str], check: bool) -> Result:
        body: Dict[str, Any] = {"code": code}
        if stdin:
            body["stdin"] = stdin
        if args:
            body["args"] = list(args)
        lim = limits_body(limits or Limits())
        if lim:
            body["limits"] = lim
        return run_result(self._request("POST", path, body), check)

    def generate_function(self, signature: str, args: Sequence[Any] = (), kwargs: Optional[Mapping[str, Any]] = None, *,
                          tests: bool = False, min_quality: Optional[str] = None, style: str = "typed",
                          attempts: Optional[int] = None, model: Optional[str] = None,
                          limits: Optional[Limits] = None) -> Dict[str, Any]:
        """POST /def (the service needs --enable-exec and an LLM endpoint):
        the service's LLM writes the function from signature (its def line
        and docstring), which is validated, tested, graded and called with
        args and kwargs, as `wasmpy def --json` does. Returns that report:
        ok, code, value, attempts, tests, quality, error, run, and the
        provenance record of the generation."""
        body: Dict[str, Any] = {"signature": signature, "args": list(args), "kwargs": dict(kwargs or {})}
        if tests:
            body["tests"] = True
        if min_quality:
            body["min_quality"] = min_quality
        if style != "typed":
            body["style"] = style
        if attempts:
            body["attempts"] = attempts
        if model:
            body["model"] = model
        lim = limits_body(limits or Limits())
        if lim:
            body["limits"] = lim
        return self._request("POST", "/def", body)

    def skills(self) -> List[Dict[str, Any]]:
        """GET /skills: the skills the service loaded."""
        doc = self._request("GET", "/skills")
        return list(doc.get("skills", doc if isinstance(doc, list) else []))

    def skill(self, name: str) -> Dict[str, Any]:
        """GET /skills/{name}: one skill's manifest."""
        return self._request("GET", "/skills/" + urllib.parse.quote(name, safe=""))

    def execute(self, name: str, args: Any = None, *, approved: bool = False, version: Optional[str] = None,
                check: bool = True) -> Result:
        """POST /skills/{name}/execute: runs a skill with JSON args (at a
        registered version, else the newest enabled one); the skill's return
        value is Result.output, its provenance Result.provenance."""
        body: Dict[str, Any] = {"args": {} if args is None else args}
        if approved:
            body["approved"] = True
        if version:
            body["version"] = version
        doc = self._request("POST", "/skills/%s/execute" % urllib.parse.quote(name, safe=""), body)
        return run_result(doc, check)

    def register(self, skill: Union[str, "os.PathLike[str]", Mapping[str, Union[str, bytes]]]) -> Dict[str, Any]:
        """POST /skills/register (an admin token): registers a skill version
        from its directory, or from its files (name -> text), and returns
        its description. Raises InvalidSkill (every problem in .problems),
        Conflict for a version registered already, Forbidden without an
        admin token."""
        if isinstance(skill, Mapping):
            items = list(skill.items())
        else:
            items = []
            for entry in sorted(os.scandir(skill), key=lambda e: e.name):
                if entry.is_file() and not entry.name.startswith("."):
                    with open(entry.path, "rb") as f:
                        items.append((entry.name, f.read()))
        files: Dict[str, str] = {}
        for name, content in items:
            if isinstance(content, bytes):
                try:
                    content = content.decode("utf-8")
                except UnicodeDecodeError:
                    raise ValueError("register: %s is not UTF-8 text" % name) from None
            files[name] = content
        return self._request("POST", "/skills/register", {"files": files})

    def _version(self, name: str, version: str, action: str = "") -> str:
        q = urllib.parse.quote
        return "/skills/%s/versions/%s%s" % (q(name, safe=""), q(version, safe=""), action)

    def disable(self, name: str, version: str) -> Dict[str, Any]:
        """Disables a registered version (an admin token): it stays listed, and does not run."""
        return self._request("POST", self._version(name, version, "/disable"))

    def enable(self, name: str, version: str) -> Dict[str, Any]:
        """Enables a disabled version again (an admin token)."""
        return self._request("POST", self._version(name, version, "/enable"))

    def delete(self, name: str, version: str) -> None:
        """Deletes a registered version (an admin token)."""
        self._request("DELETE", self._version(name, version))

    def audit(self, skill: Optional[str] = None, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """GET /audit (an admin token): who changed which skill version,
        when, with the hash of its files; newest first."""
        query = {k: str(v) for k, v in (("skill", skill), ("limit", limit)) if v}
        path = "/audit" + ("?" + urllib.parse.urlencode(query) if query else "")
        return list(self._request("GET", path).get("entries", []))

    def session(self) -> "Session":
        """POST /sessions: a session whose runs share interpreter state."""
        return self._session(self._request("POST", "/sessions", {}))

    def _session(self, doc: Dict[str, Any]) -> "Session":
        sid = doc.get("session_id") or doc.get("id")
        if not sid:
            raise WasmpyError("the service answered without a session id", doc)
        return Session(self, str(sid), doc)


class Session:
    """A session of `wasmpy serve`: each run starts from the Python state
    (variables, imports, workspace) the last one left. Close it (or use it
    as a context manager) to free it. ``info`` is the service's last word on
    it (turns, state_hash, state_bytes, expires_at...)."""

    def __init__(self, client: Client, session_id: str, info: Optional[Dict[str, Any]] = None) -> None:
        self.client = client
        self.id = session_id
        self.info: Dict[str, Any] = info or {}

    def __repr__(self) -> str:
        return "Session(%r)" % self.id

    def _path(self, suffix: str = "") -> str:
        return "/sessions/" + urllib.parse.quote(self.id, safe="") + suffix

    def run(self, code: str, *, limits: Optional[Limits] = None, stdin: Optional[str] = None,
            check: bool = True) -> Result:
        """POST /sessions/{id}/exec: one turn."""
        return self.client._run(self._path("/exec"), code, limits, stdin, (), check)

    def refresh(self) -> Dict[str, Any]:
        """GET /sessions/{id}."""
        self.info = self.client._request("GET", self._path())
        return self.info

    def fork(self) -> "Session":
        """POST /sessions/{id}/fork: a new session starting from this one's state."""
        return self.client._session(self.client._request("POST", self._path("/fork"), {}))

    def close(self) -> None:
        """DELETE /sessions/{id}."""
        self.client._request("DELETE", self._path())

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def decode(raw: bytes, status: int) -> Dict[str, Any]:
    if not raw.strip():
        return {}
    try:
        doc = json.loads(raw.decode("utf-8"))
    except ValueError:
        raise WasmpyError("the service answered %d with a body that is not JSON: %r" % (status, raw[:200])) from None
    return doc if isinstance(doc, dict) else {"items": doc}


def limits_body(limits: Limits) -> Dict[str, Any]:
    if limits.output is not None:
        raise ValueError("the output limit is the service's own: POST /exec takes timeout, memory and fuel")
    body: Dict[str, Any] = {}
    if limits.timeout is not None:
        body["timeout_ms"] = max(1, int(limits.timeout * 1000))
    if limits.memory is not None:
        body["memory_bytes"] = size_bytes(limits.memory)
    if limits.fuel is not None:
        body["fuel"] = limits.fuel
    return body


def run_result(doc: Dict[str, Any], check: bool) -> Result:
    # The answer is {"output", "run", "provenance"}: the run without a second
    # copy of the output, which the record puts back.
    run = doc.get("run")
    if not isinstance(run, dict):
        raise WasmpyError("the service's answer holds no run", doc)
    record = dict(run, output=doc.get("output"))
    result = Result.from_record(record, doc.get("provenance"))
    if check:
        result.raise_for_error()
    return result
