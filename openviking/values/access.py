"""Whose space a URI is in, and which URIs a user may search and write.

A user searches and writes their own space (``viking://user/<them>``), the resources and
the agent's skills. Another user's space is theirs: nothing is searched there, and nothing
is written there, so nothing lands where its owner's find could not look (what is already
there can still be read, moved out or removed). The sessions folder holds sessions, made
by the session commands, not files; and no entry may take the name a directory's summaries
read as. And no summary above a user's space names a user: ``viking://user``'s abstract and
overview are the same words for every caller (:data:`USERS_ABSTRACT`, :data:`USERS_OVERVIEW`).
"""

from __future__ import annotations

from openviking.errors import ConfigError, InvalidArgumentError, InvalidURIError, PermissionDeniedError

from .uri import SIDECAR_FILES, VikingURI, is_valid_user_id, sessions_folder

__all__ = ["USERS_ABSTRACT", "USERS_OVERVIEW", "USERS_ROOT", "Access", "check_user", "no_summary_names", "public_row"]

USERS_ROOT = "viking://user"
USERS_ABSTRACT = "user holds each user's own space: their memories, resources, skills and sessions."
USERS_OVERVIEW = (
    "# user\n\n"
    "Each user's own space: viking://user/<user>/memories (what is known of them), resources, skills "
    "and sessions. A user reads and searches their own; the folders of the others are not listed here."
)


def public_row(row: dict[str, object]) -> dict[str, object]:
    """A node's row as any caller may see it: ``viking://user``'s summaries, which a store written
    by an older version may hold with the users' names in them, are the same words for everyone."""
    if row.get("uri") != USERS_ROOT:
        return row
    shown = dict(row)
    if "abstract" in shown:
        shown["abstract"] = USERS_ABSTRACT
    if "overview" in shown:
        shown["overview"] = USERS_OVERVIEW
    return shown


def check_user(user: str) -> None:
    """The configured user becomes a URI segment (``viking://user/<id>``): refuse one that cannot be.

    Raises:
        ConfigError: it is not a valid user id.
    """
    if not is_valid_user_id(user):
        raise ConfigError(
            f"default_user '{user}' is not a valid user id",
            hint="Use letters, digits and _ . @ - (it becomes a segment of viking://user/<id>); "
            "a $VARIABLE in it must be set in the environment",
        )


class Access:
    """The rules for one user.

    ``isolated``: the user may not even read another user's space (a server's user keys);
    listings of ``viking://`` and ``viking://user`` leave the other users' folders out.
    """

    def __init__(self, user: str, *, isolated: bool = False) -> None:
        self.user = user
        self.isolated = isolated

    def reachable(self, target: VikingURI) -> VikingURI:
        """``target`` when this user may name it at all.

        Raises:
            PermissionDeniedError: it is in another user's space and the user is isolated.
        """
        if self.isolated:
            self.not_in_another_space(target, "Use your own")
        return target

    def hides(self, uri: str) -> bool:
        """True when a listing must leave ``uri`` out: another user's, for an isolated user."""
        if not self.isolated or not uri.startswith("viking://user/"):
            return False
        owner, *below = uri[len("viking://user/") :].split("/", 1)
        return owner != self.user and not (owner in SIDECAR_FILES and not below)

    def searchable(self, target: VikingURI) -> VikingURI:
        """``target`` as a find scope: ``viking://user`` means the user's own space.

        Raises:
            PermissionDeniedError: ``target`` is in another user's space.
        """
        if target.segments == ("user",):
            return VikingURI(("user", self.user))
        self.not_in_another_space(target, "Search your own")
        return target

    def writable(self, target: VikingURI, *, sessions: str = "made with 'openviking session new'") -> VikingURI:
        """``target`` as the place of a new file or folder.

        Raises:
            InvalidArgumentError: ``target`` is in the sessions folder (``sessions`` says how
                sessions are made).
            PermissionDeniedError: ``target`` is in another user's space.
            InvalidURIError: a segment is a summary file's name.
        """
        self.not_in_sessions(target, sessions)
        self.not_in_another_space(target)
        no_summary_names(target)
        return target

    def not_in_another_space(self, target: VikingURI, own: str = "Write to your own") -> None:
        """Refuse ``target`` when it is in another user's space.

        Raises:
            PermissionDeniedError: it is.
        """
        segments = target.segments
        if segments[:1] == ("user",) and segments[1:] and segments[1] in SIDECAR_FILES and len(segments) == 2:
            return  # viking://user/.overview.md: the summary of the users' root, the same for everyone
        if len(segments) >= 2 and segments[0] == "user" and segments[1] != self.user:
            raise PermissionDeniedError(
                f"Access denied: {target} is in another user's space",
                hint=f"{own}: viking://user/{self.user} (default_user in the config)",
                details={"uri": str(target), "user": self.user},
            )

    def not_in_sessions(self, target: VikingURI, how: str) -> None:
        """Refuse to write below the sessions folder: what is there is sessions, not files.

        Raises:
            InvalidArgumentError: ``target`` is there.
        """
        if target.is_within(sessions_folder(self.user)):
            raise InvalidArgumentError(
                f"{target} is in the sessions folder: sessions are {how}",
                hint="Sessions are made by create_session() and add_message()",
                details={"uri": str(target)},
            )


def no_summary_names(target: VikingURI) -> None:
    """``.abstract.md`` and ``.overview.md`` are where a directory's summaries read: an entry
    of that name would be hidden behind them (read, grep and rm would reach the summary).

    Raises:
        InvalidURIError: a segment of ``target`` is one of those names.
    """
    for name in target.segments:
        if name in SIDECAR_FILES:
            raise InvalidURIError(
                str(target),
                f"'{name}' is the name a directory's {SIDECAR_FILES[name]} reads as; it cannot name a file or folder",
                hint="Choose another name",
            )
