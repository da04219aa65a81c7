"""Retrieval tags: strict ``key=value`` pairs, normalised as upstream does."""

from __future__ import annotations

from collections.abc import Iterable

from openviking.errors import InvalidArgumentError

from .arguments import describe

__all__ = ["normalize_tags", "split_tag_list"]


def normalize_tags(tags: Iterable[str] | str | None) -> tuple[str, ...]:
    """Lower-case, stripped ``key=value`` tags; a repeated key keeps its last value.

    Raises:
        InvalidArgumentError: a tag without exactly one ``=`` or with an empty side.
    """
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = split_tag_list(tags)
    try:
        items = list(tags) if not isinstance(tags, bytes | bytearray | memoryview) else None
    except Exception:  # not iterable, or an iterator that fails
        items = None
    if items is None or not all(isinstance(raw, str) for raw in items):
        raise InvalidArgumentError(
            "tags must be a 'k=v,k=v' string or a list of 'k=v' strings",
            hint="Example: tags=['env=prod', 'team=search']",
            details={"tags": describe(tags)},
        )
    values: dict[str, str] = {}
    for raw in items:
        text = raw.strip().lower()
        key, sep, value = text.partition("=")
        if not sep or "=" in value or not key.strip() or not value.strip():
            shown = raw if len(raw) <= 80 else describe(raw)
            raise InvalidArgumentError(
                f"Invalid tag '{shown}': tags are key=value pairs",
                hint="Example: tags=['env=prod', 'team=search']",
                details={"tag": shown},
            )
        values[key.strip()] = value.strip()  # a dict keeps first-seen key order
    return tuple(f"{k}={v}" for k, v in values.items())


def split_tag_list(text: str) -> list[str]:
    """``"a=1, b=2"`` -> ``["a=1", "b=2"]`` (empty parts dropped)."""
    return [part for part in (p.strip() for p in text.split(",")) if part]
