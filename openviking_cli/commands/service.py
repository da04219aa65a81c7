"""``openviking start``, ``stop`` and ``status``: the store's local service, which every command
on the store then uses by itself (openviking/service/rendezvous.py says how it is found)."""

from __future__ import annotations

import os
import signal
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from openviking.errors import FailedPreconditionError, InvalidArgumentError, UnavailableError
from openviking_cli.console import say
from openviking_cli.runtime import CliContext, IdleStopOption, Output, command, idle_seconds, spawn_detached

if TYPE_CHECKING:
    from openviking.service.rendezvous import Announcement, Location

app = typer.Typer()

# How long start waits for the store to open and the model to load, and stop for the requests
# in flight to finish.
START_SECONDS = 300.0
STOP_SECONDS = 120.0


def _location(ctx: CliContext) -> Location:
    from openviking.service.rendezvous import located

    if ctx.url:
        raise InvalidArgumentError(
            f"openviking {ctx.command} acts on this machine's local service: --url does not apply"
        )
    return located(ctx.store, ctx.config)


def _line(text: str) -> Any:
    def render(_console: Any) -> None:
        say(text + "\n")

    return render


@command(app, "start")
def start(
    ctx: CliContext,
    idle_stop: IdleStopOption = None,
    watch: Annotated[
        bool,
        typer.Option("--watch", help="Also keep every watched source of the store in step (see openviking watch)."),
    ] = False,
) -> Output:
    """Start the store's local service in the background: a process that keeps the store open
    and the model loaded, so that every openviking command on this store, by this user and with
    this configuration, answers through it without paying the start-up (no flag needed).
    With --watch it also keeps the store's watched sources in step, as serve --watch does.

    It listens on a unix socket only this user can open, and asks for a key kept in a file only
    this user can read. A command that finds no such service, or one of another version or
    configuration, runs as before, with the same output. Stop it with openviking stop;
    openviking status says whether it runs.

    Example: openviking start --idle-stop 2h
    """
    from openviking.service.rendezvous import fingerprint, read_announcement

    location = _location(ctx)
    seconds = idle_seconds(idle_stop)
    running = read_announcement(location.store)
    if running is not None and running.alive():
        if running.fingerprint != fingerprint(location):
            raise FailedPreconditionError(
                f"A local service of another version or configuration serves {location.store} (pid {running.pid})",
                hint="Stop it first with openviking stop (with its --store and --config)",
                details={"pid": running.pid},
            )
        return _started(running, already=True)
    announcement = _spawn(ctx, location, seconds, watch)
    return _started(announcement, already=False)


def _started(announcement: Announcement, *, already: bool) -> Output:
    data = _described(announcement)
    data["already_running"] = already
    verb = "Already running" if already else "Started"
    text = f"{verb}: the local service of {announcement.store} (pid {announcement.pid}, socket {announcement.socket})"
    return Output(data, table=_line(text))


def _spawn(ctx: CliContext, location: Location, idle_stop: float | None, watch: bool) -> Announcement:
    """Start ``openviking serve --local`` in a session of its own, and wait until it answers."""
    from openviking.service.rendezvous import log_path, private_run_directory, process_gone, read_announcement

    private_run_directory()
    log = log_path(location.store)
    argv = [sys.executable, "-m", "openviking_cli", "serve", "--local", "--store", location.store]
    if ctx.config is not None:
        argv += ["--config", os.path.abspath(ctx.config)]
    if idle_stop is not None:
        argv += ["--idle-stop", f"{idle_stop:g}s"]
    if watch:
        argv.append("--watch")
    pid = spawn_detached(argv, log)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        announced = read_announcement(location.store)
        if announced is not None and announced.pid == pid:
            return announced
        if process_gone(pid):
            raise UnavailableError(
                "The local service did not start: " + _last_line(log),
                hint=f"Its log is {log}",
                details={"log": str(log)},
            )
        time.sleep(0.05)
    os.kill(pid, signal.SIGTERM)
    raise UnavailableError(f"The local service did not answer within {START_SECONDS:g} s", hint=f"Its log is {log}")


def _last_line(log: Any) -> str:
    try:
        with open(log, encoding="utf-8", errors="replace") as text:
            lines = [line for line in text.read().splitlines() if line.strip()]
    except OSError:
        return "its log cannot be read"
    errors = [line for line in lines if line.startswith("Error:")]
    return (errors or lines or ["it said nothing"])[-1].removeprefix("Error: ")


@command(app, "stop")
def stop(ctx: CliContext) -> Output:
    """Stop the store's local service: the requests in flight finish first. Commands then
    open the store themselves again.

    Example: openviking stop
    """
    from openviking.http_client.local import service_status
    from openviking.service.rendezvous import process_gone, read_announcement, remove_leftovers, runs_a_service

    location = _location(ctx)
    running = read_announcement(location.store)
    if running is None:
        text = f"No local service runs for {location.store}."
        return Output({"store": location.store, "stopped": False}, table=_line(text))
    busy = running.alive() and runs_a_service(running.pid)  # too busy to answer, say, but there
    if service_status(running) is None and not busy:  # what a service that is gone left
        remove_leftovers(running)
        text = f"No local service runs for {location.store} (removed what one that ended left: pid {running.pid})."
        return Output({"store": location.store, "stopped": False, "pid": running.pid}, table=_line(text))
    os.kill(running.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    while not process_gone(running.pid):
        if time.monotonic() > deadline:
            raise UnavailableError(
                f"The local service (pid {running.pid}) did not stop within {STOP_SECONDS:g} s",
                hint=f"Its requests may still run; kill {running.pid} ends it at once",
            )
        time.sleep(0.05)
    remove_leftovers(running)
    text = f"Stopped the local service of {location.store} (pid {running.pid})."
    return Output({"store": location.store, "stopped": True, "pid": running.pid}, table=_line(text))


@command(app, "status")
def status(ctx: CliContext) -> Output:
    """Say whether the store's local service runs, and if so its pid, socket, start time and
    version, whether this command line uses it, whether it keeps the watched sources in step
    (start --watch), the store's watched sources with the process following each, and how many
    records wait for their vectors.

    Example: openviking status -o json
    """
    from openviking.http_client.local import service_status
    from openviking.service.rendezvous import fingerprint, read_announcement

    location = _location(ctx)
    running = read_announcement(location.store)
    live = service_status(running) if running is not None else None
    if running is None or live is None:
        data: dict[str, Any] = {"store": location.store, "running": False, **_store_state(ctx, location.store)}
        lines = [f"No local service runs for {location.store}.", "Start one with: openviking start"]
        lines += [f"  vectors waiting  {data['vectors_waiting']}", *_watch_lines(data["watching"])]
        return Output(data, table=_line("\n".join(lines)))
    data = _described(running)
    used = running.fingerprint == fingerprint(location)
    data.update(
        running=True,
        used=used,
        requests=live.get("requests"),
        follows_watches=bool(live.get("follows_watches")),
        watching=live.get("watching"),
        vectors_waiting=live.get("vectors_waiting"),
    )
    return Output(data, table=_line("\n".join(_status_lines(data))))


def _store_state(ctx: CliContext, store: str) -> dict[str, Any]:
    """What the store says with no service to ask: its watched sources and how many records
    wait for their vectors (none of either before the store exists)."""
    if not Path(store).exists():
        return {"watching": [], "vectors_waiting": 0}
    from openviking.service.rendezvous import WATCH_STATE_KEYS

    client = ctx.client()
    watching = [{key: task[key] for key in WATCH_STATE_KEYS} for task in client.list_watches()["tasks"]]
    waiting = client.doctor().store.get("pending_vectors")
    return {"watching": watching, "vectors_waiting": waiting if isinstance(waiting, int) else 0}


def _described(announcement: Announcement) -> dict[str, Any]:
    return {
        "store": announcement.store,
        "pid": announcement.pid,
        "socket": announcement.socket,
        "since": _iso(announcement.since),
        "version": announcement.version,
        "config_file": announcement.config_file,
        "idle_stop": announcement.idle_stop,
    }


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _status_lines(data: dict[str, Any]) -> list[str]:
    waiting = data["vectors_waiting"]
    idle = data["idle_stop"]
    lines = [
        f"Local service of {data['store']}: running",
        f"  pid              {data['pid']}",
        f"  socket           {data['socket']}",
        f"  since            {data['since']}",
        f"  version          {data['version']}",
        f"  config           {data['config_file'] or '(none: the defaults)'}",
        f"  used here        {'yes' if data['used'] else 'no: it runs another version or configuration'}",
        f"  requests         {data['requests']}",
        f"  idle stop        {'never' if idle is None else f'after {idle:g} s without a request'}",
        f"  keeps watches    {'yes' if data['follows_watches'] else 'no (openviking start --watch keeps them)'}",
        f"  vectors waiting  {'unknown' if waiting is None else waiting}",
    ]
    return lines + _watch_lines(data["watching"])


def _watch_lines(watching: list[dict[str, Any]] | None) -> list[str]:
    """One line per watched source of the store: its URI, folder, state and who follows it."""
    if watching is None:
        return ["  watched sources  unknown (they could not be read: the service's log says why)"]
    if not watching:
        return ["  watched sources  none"]
    lines = [f"  watched sources  {len(watching)}"]
    for source in watching:
        state = "active" if source.get("is_active") else "paused"
        who = source.get("watcher") or "no process"
        error = f"; last error: {source['last_error']}" if source.get("last_error") else ""
        lines.append(f"    {source.get('to_uri')} <- {source.get('path')} ({state}, followed by {who}{error})")
    return lines
