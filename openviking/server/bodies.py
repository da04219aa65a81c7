"""The JSON bodies of the API's requests, as pydantic models: upstream's parameter names,
the interface's defaults, and no field that is not one of them (``extra="forbid"``).

Fields are strict: ``"10"`` is not a number nor ``1`` a boolean, as the library refuses a
value of the wrong kind. A model's :meth:`Body.arguments` are the keyword arguments of the
interface method it calls: only the fields the client sent, so the library's defaults apply.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "AddMemoryBody",
    "AddMessageBody",
    "AddResourceBody",
    "AddSkillBody",
    "Body",
    "CreateSessionBody",
    "FindBody",
    "GlobBody",
    "GrepBody",
    "LinkBody",
    "MkdirBody",
    "MoveBody",
    "ReindexBody",
    "SearchBody",
    "UnlinkBody",
]

Level = int | str | list[int | str]


class Body(BaseModel):
    """A request body: unknown fields refused, values of the wrong kind too."""

    model_config = ConfigDict(extra="forbid", strict=True)

    def arguments(self) -> dict[str, Any]:
        """The fields the client sent, as keyword arguments."""
        return self.model_dump(exclude_unset=True)


class FindBody(Body):
    """POST /api/v1/search/find."""

    query: str = Field(description="What to look for.")
    target_uri: str | list[str] = Field("", description="A URI or URIs to search under (default: everywhere).")
    limit: int = Field(10, description="The most hits to return.")
    node_limit: int | None = Field(None, description="Upstream's name for limit; overrides it.")
    score_threshold: float | None = Field(None, description="Keep hits scoring strictly above this.")
    filter: dict[str, Any] | str | None = Field(None, description="The filter DSL, as an object or its JSON.")
    since: str | None = Field(None, description="Lower time bound: 30m, 2h, 7d, 2w, YYYY-MM-DD or ISO 8601.")
    until: str | None = Field(None, description="Upper time bound, as since.")
    time_field: str | None = Field(None, description="updated_at (default) or created_at.")
    level: Level | None = Field(None, description="Levels to search: 2, '0,2' or [0, 2].")
    context_type: str | list[str] | None = Field(None, description="memory, resource and/or skill.")
    tags: list[str] | str | None = Field(None, description="key=value tags every hit must carry.")
    include_provenance: bool = Field(False, description="Add provenance (a planned search's per-query results).")
    telemetry: bool | dict[str, bool] = Field(False, description='true or {"summary": true} attaches telemetry.')
    mode: str | None = Field(None, description="hybrid (default), vector or keyword.")
    explain: bool = Field(False, description="Attach each score's parts to each hit.")


class SearchBody(FindBody):
    """POST /api/v1/search/search."""

    session_id: str | None = Field(None, description="The session whose messages plan the queries.")


class GrepBody(Body):
    """POST /api/v1/search/grep."""

    uri: str = Field(description="A directory (searched level_limit levels deep) or a file.")
    pattern: str = Field(description="A regular expression (Python re syntax), or text with fixed_strings.")
    case_insensitive: bool = False
    exclude_uri: str | list[str] | None = Field(None, description="Skip this URI (or these) and what is below.")
    node_limit: int | None = Field(None, description="At most this many matching lines (none: all).")
    level_limit: int | None = Field(5, description="Levels below uri to search (0 or null: all).")
    fixed_strings: bool = False
    count: bool = Field(False, description="Per-file counts instead of lines.")
    files_with_matches: bool = Field(False, description="The matching files instead of lines.")
    spans: bool = Field(False, description="Each match's character offsets.")


class GlobBody(Body):
    """POST /api/v1/search/glob."""

    pattern: str = Field(description="A glob: *, ?, [a-z], {a,b} and ** for any number of directories.")
    uri: str = "viking://"
    node_limit: int | None = Field(None, description="At most this many matches.")


class LinkBody(Body):
    """POST /api/v1/relations/link."""

    from_uri: str
    to_uris: str | list[str]
    reason: str = ""


class UnlinkBody(Body):
    """DELETE /api/v1/relations/link."""

    from_uri: str
    to_uri: str


class MkdirBody(Body):
    """POST /api/v1/fs/mkdir."""

    uri: str
    description: str | None = Field(None, description="Becomes the directory's abstract.")


class MoveBody(Body):
    """POST /api/v1/fs/mv."""

    from_uri: str
    to_uri: str


class CreateSessionBody(Body):
    """POST /api/v1/sessions."""

    session_id: str | None = Field(None, description="Generated when absent.")


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


class AddMemoryBody(Body):
    """POST /api/v1/memories."""

    text: str
    category: str | None = None
    tags: list[str] | str | None = None


class ReindexBody(Body):
    """POST /api/v1/reindex."""

    uri: str | None = Field(None, description="Only the files below this URI (default: the whole store).")
