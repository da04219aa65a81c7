"""The local service of a store: where it announces itself, and how a command line finds it.

A local service (``openviking start``) is ``openviking serve`` for one user on one machine: it
serves one store over a unix socket (mode 0600, in a directory of mode 0700 that
``mkdtemp`` made) and asks every request for a random key of its own. Once its store is open
and its model loaded it writes an *announcement*, ``$OPENVIKING_HOME/run/<store id>.json``
(mode 0600, in a directory of mode 0700): its pid, socket, key, version and *fingerprint*.

The fingerprint is what must be the same for the service to answer as this process would
embedded: the version and where the package is installed, the store's absolute location, the
config file's path and content (after ``$VAR`` expansion), and the environment variables the
library reads (``OPENVIKING_*`` but those that only pick a server or the output, the object
stores' credentials for a store in a bucket, ``OPENAI_API_KEY``, ``TZ``). A command line that
finds an announcement with another version or fingerprint, a pid that is gone, or a socket that
is not there does not use it. Finding one costs a stat, a small read and a hash: no import
beyond the standard library and the config.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

from openviking._version import __version__
from openviking.config import Config, config_home, load_config
from openviking.errors import OpenVikingError

__all__ = [
    "EXPECT_HEADER",
    "OPT_OUT_ENV",
    "SERVICE_HEADER",
    "SOCKET_DIRECTORY_PREFIX",
    "STATUS_PATH",
    "WATCH_STATE_KEYS",
    "Announcement",
    "Found",
    "Location",
    "announcement_path",
    "find_service",
    "fingerprint",
    "located",
    "log_path",
    "private_run_directory",
    "process_gone",
    "read_announcement",
    "remove_announcement",
    "remove_leftovers",
    "runs_a_service",
    "write_announcement",
]

SERVICE_HEADER = "x-openviking-service"  # on every answer of a service: its fingerprint
EXPECT_HEADER = "x-openviking-expect"  # on a request: the fingerprint the caller needs
STATUS_PATH = "/local/status"  # a service's pid, socket, requests, what it watches...
# What status shows of each watched source (as list_watches names it).
WATCH_STATE_KEYS = ("to_uri", "path", "is_active", "watch_interval", "last_execution_time", "last_error", "watcher")

SOCKET_DIRECTORY_PREFIX = "openviking-"  # the mkdtemp directory a service's socket is made in

OPT_OUT_ENV = "OPENVIKING_NO_SERVICE"
"""Set (to anything but empty or 0), a command line never uses a local service."""

# Variables that change only what a client prints or which server it calls, never an answer.
_CLIENT_ONLY = frozenset({"OPENVIKING_URL", "OPENVIKING_API_KEY", "OPENVIKING_DEBUG", OPT_OUT_ENV})
_READ_BY_THE_LIBRARY = ("OPENAI_API_KEY", "TZ")
_BUCKET_PREFIXES = ("AWS_", "GOOGLE_", "AZURE_")


@dataclass(frozen=True)
class Location:
    """The store a command line or a service is for, with the configuration it reads."""

    store: str  # absolute, or a bucket's URL
    config: Config

    @property
    def config_file(self) -> str | None:
        return str(self.config.path.resolve()) if self.config.path is not None else None


def located(store: str | os.PathLike[str] | None, config_file: str | os.PathLike[str] | None) -> Location:
    """The store ``store`` (else the config's, the environment's, the default) names, absolute.

    Raises:
        ConfigError: the config file is invalid.
        ConfigFileNotFoundError: the config file named does not exist.
    """
    config = load_config(config_file)
    where = config.store_path(store)
    return Location(where if "://" in where else os.path.abspath(where), config)


def fingerprint(location: Location, environ: Mapping[str, str] = os.environ) -> str:
    """What must be the same for a service to answer as this process would (module docstring)."""
    bucket = "://" in location.store
    variables = {
        name: value
        for name, value in environ.items()
        if (name.startswith("OPENVIKING_") and name not in _CLIENT_ONLY)
        or name in _READ_BY_THE_LIBRARY
        or (bucket and name.startswith(_BUCKET_PREFIXES))
    }
    described = {
        "version": __version__,
        "package": os.path.dirname(os.path.dirname(os.path.abspath(__file__))),  # the installed openviking/
        "store": location.store,
        "config_file": location.config_file,
        "config": location.config.raw,
        "environment": variables,
    }
    text = json.dumps(described, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Announcement:
    """What a running service says of itself in its announcement file."""

    pid: int
    socket: str
    version: str
    fingerprint: str
    store: str
    config_file: str | None
    since: float  # when it started answering, seconds since the epoch
    idle_stop: float | None = None  # seconds without a request after which it stops (None: never)
    key: str = field(default="", repr=False)

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Announcement | None:
        """The announcement ``text`` holds, or None when it is not one."""
        try:
            raw = json.loads(text)
            announcement = cls(**raw)
        except (ValueError, TypeError):
            return None
        fields_ok = (
            isinstance(announcement.pid, int)
            and announcement.pid > 0
            and all(isinstance(v, str) for v in (announcement.socket, announcement.version, announcement.key))
            and isinstance(announcement.fingerprint, str)
            and isinstance(announcement.since, int | float)
        )
        return announcement if fields_ok else None

    def alive(self) -> bool:
        """Whether its process still runs and its socket is still there."""
        return not process_gone(self.pid) and private(Path(self.socket), stat.S_IFSOCK)


def process_gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (reaped here if it was this process's child; a zombie
    whose parent does not reap it counts as ended)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return True
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # the pid went to another user's process
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state in ("Z", "X")


def run_directory() -> Path:
    """``$OPENVIKING_HOME/run``: the announcements and the services' logs (mode 0700)."""
    return config_home() / "run"


def announcement_path(store: str) -> Path:
    """Where the service of ``store`` (absolute, as :func:`located` gives it) announces itself."""
    return run_directory() / f"{hashlib.sha256(store.encode('utf-8')).hexdigest()[:20]}.json"


def log_path(store: str) -> Path:
    """Where the service of ``store`` started by ``openviking start`` writes its log."""
    return announcement_path(store).with_suffix(".log")


def private_run_directory() -> Path:
    """:func:`run_directory`, made if needed, mode 0700."""
    folder = run_directory()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(folder, 0o700)
    return folder


def private(path: Path, kind: int) -> bool:
    """Whether ``path`` is this user's own ``kind`` (``stat.S_IFDIR``, ``S_IFREG``, ``S_IFSOCK``)
    that nobody else may open: no group or other permission bits, not a link."""
    try:
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_IFMT(info.st_mode) == kind and info.st_uid == os.getuid() and not info.st_mode & 0o077


def read_announcement(store: str) -> Announcement | None:
    """The announcement for ``store``, when its file is this user's alone and holds one."""
    path = announcement_path(store)
    if not (private(path.parent, stat.S_IFDIR) and private(path, stat.S_IFREG)):
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return None
    return Announcement.from_json(text)


def write_announcement(announcement: Announcement) -> Path:
    """Write ``announcement`` for its store (mode 0600, whole: a reader never sees half of it)."""
    path = private_run_directory() / announcement_path(announcement.store).name
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        out.write(announcement.to_json())
    os.replace(temporary, path)
    return path


def remove_announcement(announcement: Announcement) -> None:
    """Remove ``announcement``'s file if it still names that service (a newer one keeps its own)."""
    path = announcement_path(announcement.store)
    current = read_announcement(announcement.store)
    if current is not None and (current.pid, current.socket) == (announcement.pid, announcement.socket):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def remove_leftovers(announcement: Announcement) -> None:
    """Remove what the service ``announcement`` names leaves once it has ended: its
    announcement, its socket and the directory made for it (when they are this user's own)."""
    remove_announcement(announcement)
    sock = Path(announcement.socket)
    if private(sock, stat.S_IFSOCK):
        with contextlib.suppress(OSError):
            sock.unlink()
    if private(sock.parent, stat.S_IFDIR) and sock.parent.name.startswith(SOCKET_DIRECTORY_PREFIX):
        with contextlib.suppress(OSError):
            sock.parent.rmdir()


def runs_a_service(pid: int) -> bool:
    """Whether process ``pid`` is a local service (where ``/proc`` tells; elsewhere assumed)."""
    try:
        arguments = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return not process_gone(pid)
    except OSError:
        return True
    return b"--local" in arguments and any(b"openviking" in a for a in arguments)


def opted_out(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether ``OPENVIKING_NO_SERVICE`` asks for the embedded path always."""
    return environ.get(OPT_OUT_ENV, "").strip() not in ("", "0")


class Found(NamedTuple):
    """A live service that answers as this process would: its announcement, the fingerprint
    it must keep having, and the user the calls act as."""

    announcement: Announcement
    fingerprint: str
    user: str


def find_service(store: str | os.PathLike[str] | None, config_file: str | os.PathLike[str] | None) -> Found | None:
    """The live service that answers as this process would for ``store`` and ``config_file``;
    None when there is none (or it cannot be told: a config file that does not load leaves
    its error to the embedded path)."""
    if opted_out():
        return None
    try:
        location = located(store, config_file)
    except OpenVikingError:
        return None
    found = read_announcement(location.store)
    if found is None or found.version != __version__ or found.store != location.store:
        return None
    expected = fingerprint(location)
    if found.fingerprint != expected or not found.alive():
        return None
    return Found(found, expected, location.config.user)
