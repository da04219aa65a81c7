"""Generate the shell completions and the man page from the Typer app itself.

    python -m openviking_cli._docgen          # rewrite completions/ and man/
    python -m openviking_cli._docgen --check  # exit 1 when a committed file is stale

The completion scripts are typer's shims (they call back into ``openviking``); the man page
walks the command tree the way typer's own docs generator does, so both are always what
the CLI really accepts. tests/test_generated.py fails when a committed file is stale.
"""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
COMPLETIONS = {"bash": "openviking.bash", "zsh": "_openviking", "fish": "openviking.fish"}
ENVIRONMENT = [
    ("OPENVIKING_STORE", "The store directory, when --store is not given."),
    ("OPENVIKING_CONFIG_FILE", "The config file, when --config is not given."),
    ("OPENVIKING_HOME", "Where ov.conf and the default store live (default ~/.openviking)."),
    ("OPENVIKING_DEBUG", "Set to 1 for tracebacks, as --debug."),
    ("OPENVIKING_URL", "The server every command is sent to, when --url is not given."),
    ("OPENVIKING_API_KEY", "The server's API key, when --api-key is not given."),
    ("OPENVIKING_CONVERT_TIMEOUT", "Seconds one document's conversion may take (default 60)."),
    ("OPENVIKING_FETCH_TIMEOUT", "Seconds a URL given to add-resource may take to answer (default 30)."),
    ("OPENVIKING_FETCH_MAX_MB", "The largest page or file add-resource fetches from a URL (default 100)."),
    ("OPENVIKING_UNPACK_MAX_MB", "What an archive given to add-resource may unpack to (default 2048)."),
    ("HTTPS_PROXY, NO_PROXY", "The proxy add-resource fetches URLs through, and the hosts it reaches directly."),
    ("NO_COLOR", "Disables colours in table output."),
]
EXIT_STATUS = [
    ("0", "Success, also when nothing matched."),
    (
        "1",
        "A runtime failure: a URI or session that is not there (NOT_FOUND), a store that does not allow it "
        "(FAILED_PRECONDITION), a model server that failed (UNAVAILABLE), ...",
    ),
    (
        "2",
        "Bad usage or bad input: flags, URIs, regexes, globs, times, filters, and a config file that is "
        "missing or invalid (whatever its code: NOT_FOUND, FAILED_PRECONDITION).",
    ),
    ("130", "Interrupted (Ctrl-C)."),
]


def completion_scripts() -> dict[str, str]:
    """File name -> script, for bash, zsh and fish."""
    # Re-exported by typer.completion without an __all__ entry (the public place to take it from).
    from typer.completion import get_completion_script  # type: ignore[attr-defined]

    return {
        name: get_completion_script(prog_name="openviking", complete_var="_OPENVIKING_COMPLETE", shell=shell) + "\n"
        for shell, name in COMPLETIONS.items()
    }


def man_page() -> str:
    """``man/openviking.1`` in roff."""
    import typer

    from openviking import __version__

    from .main import build_app

    root: Any = typer.main.get_command(build_app())
    lines = [
        f'.TH OPENVIKING 1 "{date(2026, 11, 29).isoformat()}" "openviking {__version__}" "User Commands"',
        ".SH NAME",
        r"openviking \- an AI agent's context in a local viking:// store: find, search, grep, glob",
        ".SH SYNOPSIS",
        r".B openviking",
        r"\fICOMMAND\fR [\fIOPTIONS\fR] [\fIARGS\fR]...",
        ".SH DESCRIPTION",
        _escape(root.help or ""),
        ".SH COMMANDS",
    ]
    for name, command in sorted(_commands(root)):
        lines.append(f".SS {_escape(name)}")
        usage = " ".join(_usage_pieces(command))
        lines.append(f".B openviking {_escape(name)}")
        lines.append(_escape(usage))
        lines.append(".PP")
        lines.append(_escape((command.help or "").strip()))
        for param in command.params:
            if getattr(param, "hidden", False):
                continue
            decls = ", ".join(getattr(param, "opts", []) + getattr(param, "secondary_opts", []))
            if getattr(param, "param_type_name", "") == "argument":
                decls = (param.metavar or param.name or "").upper()
            lines.append(".TP")
            lines.append(rf"\fB{_escape(decls)}\fR")
            text = getattr(param, "help", None) or ""
            envvar = getattr(param, "envvar", None)
            if envvar:
                text += f" [env: {envvar}]"
            lines.append(_escape(text or "(no description)"))
    lines.append(".SH ENVIRONMENT")
    for name, text in ENVIRONMENT:
        lines += [".TP", rf"\fB{name}\fR", _escape(text)]
    lines.append(".SH EXIT STATUS")
    for code, text in EXIT_STATUS:
        lines += [".TP", rf"\fB{code}\fR", _escape(text)]
    lines += [
        ".SH FILES",
        ".TP",
        r"\fB~/.openviking/ov.conf\fR",
        "The configuration (strict JSON, $VAR expanded).",
        ".TP",
        r"\fB~/.openviking/data\fR",
        "The default store (one LanceDB directory).",
    ]
    return "\n".join(lines) + "\n"


def _commands(group: Any, prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for name, command in group.commands.items():
        full = f"{prefix}{name}"
        if hasattr(command, "commands"):
            out.extend(_commands(command, full + " "))
        else:
            out.append((full, command))
    return out


def _usage_pieces(command: Any) -> list[str]:
    pieces = []
    for param in command.params:
        if getattr(param, "param_type_name", "") == "argument":
            name = (param.metavar or param.name or "").upper()
            pieces.append(name if param.required else f"[{name}]")
    pieces.append("[OPTIONS]")
    return pieces


def _escape(text: str) -> str:
    text = text.replace("\\[", "[")  # rich markup's escaped bracket is a plain one on paper
    text = text.replace("\\", "\\\\").replace("-", "\\-")
    return "\n".join(("\\&" + line) if line.startswith((".", "'")) else line for line in text.splitlines())


def expected_files() -> dict[Path, str]:
    """Every generated file and its content."""
    files = {ROOT / "completions" / name: script for name, script in completion_scripts().items()}
    files[ROOT / "man" / "openviking.1"] = man_page()
    return files


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    stale = []
    for path, content in expected_files().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == content:
            continue
        if "--check" in args:
            stale.append(str(path.relative_to(ROOT)))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    if stale:
        print("stale: " + ", ".join(stale) + " (run: python -m openviking_cli._docgen)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
