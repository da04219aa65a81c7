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

from openviking.contract import forms
from openviking.contract.operations import OPERATIONS

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

    @model_validator(mode="before")
    @classmethod
    def _whole_numbers(cls, data: Any) -> Any:
        """A JSON number without a fraction is an integer however it is written (``2.0``), as
        JSON Schema reads it; every field that takes a number takes an integer too."""
        return _whole(data)

    def arguments(self) -> dict[str, Any]:
        """The fields the client sent, as keyword arguments (upstream's without effect left out)."""
        return {k: v for k, v in self.model_dump(exclude_unset=True).items() if k not in self.UPSTREAM}

    def say_ignored(self) -> None:
        """A warning for each of upstream's fields the client sent that changes nothing here."""
        for name in self.UPSTREAM:
            if name in self.model_fields_set:
                said(f"{name} has no effect here: {self.UPSTREAM[name]}")


def _whole(value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return [_whole(item) for item in value]
    if isinstance(value, dict):
        return {key: _whole(item) for key, item in value.items()}
    return value


def declared(operation: str, name: str, default: Any = None, **more: Any) -> Any:
    """A field as ``operation`` declares its parameter ``name``: its doc, and its values' form."""
    param = OPERATIONS[operation].params[name]
    return Field(default, description=param.doc, json_schema_extra=param.stated, **more)


def one_of(*ways: str, apart: tuple[str, ...] = ()) -> Callable[[dict[str, Any]], None]:
    """The schema's part of a body that names what it is about in exactly one of ``ways``, and
    gives at most one of the fields ``apart``."""

    def stated(schema: dict[str, Any]) -> None:
        schema["oneOf"] = [{"required": [way], "properties": {way: {"not": {"type": "null"}}}} for way in ways]
        if apart:
            given = {name: {"not": {"type": "null"}} for name in apart}
            schema["not"] = {"required": list(apart), "properties": given}

    return stated


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


def _first_branch(**stated: Any) -> Callable[[dict[str, Any]], None]:
    """Say ``stated`` of an optional field's value (the branch of its schema that is not null)."""

    def state(schema: dict[str, Any]) -> None:
        schema["anyOf"][0].update(stated)

    return state


# A part that holds text: a message holds one at least.
_SOME_TEXT = {
    "properties": {"type": {"const": "text"}, "text": {"type": "string", "pattern": forms.NOT_BLANK}},
    "required": ["type", "text"],
}


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

    model_config = ConfigDict(json_schema_extra=one_of("content", "parts"))

    role: str = declared("add_message", "role", ...)
    content: str | None = Field(None, description="The text.", json_schema_extra=_first_branch(pattern=forms.NOT_BLANK))
    parts: list[TextPart] | None = Field(
        None,
        description="Upstream's parts, among them a text part with some text.",
        json_schema_extra=_first_branch(contains=_SOME_TEXT),
    )
    created_at: str | None = declared("add_message", "created_at")

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

    model_config = ConfigDict(json_schema_extra=one_of("path", "temp_file_id"))

    path: str | None = Field(
        None,
        description="A file or folder on the server's machine (root key only).",
        json_schema_extra=_first_branch(pattern=forms.NOT_BLANK),
    )
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

    model_config = ConfigDict(json_schema_extra=one_of("path", "temp_file_id", apart=("to", "parent")))

    to: str | None = declared("add_resource", "to")
    parent: str | None = declared("add_resource", "parent")
    tags: list[str] | str | None = declared("add_resource", "tags")
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

    model_config = ConfigDict(json_schema_extra=one_of("path", "temp_file_id", "data"))

    name: str | None = declared("add_skill", "name")
    tags: list[str] | str | None = declared("add_skill", "tags")
    data: str | dict[str, Any] | None = Field(
        None,
        description="A SKILL.md's text, or the skill as an object with its content.",
        json_schema_extra=lambda schema: schema.update(anyOf=[*forms.SKILL_DATA["anyOf"], {"type": "null"}]),
    )

    def sources(self) -> list[str]:
        return [name for name in ("path", "temp_file_id", "data") if getattr(self, name) is not None]

    @classmethod
    def _ways(cls) -> tuple[str, ...]:
        return ("path", "temp_file_id", "data")


class ReindexBody(Body):
    """POST /api/v1/reindex."""

    uri: str | None = declared("reindex", "uri")
