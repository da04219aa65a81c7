"""``openviking serve`` (the HTTP server) and ``openviking key new`` (an API key for it)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from openviking.errors import InvalidArgumentError
from openviking_cli.boundary import ExitCode, report_error
from openviking_cli.console import say
from openviking_cli.runtime import CliContext, IdleStopOption, Output, command, command_group, idle_seconds

app = typer.Typer()
key_app = command_group(app, "key", "Make API keys for the server's users.")


@command(app, "serve")
def serve(
    ctx: CliContext,
    host: Annotated[
        str | None,
        typer.Option(
            "--host", help="The address to listen on (default: server.host, else 127.0.0.1).", show_default=False
        ),
    ] = None,
    port: Annotated[
        int | None,
        typer.Option(
            "--port", help="The port (default: server.port, else 1933).", min=0, max=65535, show_default=False
        ),
    ] = None,
    watch: Annotated[
        bool,
        typer.Option("--watch", help="Also keep every watched source of the store in step (see openviking watch)."),
    ] = False,
    local: Annotated[
        bool,
        typer.Option(
            "--local",
            help="Serve as the store's local service (see openviking start), in the foreground.",
        ),
    ] = False,
    idle_stop: IdleStopOption = None,
) -> Output:
    """Serve the store over HTTP, with upstream's API, until SIGTERM or Ctrl-C.

    Requests need an API key when server.root_api_key or server.users is set in ov.conf;
    without one the server listens on this machine only, and every request acts as
    default_user. SIGTERM lets the requests in flight finish, then exits 0. With --watch, the
    server also keeps the store's watched sources in step, in the background.

    With --local it is the store's local service (see openviking start) rather than an
    HTTP server on a port.

    Example: openviking serve --port 1933
    """
    from openviking.server.run import UnsafeBindError
    from openviking.server.run import serve as run

    if not local and (idle_stop is not None):
        raise InvalidArgumentError("--idle-stop applies to a local service: add --local")
    if local:
        if host is not None or port is not None:
            raise InvalidArgumentError("--local serves on a unix socket: --host and --port do not apply")
        from openviking.server.local import serve_local

        serve_local(ctx.store, ctx.config, idle_stop=idle_seconds(idle_stop), watch=watch)
        return Output({"stopped": True})
    try:
        run(host, port, store=ctx.store, config_file=ctx.config, watch=watch)
    except UnsafeBindError as exc:  # a start-up refusal: one line, no hint about --help
        if ctx.machine:
            report_error(exc, ctx.output, ctx.command)
        else:
            say(f"Error: {exc.message}\n", stderr=True)
        raise typer.Exit(ExitCode.USAGE) from None
    return Output({"stopped": True})


@command(key_app, "new")
def new_key(
    ctx: CliContext,
    user: Annotated[str, typer.Argument(help="The user the key acts as.", show_default=False)],
) -> Output:
    """Print a new random API key for USER, once, and the server.users line of ov.conf that lets it in.

    The line holds only the key's SHA-256; the key itself is not stored anywhere, nor shown again.

    Example: openviking key new alice
    """
    from openviking.server.auth import new_api_key
    from openviking.values.uri import is_valid_user_id

    if not is_valid_user_id(user):
        raise InvalidArgumentError(f"'{user}' is not a valid user id", hint="Use letters, digits and _ . @ -")
    key, digest = new_api_key()
    line = json.dumps({user: {"api_key_sha256": digest}})[1:-1]
    result = {"user": user, "api_key": key, "api_key_sha256": digest, "config": line}
    return Output(result, table=lambda console: _print_key(key, line))


def _print_key(key: str, line: str) -> Any:
    say(f"{key}\n{line}\n")
    say("Give the key (first line) to its user; it is not shown again. Add the second line to "
        "\"server\": {\"users\": {...}} in ov.conf.\n", stderr=True)  # fmt: skip
