"""The results of find and search: hits grouped by context type, and a search's query plan.

Their ``to_dict()`` is the JSON of the CLI's ``-o json`` and of the HTTP API; ``from_dict()``
reads it back. The other results (listings, grep, glob, writes, sessions) are in
:mod:`openviking.contract.results`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .results import Relation

__all__ = [
    "ContextType",
    "FindResult",
    "MatchedContext",
    "QueryPlan",
    "QueryResult",
    "RelatedContext",
    "SearchHit",
    "TypedQuery",
]

# Upstream's name for what a hit's ``relations`` hold.
RelatedContext = Relation


class ContextType:
    """The three context types, as plain strings (``"memory"``, ``"resource"``, ``"skill"``)."""

    MEMORY = "memory"
    RESOURCE = "resource"
    SKILL = "skill"
    ALL = ("memory", "resource", "skill")


@dataclass(slots=True)
class MatchedContext:
    """One find/search hit, shaped as upstream's ``MatchedContext`` (OpenViking's retrieval API).

    ``uri`` is the display URI: a directory's L0/L1 hit ends in ``/.abstract.md`` or
    ``/.overview.md``. ``explain`` is filled only when an explanation was asked for.
    """

    uri: str
    context_type: str = "resource"
    level: int = 2
    score: float = 0.0
    abstract: str = ""
    overview: str | None = None
    category: str = ""
    match_reason: str = ""
    relations: list[RelatedContext] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    explain: dict[str, Any] | None = None
    place: str | None = None  # a document's page, slide, sheet and cells, chapter or notebook cell

    def to_dict(self) -> dict[str, Any]:
        """The JSON object, keys in upstream's order plus ``tags`` (and ``explain`` if set)."""
        data: dict[str, Any] = {
            "context_type": self.context_type,
            "uri": self.uri,
            "level": self.level,
            "score": self.score,
            "category": self.category,
            "match_reason": self.match_reason,
            "relations": [r.to_dict() for r in self.relations],
            "abstract": self.abstract,
            "overview": self.overview,
            "tags": list(self.tags),
        }
        if self.place is not None:
            data["place"] = self.place
        if self.explain is not None:
            data["explain"] = self.explain
        return data

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON Schema of a hit's ``to_dict()`` (a planned search's hit adds ``queries``)."""
        text = {"type": "string"}
        properties = {
            "context_type": {"type": "string", "enum": ["memory", "resource", "skill"]},
            "uri": text,
            "level": {"type": "integer", "enum": [0, 1, 2]},
            "score": {"type": "number"},
            "category": text,
            "match_reason": text,
            "relations": {"type": "array", "items": Relation.json_schema()},
            "abstract": text,
            "overview": {"anyOf": [text, {"type": "null"}]},
            "tags": {"type": "array", "items": text},
            "explain": {"type": "object"},
            "queries": {"type": "array", "items": text},
            "place": text,
        }
        required = [k for k in properties if k not in ("explain", "queries", "place")]
        return {"title": "MatchedContext", "type": "object", "properties": properties, "required": required}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatchedContext:
        """The hit a ``to_dict()`` made; one with ``queries`` (a planned search's) is a :class:`SearchHit`."""
        fields = {
            "uri": data["uri"],
            "context_type": data.get("context_type", "resource"),
            "level": int(data.get("level", 2)),
            "score": float(data.get("score", 0.0)),
            "abstract": data.get("abstract") or "",
            "overview": data.get("overview"),
            "category": data.get("category") or "",
            "match_reason": data.get("match_reason") or "",
            "relations": [Relation.from_dict(r) for r in data.get("relations") or []],
            "tags": list(data.get("tags") or data.get("search_tags") or []),
            "explain": data.get("explain"),
            "place": data.get("place"),
        }
        if "queries" in data:
            return SearchHit(**fields, queries=list(data["queries"]))
        return cls(**fields)


@dataclass(slots=True)
class SearchHit(MatchedContext):
    """A hit of a planned search: a MatchedContext plus the planned queries that found it."""

    queries: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """MatchedContext's JSON plus ``queries``."""
        data = MatchedContext.to_dict(self)
        data["queries"] = list(self.queries)
        return data


@dataclass(frozen=True, slots=True)
class TypedQuery:
    """One query planned by intent analysis (or the raw query, untyped)."""

    query: str
    context_type: str | None = None
    intent: str = ""
    priority: int = 3

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "context_type": self.context_type,
            "intent": self.intent,
            "priority": self.priority,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TypedQuery:
        return cls(
            str(data.get("query", "")),
            data.get("context_type"),
            str(data.get("intent", "")),
            int(data.get("priority", 3)),
        )


@dataclass(frozen=True, slots=True)
class QueryPlan:
    """What intent analysis decided: its reasoning and 0 to 5 typed queries."""

    reasoning: str = ""
    queries: tuple[TypedQuery, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"reasoning": self.reasoning, "queries": [q.to_dict() for q in self.queries]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> QueryPlan:
        return cls(str(data.get("reasoning", "")), tuple(TypedQuery.from_dict(q) for q in data.get("queries") or []))


@dataclass(slots=True)
class QueryResult:
    """What one planned query of a search found (``FindResult.query_results``)."""

    query: TypedQuery
    matched_contexts: list[MatchedContext] = field(default_factory=list)
    searched_directories: list[str] = field(default_factory=list)

    def provenance(self) -> dict[str, Any]:
        """Upstream's provenance item: the query, where it looked and what it matched."""
        return {
            "query": self.query.to_dict(),
            "searched_directories": list(self.searched_directories),
            "matched_contexts": [
                {
                    "uri": hit.uri,
                    "tier": f"L{hit.level}",
                    "context_type": hit.context_type,
                    "score": hit.score,
                    "match_reason": hit.match_reason,
                }
                for hit in self.matched_contexts
            ],
        }


@dataclass(slots=True)
class FindResult:
    """Hits grouped by context type; iterating yields memories, then resources, then skills."""

    memories: list[MatchedContext] = field(default_factory=list)
    resources: list[MatchedContext] = field(default_factory=list)
    skills: list[MatchedContext] = field(default_factory=list)
    query_plan: QueryPlan | None = None
    diagnostics: dict[str, Any] | None = None
    # Set by a search that ran a plan: each planned query and what it found.
    query_results: list[QueryResult] | None = None
    # Upstream's ``include_provenance`` and ``telemetry``: what to_dict() adds.
    include_provenance: bool = False
    telemetry: dict[str, Any] | None = None
    # The provenance a server sent (its query_results stay on the server).
    received_provenance: list[dict[str, Any]] | None = None
    # Records within the query's scope that wait for their vectors: found by their words and
    # summaries only until they get them.
    pending_vectors: int = 0

    @classmethod
    def from_hits(cls, hits: list[MatchedContext], query_plan: QueryPlan | None = None) -> FindResult:
        """Group hits (already in final order) by their context type."""
        result = cls(query_plan=query_plan)
        for hit in hits:
            result.group(hit.context_type).append(hit)
        return result

    def group(self, context_type: str) -> list[MatchedContext]:
        """The list that holds hits of ``context_type`` (unknown types count as resources)."""
        if context_type == "memory":
            return self.memories
        if context_type == "skill":
            return self.skills
        return self.resources

    @property
    def total(self) -> int:
        """How many hits there are in all groups."""
        return len(self.memories) + len(self.resources) + len(self.skills)

    def __iter__(self) -> Iterator[MatchedContext]:
        yield from self.memories
        yield from self.resources
        yield from self.skills

    def __len__(self) -> int:
        return self.total

    def to_dict(self, include_provenance: bool | None = None) -> dict[str, Any]:
        """``{memories, resources, skills, [query_plan], total}`` as upstream returns it; plus
        ``pending_vectors``, ``provenance`` (a planned search's ``query_results``, when asked
        for) and ``telemetry``."""
        data: dict[str, Any] = {
            "memories": [m.to_dict() for m in self.memories],
            "resources": [m.to_dict() for m in self.resources],
            "skills": [m.to_dict() for m in self.skills],
        }
        if self.query_plan is not None:
            data["query_plan"] = self.query_plan.to_dict()
        if self.diagnostics is not None:
            data["diagnostics"] = self.diagnostics
        wanted = self.include_provenance if include_provenance is None else include_provenance
        if wanted and self.query_results is not None:
            data["provenance"] = [result.provenance() for result in self.query_results]
        elif wanted and self.received_provenance is not None:
            data["provenance"] = list(self.received_provenance)
        data["total"] = self.total
        data["pending_vectors"] = self.pending_vectors
        if self.telemetry is not None:
            data["telemetry"] = self.telemetry
        return data

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The JSON Schema of ``to_dict()``: the three groups and the total, and what a search adds."""
        hits = {"type": "array", "items": MatchedContext.json_schema()}
        typed = {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "context_type": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "intent": {"type": "string"},
                "priority": {"type": "integer"},
            },
        }
        plan = {
            "type": "object",
            "properties": {"reasoning": {"type": "string"}, "queries": {"type": "array", "items": typed}},
        }
        properties = {
            "memories": hits,
            "resources": hits,
            "skills": hits,
            "query_plan": plan,
            "diagnostics": {"type": "object"},
            "provenance": {"type": "array", "items": {"type": "object"}},
            "total": {"type": "integer"},
            "pending_vectors": {"type": "integer"},
            "telemetry": {"type": "object"},
        }
        required = ["memories", "resources", "skills", "total"]
        return {"title": "FindResult", "type": "object", "properties": properties, "required": required}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> FindResult:
        """The result a ``to_dict()`` made (a planned search's ``provenance`` is kept as it is)."""
        plan = data.get("query_plan")
        result = cls(
            memories=[MatchedContext.from_dict(h) for h in data.get("memories") or []],
            resources=[MatchedContext.from_dict(h) for h in data.get("resources") or []],
            skills=[MatchedContext.from_dict(h) for h in data.get("skills") or []],
            query_plan=QueryPlan.from_dict(plan) if isinstance(plan, Mapping) else None,
            diagnostics=data.get("diagnostics"),
            telemetry=data.get("telemetry"),
            pending_vectors=int(data.get("pending_vectors") or 0),
        )
        if "provenance" in data:
            result.received_provenance = list(data["provenance"])
            result.include_provenance = True
        return result
