"""Per-run limits, shared by the transports."""
from dataclasses import dataclass
from typing import Optional, Union

Size = Union[int, str]


@dataclass(frozen=True)
class Limits:
    """What one run may use. None leaves a limit to the sandbox (or the
    service's ceiling). timeout is in seconds; memory and output in bytes,
    or a size such as "64MiB"; fuel in instructions."""

    timeout: Optional[float] = None
    memory: Optional[Size] = None
    output: Optional[Size] = None
    fuel: Optional[int] = None

    def __post_init__(self) -> None:
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError("timeout must be positive, got %r" % (self.timeout,))
        if self.fuel is not None and self.fuel < 0:
            raise ValueError("fuel must not be negative, got %r" % (self.fuel,))
        for name in ("memory", "output"):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, str) and v.strip() or isinstance(v, int) and v > 0):
                raise ValueError("%s must be a positive number of bytes or a size such as '64MiB', got %r" % (name, v))


def size_bytes(v: Size) -> int:
    """A size in bytes: an int, or "512", "64KiB", "64MiB", "1GiB"."""
    if isinstance(v, int):
        return v
    s = v.strip()
    units = {"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "KB": 1000, "MB": 1000 ** 2, "GB": 1000 ** 3, "B": 1}
    for unit, mult in units.items():
        if s.upper().endswith(unit):
            return int(float(s[: -len(unit)].strip()) * mult)
    return int(s)
