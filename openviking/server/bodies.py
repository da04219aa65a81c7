"""The JSON bodies of the hand-written routes, as pydantic models (the declared operations'
are made from their declarations, ``routes/declared.py``): upstream's parameter names, the
interface's defaults, and no field that is not one of them (``extra="forbid"``).

Fields are strict: ``"10"`` is not a number nor ``1`` a boolean, as the library refuses a
value of the wrong kind. A model's :meth:`Body.arguments` are the keyword arguments of the
interface method it calls: only the fields the client sent, so the library's defaults apply.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, create_model, model_validator

from .envelope import said

__all__ = [
    "AddMessageBody",
    "AddResourceBody",
    "AddSkillBody",
    "Body",
    "ReindexBody",
]


class Body(BaseModel):
    """A request body: unknown fields refused, values of the wrong kind too, but for the fields
    upstream's clients send that have no effect here (``UPSTREAM``: name -> why), which are
    taken and named in the answer's warnings."""

    model_config = ConfigDict(extra="forbid", strict=True)
    UPSTREAM: ClassVar[dict[str, str]] = {}

    def arguments(self) -> dict[str, Any]:
        """The fields the client sent, as keyword arguments (upstream's without effect left out)."""
        return {k: v for k, v in self.model_dump(exclude_unset=True).items() if k not in self.UPSTREAM}

    def say_ignored(self) -> None:
        """A warning for each of upstream's fields the client sent that changes nothing here."""
        for name in self.UPSTREAM:
            if name in self.model_fields_set:
                said(f"{name} has no effect here: {self.UPSTREAM[name]}")


B = TypeVar("B", bound=type[Body])


def taking_upstreams(**why: str) -> Callable[[B], B]:
    """The body class with upstream's fields ``why`` names added (any value, default None)."""

    def decorate(cls: B) -> B:
        fields: dict[str, Any] = {
            name: (Any, Field(None, description=f"Upstream's; it has no effect here: {reason}."))
            for name, reason in why.items()
        }
        made = cast(B, create_model(cls.__name__, __base__=cls, __doc__=cls.__doc__, **fields))
        made.UPSTREAM = {**cls.UPSTREAM, **why}
        return made

    return decorate


class TextPart(Body):
    """A message part: text, or one of upstream's other kinds, each stored as the text it holds
    (a context part its URI and abstract, a tool part its name and output; an image nothing)."""

    model_config = ConfigDict(extra="allow", strict=True)

    type: Literal["text", "context", "tool", "image_url"]
    text: str | None = None

    def as_text(self) -> str | None:
        """The text this part adds to the message, or None when it adds none."""
        extra = self.model_extra or {}
        if self.type == "text":
            return self.text
        if self.type == "context":
            return " ".join(str(extra[k]) for k in ("uri", "abstract") if extra.get(k)) or None
        if self.type == "tool":
            named = [str(extra[k]) for k in ("tool_name", "tool_output", "tool_status") if extra.get(k)]
            return ": ".join(named[:2]) if named else None
        return None


@taking_upstreams(
    peer_id="a message here belongs to its session's user",
    turn_id="messages keep the order they were added in",
    message_kind="a message is what its role said",
    source_message_ids="a message stands on its own",
    telemetry="messages carry no telemetry",
)
class AddMessageBody(Body):
    """POST /api/v1/sessions/{session_id}/messages: ``content`` or ``parts``."""

    role: str = Field(description="user or assistant.")
    content: str | None = None
    parts: list[TextPart] | None = None
    created_at: str | None = Field(None, description="When it was said, ISO 8601 (default: now).")

    @model_validator(mode="after")
    def _one_of(self) -> AddMessageBody:
        if (self.content is None) == (self.parts is None):
            raise ValueError("give content (a string) or parts ([{type: 'text', text}]), not both")
        return self

    def message(self) -> str | list[dict[str, Any]]:
        """The message for the interface's add_message (parts that add no text are said to be dropped)."""
        if self.content is not None:
            return self.content
        texts = []
        for part in self.parts or []:
            text = part.as_text()
            if text is None:
                said(f"a part of type {part.type} holds no text: it is not kept")
            else:
                texts.append({"type": "text", "text": text})
        return texts


class _Added(Body):
    """What an add takes: a path on the server's machine or an upload's id, and the name to show."""

    path: str | None = Field(None, description="A file or folder on the server's machine (root key only).")
    temp_file_id: str | None = Field(None, description="What POST /api/v1/resources/temp_upload returned.")
    source_name: str | None = Field(None, description="The client's path: what messages and the nodes' source show.")
    wait: bool = Field(
        True,
        description="Answer once the vectors are made too; false: once the text is written and found by "
        "its words, the server making the vectors in the background.",
    )

    def sources(self) -> list[str]:
        """The ways of naming what to add that the body gives."""
        return [name for name in ("path", "temp_file_id") if getattr(self, name) is not None]

    @model_validator(mode="after")
    def _one_of(self) -> _Added:
        if len(self.sources()) != 1:
            *first, last = self._ways()
            raise ValueError(f"give {', '.join(first)} or {last}, not two of them")
        return self

    @classmethod
    def _ways(cls) -> tuple[str, ...]:
        return ("path", "temp_file_id")


@taking_upstreams(
    reason="what the resource is for is not kept",
    instruction="resources are indexed as they are; no instruction changes how",
    telemetry="an add reports its counts and time in its result",
    tag_mode="tags replace a file's tags",
    create_parent="an add makes the folders above its target",
    strict="files that cannot be read are skipped with a warning",
    directly_upload_media="media files are not indexed",
    preserve_structure="an add always keeps the folder's structure",
    args="no parser here takes arguments",
    processing_mode="every add writes its summaries and its vectors",
    acl="access follows the caller's key: a user's own space and the shared scopes",
)
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
    watch_interval: float | None = Field(
        None,
        description="Upstream's: above 0, the path is also watched, checked every this many minutes "
        "(see POST /api/v1/watches); 0 or less: added only.",
    )

    def globs(self) -> tuple[list[str], list[str]]:
        """include and exclude as lists: upstream's form, one string, is cut at its commas."""
        return _split_globs(self.include), _split_globs(self.exclude)


def _split_globs(value: list[str] | str) -> list[str]:
    return value if isinstance(value, list) else [glob.strip() for glob in value.split(",") if glob.strip()]


@taking_upstreams(
    target_uri="skills are kept under viking://agent/skills",
    telemetry="an add reports its counts and time in its result",
)
class AddSkillBody(_Added):
    """POST /api/v1/skills: a folder or file (by path or upload), or upstream's ``data``: the
    text of a SKILL.md, or the skill as an object (``name``, ``description``, ``content``...)."""

    name: str | None = Field(None, description="The skill's name (default: SKILL.md's, else the folder's).")
    tags: list[str] | str | None = None
    data: str | dict[str, Any] | None = Field(None, description="A SKILL.md's text, or the skill as an object.")

    def sources(self) -> list[str]:
        return [name for name in ("path", "temp_file_id", "data") if getattr(self, name) is not None]

    @classmethod
    def _ways(cls) -> tuple[str, ...]:
        return ("path", "temp_file_id", "data")


class ReindexBody(Body):
    """POST /api/v1/reindex."""

    uri: str | None = Field(None, description="Only the files below this URI (default: the whole store).")
