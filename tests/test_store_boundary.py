"""The store's query language stays in the store: no other module writes a LanceDB filter.

Modules outside ``openviking/store/`` call the store's named operations (``nodes_below``,
``children_of``, ``records_by_uri``...). These checks read the source: they fail on a
filter helper imported from the store, on a call of the store's private predicate methods,
and on a string that reads like a predicate over the store's columns.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from helpers import REPO

STORE = REPO / "openviking" / "store"
OUTSIDE = sorted(
    p
    for root in (REPO / "openviking", REPO / "openviking_cli")
    for p in root.rglob("*.py")
    if "__pycache__" not in p.parts and STORE not in p.parents
)
FILTER_HELPERS = {"sql_string", "sql_in", "sql_timestamp", "path_scope_sql", "filter_to_sql"}
COLUMNS = r"(uri|parent_uri|is_dir|depth|level|chunk|context_type|user_id|session_id|from_uri|to_uri|id|tags|content)"
PREDICATE = re.compile(
    rf"\b{COLUMNS}\s+(=|!=|<=|>=|<|>|IN\s*\(|IS\s+(NOT\s+)?NULL\b)|\bstarts_with\(|\barray_has\(|\bNOT\s+is_dir\b"
)


def _relative(path: Path) -> str:
    return str(path.relative_to(REPO))


@pytest.mark.parametrize("path", OUTSIDE, ids=_relative)
def test_no_filter_helper_is_imported_outside_the_store(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("store.filters"):
            used = {alias.name for alias in node.names} & FILTER_HELPERS
            assert not used, f"{_relative(path)}:{node.lineno} imports {sorted(used)}"


@pytest.mark.parametrize("path", OUTSIDE, ids=_relative)
def test_no_private_store_method_is_called_outside_the_store(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.startswith("_"):
            owner = node.func.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            assert "store" not in name, f"{_relative(path)}:{node.lineno} calls {name}.{node.func.attr}"


@pytest.mark.parametrize("path", OUTSIDE, ids=_relative)
def test_no_string_reads_like_a_filter_outside_the_store(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and (body := node.body)
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found = PREDICATE.search(node.value)
            assert found is None, f"{_relative(path)}:{node.lineno} writes a filter: {node.value[:80]!r}"
        if isinstance(node, ast.JoinedStr):  # an f-string: its formatted values read as "x"
            text = "".join(v.value if isinstance(v, ast.Constant) else "x" for v in node.values)
            assert PREDICATE.search(text) is None, f"{_relative(path)}:{node.lineno} writes a filter: {text[:80]!r}"


def test_the_checks_catch_a_filter() -> None:
    """The pattern recognises what a filter written outside the store looks like."""
    for sample in ("uri = 'viking://x'", "parent_uri IN ('a')", "NOT is_dir AND (x)", "starts_with(uri, 'a/')"):
        assert PREDICATE.search(sample), sample
    for sample in ("the uri of the file", "Use --limit with a whole number", "level 2 content"):
        assert not PREDICATE.search(sample), sample
