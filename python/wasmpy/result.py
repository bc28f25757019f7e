"""The result of a run, as every transport returns it."""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .errors import RUN_ERRORS, RunError


@dataclass
class Result:
    """One run's record. ``output`` is what the code passed to
    submit_result (None if nothing); ``error`` is None when the run
    succeeded, else {"kind", "type", "message", "traceback"}; ``record`` is
    the whole JSON record, ``provenance`` the service's record of it."""

    stdout: str = ""
    stderr: str = ""
    output: Any = None
    exit_code: int = 0
    error: Optional[Dict[str, Any]] = None
    duration_ms: float = 0.0
    fuel_used: int = 0
    memory_peak_bytes: int = 0
    files: List[Dict[str, Any]] = field(default_factory=list)
    record: Dict[str, Any] = field(default_factory=dict)
    provenance: Optional[Dict[str, Any]] = None

    @property
    def ok(self) -> bool:
        return self.error is None

    @classmethod
    def from_record(cls, record: Dict[str, Any], provenance: Optional[Dict[str, Any]] = None) -> "Result":
        output = record.get("output")
        return cls(
            stdout=record.get("stdout") or "",
            stderr=record.get("stderr") or "",
            output=output,
            exit_code=int(record.get("exit_code") or 0),
            error=record.get("error") or None,
            duration_ms=float(record.get("duration_ms") or 0.0),
            fuel_used=int(record.get("fuel_used") or 0),
            memory_peak_bytes=int(record.get("memory_peak_bytes") or 0),
            files=list(record.get("files") or []),
            record=record,
            provenance=provenance,
        )

    def raise_for_error(self) -> "Result":
        """Raises the exception of the run's error kind, if it failed."""
        if self.error is not None:
            raise run_error(self)
        return self


def run_error(result: Result) -> RunError:
    err = result.error or {}
    cls = RUN_ERRORS.get(str(err.get("kind", "")), RunError)
    message = str(err.get("message", "the run failed"))
    if err.get("type"):
        message = "%s: %s" % (err["type"], message)
    record = dict(result.record)
    if result.provenance is not None:
        record = {"output": result.output, "run": result.record, "provenance": result.provenance}
    return cls(message, record, result)
