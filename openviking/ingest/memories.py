"""A memory: its text checked, and the URI it is kept at.

A memory is a short text about the user, kept as a document under
``viking://user/<user>/memories/[category/]``, named by its first words and a hash of its
text: the same text always lands on the same URI, so remembering it twice is one memory.
"""

from __future__ import annotations

import re

from openviking.errors import InvalidArgumentError
from openviking.system.ostext import require_utf8
from openviking.values.uri import VikingURI

from .naming import memory_name

__all__ = ["memory_uri"]

_CATEGORY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def memory_uri(text: object, category: str | None, user: str) -> tuple[VikingURI, str]:
    """The URI of the memory ``text`` in ``category``, and the category as stored.

    Raises:
        InvalidArgumentError: empty text, text that is not UTF-8, or a bad category.
    """
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgumentError(
            "Memory text must not be empty.", hint='openviking add-memory "The user prefers dark mode"'
        )
    require_utf8(text, "Memory text", "memory")
    folder = VikingURI(("user", user, "memories"))
    name = ""
    if category is not None and not isinstance(category, str):
        raise InvalidArgumentError(
            f"Memory category must be a string (got {type(category).__name__})",
            hint="Use a simple name such as preferences, entities, events, cases, profile",
        )
    if category:
        name = category.strip().lower()
        if not _CATEGORY.match(name):
            raise InvalidArgumentError(
                f"Invalid memory category '{category}'",
                hint="Use a simple name such as preferences, entities, events, cases, profile",
                details={"category": category},
            )
        folder = folder.join(name)
    return folder.join(memory_name(text)), name
