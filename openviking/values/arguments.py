"""Checks of the plain values the SDK is called with: what a Python caller may pass besides
the exact type (numpy's integers, floats and booleans, a ``datetime``), and one
INVALID_ARGUMENT, never a ``TypeError`` from deep inside, for what cannot work; and how a
value of any kind is named in an error message (:func:`describe`: short, never raising)."""

from __future__ import annotations

import math
import numbers
import operator
import reprlib
from typing import Any

from openviking.errors import InvalidArgumentError

__all__ = [
    "MAX_INT",
    "callback",
    "describe",
    "flag",
    "optional_limit",
    "optional_text",
    "real_number",
    "strings",
    "whole_number",
]

# The largest count, depth or offset any operation takes: the store's filters write integers as
# 32-bit literals, and no store holds more of anything.
MAX_INT = 2**31 - 1

_SHORT = reprlib.Repr()
_SHORT.maxlevel = 3
_SHORT.maxstring = 60
_SHORT.maxother = 60
_SHORT.maxlong = 40


def describe(value: Any) -> str:
    """``repr(value)`` cut short (a 5,000-deep list, a 10 MB string, a 5,000-digit number, an
    object whose ``repr`` raises): what an error message may quote of any value."""
    try:
        return _SHORT.repr(value)
    except Exception:  # a repr that raises, a recursion: the type still says what it was
        return f"<{type(value).__name__}>"


def whole_number(
    value: Any, name: str, *, minimum: int = 0, maximum: int | None = MAX_INT, hint: str | None = None
) -> int:
    """``value`` as an int from ``minimum`` to ``maximum`` (None: no maximum); any integer type
    (``numpy.int64``) is one, a bool, a float or a string is not."""
    number: int | None = None
    if not isinstance(value, bool):
        try:
            number = operator.index(value)
        except Exception:  # TypeError, or an __index__ that raises anything else
            number = None
    if number is None or number < minimum:
        bound = f">= {minimum}" if minimum != -1 else ">= 0 (or -1 for all)"
        raise InvalidArgumentError(
            f"{name} must be an integer {bound} (got {describe(value)})", hint=hint, details={name: _plain(value)}
        )
    if maximum is not None and number > maximum:
        raise InvalidArgumentError(
            f"{name} must be at most {maximum:,} (got {describe(value)})", hint=hint, details={name: _plain(value)}
        )
    return number


def optional_limit(value: Any, name: str) -> int | None:
    """A ``node_limit``: None, or a whole number >= 0 where 0 means no limit (None)."""
    if value is None:
        return None
    return whole_number(value, name, hint=f"Pass {name} as a whole number; 0 means no limit") or None


def real_number(value: Any, name: str, *, hint: str | None = None) -> float:
    """``value`` as a finite float; any real type (``numpy.float32``) is one, a bool is not."""
    number = float("nan")
    if not isinstance(value, bool) and isinstance(value, numbers.Real):
        try:
            number = float(value)
        except (OverflowError, ValueError, TypeError):  # an int too large for a float
            number = float("nan")
    if not math.isfinite(number):
        raise InvalidArgumentError(
            f"{name} must be a finite number (got {describe(value)})", hint=hint, details={name: _plain(value)}
        )
    return number


def flag(value: Any, name: str) -> bool:
    """``value`` as a bool: True or False (numpy's too), or the integers 1 and 0.

    Raises:
        InvalidArgumentError: anything else (a string, a list, an array...).
    """
    if isinstance(value, bool):
        return value
    if type(value).__module__ == "numpy" and type(value).__name__ in ("bool", "bool_"):
        return bool(value)
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise InvalidArgumentError(f"{name} must be True or False (got {describe(value)})", details={name: _plain(value)})


def strings(value: Any, name: str) -> tuple[str, ...]:
    """``value`` as strings: None is none, one string is one, a list, tuple or set of strings is theirs.

    Raises:
        InvalidArgumentError: anything else, or an item that is not a string.
    """
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple | set | frozenset) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise InvalidArgumentError(
        f"{name} must be a string or a list of strings (got {describe(value)})", details={name: _plain(value)}
    )


def optional_text(value: Any, name: str) -> str | None:
    """``value`` when it is None or a string.

    Raises:
        InvalidArgumentError: anything else.
    """
    if value is not None and not isinstance(value, str):
        raise InvalidArgumentError(
            f"{name} must be a string (got {type(value).__name__})", details={name: _plain(value)}
        )
    return value


def callback(value: Any, name: str) -> Any:
    """``value`` when it is None or callable.

    Raises:
        InvalidArgumentError: anything else.
    """
    if value is not None and not callable(value):
        raise InvalidArgumentError(
            f"{name} must be a function or None (got {describe(value)})", details={name: _plain(value)}
        )
    return value


def _plain(value: Any) -> Any:
    # details go into the JSON error object as they are
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int) and type(value) is int:
        return value if abs(value) <= MAX_INT else describe(value)
    if isinstance(value, str):
        return value if len(value) <= 200 else describe(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return describe(value)
