"""The JSON bodies of the hand-written routes, as pydantic models (the declared operations'
are made from their declarations, ``routes/declared.py``): upstream's parameter names, the
interface's defaults, and no field that is not one of them (``extra="forbid"``).

Fields are strict: ``"10"`` is not a number nor ``1`` a boolean, as the library refuses a
value of the wrong kind. A model's :meth:`Body.arguments` are the keyword arguments of the
interface method it calls: only the fields the client sent, so the library's defaults apply.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "AddMessageBody",
    "AddResourceBody",
    "AddSkillBody",
    "Body",
    "ReindexBody",
]


class Body(BaseModel):
    """A request body: unknown fields refused, values of the wrong kind too."""

    model_config = ConfigDict(extra="forbid", strict=True)

    def arguments(self) -> dict[str, Any]:
        """The fields the client sent, as keyword arguments."""
        return self.model_dump(exclude_unset=True)


class TextPart(Body):
    """A message part: only text parts exist here."""

    type: Literal["text"]
    text: str


class AddMessageBody(Body):
    """POST /api/v1/sessions/{session_id}/messages: ``content`` or ``parts``."""

    role: str = Field(description="user or assistant.")
    content: str | None = None
    parts: list[TextPart] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> AddMessageBody:
        if (self.content is None) == (self.parts is None):
            raise ValueError("give content (a string) or parts ([{type: 'text', text}]), not both")
        return self

    def message(self) -> str | list[dict[str, Any]]:
        """The message for the interface's add_message."""
        return self.content if self.content is not None else [part.model_dump() for part in self.parts or []]


class _Added(Body):
    """What an add takes: a path on the server's machine or an upload's id, and the name to show."""

    path: str | None = Field(None, description="A file or folder on the server's machine (root key only).")
    temp_file_id: str | None = Field(None, description="What POST /api/v1/resources/temp_upload returned.")
    source_name: str | None = Field(None, description="The client's path: what messages and the nodes' source show.")
    wait: bool = Field(True, description="Upstream's: answer once indexed. An add here always does, so it is ignored.")

    @model_validator(mode="after")
    def _one_of(self) -> _Added:
        if (self.path is None) == (self.temp_file_id is None):
            raise ValueError("give path or temp_file_id, not both")
        return self


class AddResourceBody(_Added):
    """POST /api/v1/resources."""

    to: str | None = Field(None, description="The exact URI of the new resource.")
    parent: str | None = Field(None, description="A directory URI to put it in, under its own name.")
    tags: list[str] | str | None = None
    include: list[str] | str = Field(
        default_factory=list, description="Only files matching one of these globs (a list, or comma-separated)."
    )
    exclude: list[str] | str = Field(
        default_factory=list, description="Leave out what matches these globs (a list, or comma-separated)."
    )

    def globs(self) -> tuple[list[str], list[str]]:
        """include and exclude as lists: upstream's form, one string, is cut at its commas."""
        return _split_globs(self.include), _split_globs(self.exclude)


def _split_globs(value: list[str] | str) -> list[str]:
    return value if isinstance(value, list) else [glob.strip() for glob in value.split(",") if glob.strip()]


class AddSkillBody(_Added):
    """POST /api/v1/skills."""

    name: str | None = Field(None, description="The skill's name (default: SKILL.md's, else the folder's).")
    tags: list[str] | str | None = None


class ReindexBody(Body):
    """POST /api/v1/reindex."""

    uri: str | None = Field(None, description="Only the files below this URI (default: the whole store).")
