"""The exceptions of the wasmpy client: one class per way a run can fail,
each carrying the run's record."""
from typing import Any, Dict, List, Optional, Type


class WasmpyError(Exception):
    """Base of every wasmpy error. ``record`` is the run's record (the JSON
    object wasmpy returned: the result, and the provenance when a service
    ran it), or None when nothing ran."""

    kind = "wasmpy"

    def __init__(self, message: str, record: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(message)
        self.message = message
        self.record = record


class RunError(WasmpyError):
    """The sandboxed code failed. ``error`` is the run's error object
    ({"kind", "type", "message", "traceback"}); ``result`` the run's Result."""

    def __init__(self, message: str, record: Optional[Dict[str, Any]] = None,
                 result: "Optional[Any]" = None) -> None:
        super().__init__(message, record)
        self.result = result
        self.error: Dict[str, Any] = (result.error if result is not None and result.error else {})

    @property
    def type(self) -> str:
        """The Python exception class in the sandbox, for GuestException."""
        return str(self.error.get("type", ""))

    @property
    def traceback(self) -> str:
        return str(self.error.get("traceback", ""))


class GuestSyntaxError(RunError):
    """The code does not parse."""
    kind = "syntax"


class GuestException(RunError):
    """The code raised an exception it did not catch; ``type`` names its class."""
    kind = "exception"


class Exit(RunError):
    """The code called sys.exit with a non-zero status."""
    kind = "exit"


class Timeout(RunError):
    """The run hit its wall-clock limit."""
    kind = "timeout"


class MemoryLimit(RunError):
    """The run hit its memory limit."""
    kind = "memory"


class OutputLimit(RunError):
    """stdout or stderr passed the output limit."""
    kind = "output"


class FuelExhausted(RunError):
    """The run used up its fuel (compute) budget."""
    kind = "fuel"


class Interrupted(RunError):
    """The run was interrupted or canceled."""
    kind = "interrupted"


class InternalError(RunError):
    """The interpreter itself failed."""
    kind = "internal"


RUN_ERRORS: Dict[str, Type[RunError]] = {
    cls.kind: cls for cls in (GuestSyntaxError, GuestException, Exit, Timeout, MemoryLimit,
                              OutputLimit, FuelExhausted, Interrupted, InternalError)
}


class ServiceError(WasmpyError):
    """`wasmpy serve` refused the request. ``code`` is its error code
    (unauthorized, busy, invalid_input...), ``status`` the HTTP status."""

    def __init__(self, message: str, code: str, status: int,
                 record: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(message, record)
        self.code = code
        self.status = status
        self.kind = code


class Unauthorized(ServiceError):
    """The token is missing or wrong."""


class Busy(ServiceError):
    """Every run slot (or session) is taken and the queue is full, or a budget
    (the caller's or the service's) is full: try again later, or close a
    session."""


class NotFound(ServiceError):
    """No such skill, execution, session or route (or /exec is disabled)."""


class InvalidInput(ServiceError):
    """The arguments do not match the skill's input schema."""


class Forbidden(ServiceError):
    """The token lacks the role the request needs (an admin's, to change
    skills), or asked for a tier above its maximum (tier_forbidden)."""


class Conflict(ServiceError):
    """The request conflicts with the service's state: a skill version
    registered already, a disabled version, a skill of the skills directory."""


class InvalidSkill(ServiceError):
    """The files given to register do not make a skill that loads;
    ``problems`` lists every one ({"path", "reason"})."""

    @property
    def problems(self) -> List[Dict[str, Any]]:
        err = (self.record or {}).get("error") or {}
        return list(err.get("problems") or [])


SERVICE_ERRORS: Dict[str, Type[ServiceError]] = {
    "unauthorized": Unauthorized, "busy": Busy, "too_many_sessions": Busy, "budget_exceeded": Busy,
    "not_found": NotFound, "tier_forbidden": Forbidden,
    "unknown_skill": NotFound, "unknown_execution": NotFound, "unknown_session": NotFound,
    "exec_disabled": NotFound, "invalid_input": InvalidInput, "forbidden": Forbidden,
    "skill_exists": Conflict, "skill_disabled": Conflict, "not_registered": Conflict,
    "invalid_skill": InvalidSkill,
}


class GenerationFailed(WasmpyError):
    """No generated function passed: every attempt failed validation, its
    tests, the quality bar, or its run. ``kind`` is the last attempt's
    outcome (invalid, tests_failed, exception...), or llm when the LLM could
    not be asked; ``record`` holds every attempt."""

    def __init__(self, message: str, kind: str, record: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(message, record)
        self.kind = kind


class BadArguments(WasmpyError, TypeError):
    """The arguments do not fit the function's signature (nothing was generated)."""
    kind = "bad_arguments"


class CLIError(WasmpyError):
    """The wasmpy CLI could not be run, or failed before running the code."""
