"""``viking://`` URIs: parsing, validation, canonical form and context type.

The only module that knows the URI grammar. A canonical URI has no trailing slash and no
empty segments; ``viking://~/x`` and the shorthand ``viking://user/memories`` expand
to the configured user's space; ``viking://session/{id}`` to that user's sessions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from openviking.errors import InvalidURIError, PermissionDeniedError
from openviking.system.ostext import has_undecodable, utf8_text

from .arguments import describe

__all__ = [
    "CONTEXT_TYPES",
    "SCHEME",
    "canonical",
    "SCOPE_ROOTS",
    "VikingURI",
    "context_type_of",
    "default_targets",
    "fixed_children",
    "fixed_descendants",
    "is_control_char",
    "is_valid_user_id",
    "looks_like_a_drive",
    "parse",
    "session_id_of",
    "sessions_folder",
    "shell_word",
    "SIDECAR_FILES",
    "sidecar_owner",
]

SCHEME = "viking://"
SCOPES = ("agent", "resources", "session", "user")
CONTEXT_TYPES = ("memory", "resource", "skill")
# Second segments that name a part of a user's space; `viking://user/memories` is the
# shorthand OpenViking's retrieval API examples use for the current user's memories: upstream's
# parser rejects it, this one reads it as the configured user's.
USER_SPACE_SEGMENTS = frozenset({"memories", "resources", "skills", "peers", "privacy", "sessions"})
_USER_ID = re.compile(r"^[A-Za-z0-9_.@-]+$")
_DRIVE_PREFIX = re.compile(r"^[A-Za-z]:")


@dataclass(frozen=True, slots=True)
class VikingURI:
    """A canonical ``viking://`` URI, held as its path segments."""

    segments: tuple[str, ...]

    def __str__(self) -> str:
        return SCHEME + "/".join(self.segments)

    @property
    def is_root(self) -> bool:
        """True for ``viking://`` itself."""
        return not self.segments

    @property
    def scope(self) -> str:
        """The first segment (``resources``, ``user``, ``agent``), or ``""`` at the root."""
        return self.segments[0] if self.segments else ""

    @property
    def name(self) -> str:
        """The last segment, or ``""`` at the root."""
        return self.segments[-1] if self.segments else ""

    @property
    def depth(self) -> int:
        """Number of segments: 0 for the root, 1 for ``viking://resources``."""
        return len(self.segments)

    @property
    def parent(self) -> VikingURI | None:
        """The containing URI, or None at the root."""
        return VikingURI(self.segments[:-1]) if self.segments else None

    def join(self, relative: str) -> VikingURI:
        """This URI plus a relative ``a/b/c`` path (validated like any other segment)."""
        extra = tuple(part for part in relative.split("/") if part)
        for part in extra:
            _check_segment(str(self) + "/" + relative, part)
        return VikingURI(self.segments + extra)

    def is_within(self, other: VikingURI) -> bool:
        """True when this URI equals ``other`` or lies below it (segment-aware)."""
        return self.segments[: len(other.segments)] == other.segments

    def relative_to(self, other: VikingURI) -> str:
        """The ``a/b`` path of this URI below ``other`` (``""`` when equal)."""
        if not self.is_within(other):
            raise ValueError(f"{self} is not within {other}")
        return "/".join(self.segments[len(other.segments) :])

    @property
    def is_container(self) -> bool:
        """True for the layout's fixed folders, which exist even when nothing is in them: the
        root, the scope roots, ``viking://user/{id}`` with its parts (memories, skills,
        sessions...) and ``viking://agent/skills``."""
        segs = self.segments
        if len(segs) <= 1:
            return True
        if segs[0] == "user":
            return len(segs) == 2 or (len(segs) == 3 and segs[2] in USER_SPACE_SEGMENTS)
        return segs == ("agent", "skills")

    @property
    def context_type(self) -> str:
        """``memory``, ``resource`` or ``skill``, from the structure of the path."""
        return _context_type(self.segments)


# The scopes a listing of viking:// shows (``session`` is an alias into the user's space).
SCOPE_ROOTS = (VikingURI(("resources",)), VikingURI(("user",)), VikingURI(("agent",)))


def parse(uri: str, *, user: str = "default", field: str = "uri") -> VikingURI:
    """Validate ``uri`` and return its canonical form.

    Args:
        uri: the text as given by a user.
        user: the configured user, for ``~`` and the ``viking://user/memories`` shorthand.
        field: the parameter name, used in the message of an empty value.

    Raises:
        InvalidURIError: empty, wrong scheme or unknown scope.
        PermissionDeniedError: a ``.``/``..`` segment, a backslash or a drive prefix.
    """
    if not isinstance(uri, str):
        raise InvalidURIError(describe(uri), f"{field} must be a string")
    if has_undecodable(uri):
        raise InvalidURIError(utf8_text(uri), "URI is not valid UTF-8", hint="Name the path in UTF-8 text")
    text = uri.strip()
    if not text:
        raise InvalidURIError(uri, f"{field} must not be empty")
    if not text.startswith(SCHEME):
        hint = None
        bare = text.lstrip("/")
        if bare.split("/", 1)[0] in SCOPES or bare.startswith("~"):
            hint = f"Write it as {SCHEME}{bare}"
        raise InvalidURIError(uri, f"URI must start with '{SCHEME}'", hint=hint)
    path = text[len(SCHEME) :].split("?", 1)[0]
    segments = [part for part in path.split("/") if part]
    for part in segments:
        _check_segment(uri, part)
    if not segments:
        return VikingURI(())
    scope = segments[0]
    if scope == "~":
        segments = ["user", user, *segments[1:]]
    elif scope == "session":
        segments = ["user", user, "sessions", *segments[1:]]
    elif scope not in SCOPES:
        raise InvalidURIError(
            uri,
            f"Invalid scope '{scope}'. Must be one of: {', '.join(SCOPES)}",
            hint="Use viking://resources/..., viking://user/... or viking://agent/...",
        )
    if segments[0] == "user" and len(segments) >= 2:
        if segments[1] in USER_SPACE_SEGMENTS and segments[1] != user:
            segments = ["user", user, *segments[1:]]
        elif not is_valid_user_id(segments[1]):
            raise InvalidURIError(uri, f"Invalid user id '{segments[1]}'")
    return VikingURI(tuple(segments))


# A directory's L0 and L1 read as these hidden files in it (find returns them for level-0/1 hits).
SIDECAR_FILES = {".abstract.md": "abstract", ".overview.md": "overview"}


def sidecar_owner(uri: VikingURI) -> VikingURI:
    """The directory whose ``.abstract.md`` or ``.overview.md`` ``uri`` names (find's URI of a
    level-0/1 hit), else ``uri`` itself."""
    return uri.parent if uri.name in SIDECAR_FILES and uri.parent is not None else uri


def fixed_children(uri: VikingURI, user: str) -> tuple[VikingURI, ...]:
    """The layout's folders directly below ``uri`` that a listing shows even when empty: the
    scope roots, the configured user's space with its memories, skills and sessions, and the
    agent's skills."""
    segs = uri.segments
    if not segs:
        return SCOPE_ROOTS
    if segs == ("user",):
        return (VikingURI(("user", user)),)
    if segs == ("user", user):
        return tuple(VikingURI((*segs, part)) for part in ("memories", "skills", "sessions"))
    if segs == ("agent",):
        return (VikingURI(("agent", "skills")),)
    return ()


def fixed_descendants(uri: VikingURI, user: str, max_depth: int | None = None) -> list[VikingURI]:
    """The layout's folders below ``uri``, at most ``max_depth`` levels down (all when None)."""
    found: list[VikingURI] = []
    level = [uri]
    depth = 0
    while level and (max_depth is None or depth < max_depth):
        level = [child for parent in level for child in fixed_children(parent, user)]
        found += level
        depth += 1
    return found


def shell_word(uri: VikingURI | str) -> str:
    """``uri`` as one word of a shell command in a hint (quoted when it holds spaces or the like)."""
    import shlex

    return shlex.quote(str(uri))


def is_valid_user_id(name: str) -> bool:
    """True for a user id a URI can hold: letters, digits and ``_.@-``, not ``.`` or ``..``."""
    return bool(_USER_ID.match(name)) and name not in (".", "..") and name.count("@") <= 1


def sessions_folder(user: str) -> VikingURI:
    """``viking://user/{user}/sessions``: where ``user``'s sessions are named."""
    return VikingURI(("user", user, "sessions"))


def session_id_of(uri: VikingURI, user: str) -> str:
    """The id when ``uri`` names one of ``user``'s sessions (``.../sessions/{id}``), else ""."""
    folder = sessions_folder(user).segments
    return uri.segments[3] if len(uri.segments) == 4 and uri.segments[:3] == folder else ""


def default_targets(user: str) -> tuple[VikingURI, ...]:
    """Where find and search look when no target is given: resources, the user's space, skills."""
    return VikingURI(("resources",)), VikingURI(("user", user)), VikingURI(("agent", "skills"))


def canonical(uri: str) -> VikingURI:
    """An already canonical URI string (one the store holds or find returned), unchecked."""
    return VikingURI(tuple(part for part in uri.removeprefix(SCHEME).split("/") if part))


def context_type_of(uri: str) -> str:
    """Context type of an already canonical URI string."""
    if not uri.startswith(SCHEME):
        return "resource"
    return canonical(uri).context_type


def looks_like_a_drive(segment: str) -> bool:
    """True for a segment that starts like a Windows drive (``C:notes``): refused in URIs."""
    return bool(_DRIVE_PREFIX.match(segment))


def is_control_char(char: str) -> bool:
    """True for the characters a URI never holds: C0 controls (newline, tab...) and DEL."""
    return ord(char) < 32 or ord(char) == 127


def _check_segment(uri: str, part: str) -> None:
    if any(is_control_char(char) for char in part):
        raise InvalidURIError(
            "".join(repr(char)[1:-1] if is_control_char(char) else char for char in uri),
            "control characters (newline, tab...) are not allowed in URIs",
            hint="Name the path without control characters",
        )
    if part in (".", ".."):
        raise PermissionDeniedError(
            f"Access denied: '{part}' segments are not allowed in URIs: {uri}",
            hint="Name the path directly, without '.' or '..' segments",
            details={"uri": uri, "segment": part},
        )
    if "\\" in part or looks_like_a_drive(part):
        raise PermissionDeniedError(
            f"Access denied: invalid path segment '{part}' in {uri}",
            hint="URI segments are separated by '/'; backslashes and drive letters are not allowed",
            details={"uri": uri, "segment": part},
        )


def _context_type(seg: tuple[str, ...]) -> str:
    if len(seg) >= 3 and seg[0] == "user":
        kind = seg[2]
        if kind == "peers" and len(seg) >= 5:
            kind = seg[4]
        if kind == "memories":
            return "memory"
        if kind == "skills":
            return "skill"
        return "resource"
    if len(seg) >= 2 and seg[0] == "agent":
        if seg[1] == "skills":
            return "skill"
        if len(seg) >= 3 and seg[2] in ("memories", "skills"):
            return "memory" if seg[2] == "memories" else "skill"
    return "resource"
