"""How the library says that something degraded: a callback, or Python's ``warnings``.

A call that still answers, but not fully (a model server unreachable, a target that names
nothing stored, a file added with a caveat), says so in one line. The CLI prints it as a
``Warning:`` line; an SDK user gets an :class:`~openviking.errors.OpenVikingWarning`
attributed to their own line, or passes ``warn=callback`` to take the messages.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

__all__ = ["WarningCallback", "python_warning"]

WarningCallback = Callable[[str], None]

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # openviking/, not contract/


def python_warning(message: str) -> None:
    """An OpenVikingWarning attributed to the caller's line: the first frame outside this
    package, however deep in it the warning was raised."""
    import warnings

    from openviking.errors import OpenVikingWarning

    level, frame = 1, sys._getframe(0)
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, OpenVikingWarning, stacklevel=level)
