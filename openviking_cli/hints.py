"""The command line's wording of the library's hints: flags where the library names parameters.

The library's hints say what to pass to a method (``limit=10``); on the command line the same
advice names the flag (``--limit 10``). Each entry matches a hint the library gives, whole, and
says it the command line's way; a hint that matches none is shown as the library wrote it.
"""

from __future__ import annotations

import re

__all__ = ["cli_hint"]

_STATIC = {
    "Pass limit as a whole number, e.g. limit=10": "Use --limit with a whole number, e.g. --limit 10",
    "Pass score_threshold as a number, e.g. score_threshold=0.3 (-1 keeps everything)": (
        "Use --threshold with a number, e.g. --threshold 0.3 (-1 keeps everything)"
    ),
    "Pass mode='hybrid', 'vector' or 'keyword'": "Use --mode hybrid, --mode vector or --mode keyword",
    "Example: context_type=['memory', 'skill']": "Example: --context-type memory,skill",
    "since and until take 30m, 2h, 7d, 2w, YYYY-MM-DD or ISO 8601 such as 2026-03-11T15:18:00Z": (
        "--after/--before (since/until in the SDK) take 30m, 2h, 7d, 2w, YYYY-MM-DD "
        "or ISO 8601 such as 2026-03-11T15:18:00Z"
    ),
    "Pass time_field='updated_at' (when the source last changed) or 'created_at' (when first added)": (
        "Use --time-field updated_at (when the source last changed) or created_at (when first added)"
    ),
    "Example: tags=['env=prod', 'team=search']": "Example: --tags env=prod,team=search",
    'Example: filter={"op": "must", "field": "level", "conds": [2]}': (
        'Example: --filter \'{"op": "must", "field": "level", "conds": [2]}\''
    ),
    "Example: level=[0, 1]": "Example: --level 0,1",
    "Pass role='user' or role='assistant'": "Use --role user or --role assistant",
    'Give the message text, e.g. "We are designing the OAuth login flow."': (
        'Give the message text, e.g. --content "We are designing the OAuth login flow."'
    ),
    "Escape special characters with a backslash, or search for the text as it is with fixed_strings=True": (
        "Escape special characters with a backslash, or search for the text as it is with -F/--fixed-strings"
    ),
    "Create it first with mkdir, or give the exact target with to=": (
        "Create it first with openviking mkdir, or give the exact target with --to"
    ),
    "Hidden files, .gitignore'd paths and binary files are left out; check include and exclude.": (
        "Hidden files, .gitignore'd paths and binary files are left out; check --include/--exclude."
    ),
    "Leave name out to use SKILL.md's": "Leave --name out to use SKILL.md's",
    "Choose another target with to=, or remove it first with rm": (
        "Choose another target with --to, or remove it first with openviking rm"
    ),
    "Add something first with add_resource(PATH) (or name another store: path=, OPENVIKING_STORE)": (
        "Add something first: openviking add-resource PATH (or pass --store / set OPENVIKING_STORE)"
    ),
    "The store is read-only here; reads still work. Name a writable directory as the store to change it.": (
        "The store is read-only here; reads still work. Point --store at a writable directory to change it."
    ),
    "Check the config file named (config_file= or OPENVIKING_CONFIG_FILE), or remove it to use the defaults.": (
        "Check --config or OPENVIKING_CONFIG_FILE, or remove it to use the defaults."
    ),
    "Pass node_limit as a whole number; 0 means no limit": "Use -n/--node-limit with a whole number; 0 means no limit",
    "Pass level_limit as a whole number; 0 means no limit": (
        "Use -L/--level-limit with a whole number; 0 means no limit"
    ),
    "Pass level_limit as a whole number; 0 means all levels": "Use -L with a whole number; 0 means all levels",
    "Sessions are made by create_session() and add_message()": "openviking session --help",
    "List the watched sources with list_watches()": "List the watched sources with: openviking watch --list",
}
_PATTERNS = [
    (
        re.compile(r"glob matches paths below a directory, e\.g\. uri='(.*)'"),
        r"glob matches paths below a directory, e.g. --uri \1",
    ),
    (
        re.compile(r"Give this one another name with name=, or remove the other: rm\('(.*)', recursive=True\)"),
        r"Give this one another name with --name, or remove the other: openviking rm -r \1",
    ),
    (
        re.compile(r"Add to it with add_message\('(.*)', 'user', TEXT\)"),
        r"Add to it with: openviking session add-message \1 --role user --content TEXT",
    ),
    (
        re.compile(r"Stop that watch first: delete_watch\('(.*)'\)"),
        r"Stop that watch first: openviking watch --stop \1",
    ),
    (
        re.compile(r"Mount or restore it, or stop watching it with delete_watch\('(.*)'\)"),
        r"Mount or restore it, or stop watching it with: openviking watch --stop \1",
    ),
]


def cli_hint(hint: str | None) -> str | None:
    """``hint`` in the command line's words (the same hint when it names no parameter)."""
    if not hint:
        return hint
    if hint in _STATIC:
        return _STATIC[hint]
    for pattern, wording in _PATTERNS:
        if pattern.fullmatch(hint):
            return pattern.sub(wording, hint)
    return hint
