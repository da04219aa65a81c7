"""Checks of the plain values the SDK is called with: what a Python caller may pass besides
the exact type (numpy's integers and floats, a ``datetime``), and one INVALID_ARGUMENT,
never a ``TypeError`` from deep inside, for what cannot work."""

from __future__ import annotations

import math
import numbers
import operator
from typing import Any

from .errors import InvalidArgumentError

__all__ = ["optional_limit", "real_number", "whole_number"]


def whole_number(value: Any, name: str, *, minimum: int = 0, hint: str | None = None) -> int:
    """``value`` as an int >= ``minimum``; any integer type (``numpy.int64``) is one, a bool,
    a float or a string is not."""
    number: int | None = None
    if not isinstance(value, bool):
        try:
            number = operator.index(value)
        except TypeError:
            number = None
    if number is None or number < minimum:
        bound = f">= {minimum}" if minimum != -1 else ">= 0 (or -1 for all)"
        raise InvalidArgumentError(
            f"{name} must be an integer {bound} (got {value!r})", hint=hint, details={name: _plain(value)}
        )
    return number


def optional_limit(value: Any, name: str) -> int | None:
    """A ``node_limit``: None, or a whole number >= 0 where 0 means no limit (None)."""
    if value is None:
        return None
    return whole_number(value, name, hint=f"Pass {name} as a whole number; 0 means no limit") or None


def real_number(value: Any, name: str, *, hint: str | None = None) -> float:
    """``value`` as a finite float; any real type (``numpy.float32``) is one, a bool is not."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(float(value)):
        raise InvalidArgumentError(
            f"{name} must be a finite number (got {value!r})", hint=hint, details={name: _plain(value)}
        )
    return float(value)


def _plain(value: Any) -> Any:
    # details go into the JSON error object as they are
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return repr(value)
