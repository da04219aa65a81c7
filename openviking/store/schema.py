"""Arrow schemas of the store's tables and the columns a filter may name."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

NODES = "nodes"
RECORDS = "records"
META = "meta"
FORMAT_VERSION = "1"

# What a record's text is (its ``form``), for how find weighs the two sides of a match: the
# turns of a transcript, source code, or other text. A records table an older version wrote
# gets the column at its next write; its records keep a null form (read as text) until they
# are written again, which ``openviking reindex`` does for all of them.
FORM_TEXT = "text"
FORM_CODE = "code"
FORM_DIALOGUE = "dialogue"
FORM_DOCUMENT = "document"  # a PDF, an Office file, a web page...: text converted from it
# The records column that says a record waits for its vector (see ``records_schema``).
VECTOR_PENDING = "vector_pending"

# Columns the filter DSL may use, and their kind (how a value is turned into SQL).
FILTER_FIELDS: dict[str, str] = {
    "uri": "path",
    "context_type": "string",
    "level": "int",
    "search_tags": "tags",
    "tags": "tags",
    "created_at": "time",
    "updated_at": "time",
}

NODE_COLUMNS = [
    "uri",
    "parent_uri",
    "name",
    "is_dir",
    "context_type",
    "depth",
    "content",
    "abstract",
    "overview",
    "size",
    "created_at",
    "updated_at",
    "tags",
    "content_hash",
    "source",
]

# Everything a listing needs, without the (possibly large) content column.
NODE_LISTING_COLUMNS = [c for c in NODE_COLUMNS if c not in ("content", "overview")]
# Every column: what a node is copied with (a move), its document's bytes too.
NODE_ALL_COLUMNS = [*NODE_COLUMNS, "raw"]


def nodes_schema() -> pa.Schema:
    """One row per file or directory of the virtual filesystem."""
    import pyarrow as pa

    timestamp = pa.timestamp("ms", tz="UTC")
    return pa.schema(
        [
            pa.field("uri", pa.string(), nullable=False),
            pa.field("parent_uri", pa.string()),
            pa.field("name", pa.string()),
            pa.field("is_dir", pa.bool_()),
            pa.field("context_type", pa.string()),
            pa.field("depth", pa.int32()),
            pa.field("content", pa.large_string()),
            pa.field("abstract", pa.string()),
            pa.field("overview", pa.large_string()),
            pa.field("size", pa.int64()),
            pa.field("created_at", timestamp),
            pa.field("updated_at", timestamp),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("content_hash", pa.string()),
            pa.field("source", pa.string()),
            # A document's bytes as they were added (its content is the text made of them).
            pa.field("raw", pa.large_binary()),
        ]
    )


def records_schema(dimension: int) -> pa.Schema:
    """One row per retrievable record: a directory's L0 and L1, each file's L2 chunks."""
    import pyarrow as pa

    timestamp = pa.timestamp("ms", tz="UTC")
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("uri", pa.string(), nullable=False),
            pa.field("depth", pa.int32()),
            pa.field("level", pa.int8()),
            pa.field("chunk", pa.int32()),
            pa.field("line_start", pa.int32()),
            pa.field("line_end", pa.int32()),
            pa.field("context_type", pa.string()),
            pa.field("text", pa.large_string()),
            pa.field("abstract", pa.string()),
            # What the vector is made of: a hash of the text embedded and of how many tokens of it.
            pa.field("text_hash", pa.string()),
            # Null while the record waits for its vector (``vector_pending``): vector search and
            # its index pass over it, the full-text index does not.
            pa.field("vector", pa.list_(pa.float32(), dimension)),
            pa.field("created_at", timestamp),
            pa.field("updated_at", timestamp),
            pa.field("tags", pa.list_(pa.string())),
            pa.field("form", pa.string()),
            # Where in a document the chunk is ("page 2", "slide 3", "sheet Budget A1:D40").
            pa.field("place", pa.string()),
            # A record written before its vector: the flag (a column of its own, since counting
            # null vectors reads every vector), the text to embed and how many of its tokens.
            # Both texts go once the vector is in; a table an older version wrote gets the
            # columns, empty (nothing pending), at its next write.
            pa.field(VECTOR_PENDING, pa.bool_()),
            pa.field("embed_input", pa.large_string()),
            pa.field("embed_tokens", pa.int32()),
        ]
    )


def meta_schema() -> pa.Schema:
    """Key/value facts about the store (format version, embedder identity)."""
    import pyarrow as pa

    return pa.schema([pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string())])


RELATIONS = "relations"


def relations_schema() -> pa.Schema:
    """Links between URIs (upstream's relations): one row per (from, to) pair."""
    import pyarrow as pa

    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("from_uri", pa.string(), nullable=False),
            pa.field("to_uri", pa.string(), nullable=False),
            pa.field("reason", pa.string()),
            pa.field("created_at", pa.timestamp("ms", tz="UTC")),
        ]
    )
