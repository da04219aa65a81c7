"""How an operation is declared: once, on the interface, with what every face needs of it.

An operation is a method of :class:`~openviking.contract.interface.OpenVikingClient` decorated with
:func:`operation`. The method's signature gives its parameters' names, types and defaults,
its return annotation the result's type, its docstring what it does; the decorator adds
each parameter's doc and range (:class:`Param`), the HTTP route (:class:`Route`, upstream's
path where upstream has one), the MCP tool (:class:`Tool`, or :class:`NoTool` saying why
there is none), the command that runs it, and whether it writes. From that one declaration
come the server's routes and its OpenAPI document, both HTTP clients' methods, the MCP tools
and their schemas, and the tests that tie each face to it; the embedded client implements it.

The decorated method is an :class:`Operation`, a descriptor: read on a class that performs
operations generically (the HTTP clients, :class:`Performs` and :class:`PerformsAsync`), it
is a method that hands its arguments to the client's ``_perform``; a client that implements
the method itself (the embedded one) simply has its own.
"""

from __future__ import annotations

import collections.abc as abc
import copy
import functools
import inspect
import os
import types
import typing
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Concatenate, Generic, NoReturn, ParamSpec, TypeVar, overload

__all__ = [
    "OPERATIONS",
    "NoTool",
    "Operation",
    "Param",
    "Performs",
    "PerformsAsync",
    "Route",
    "Tool",
    "declared",
    "operation",
    "tool_names",
    "wire_type",
]

P = ParamSpec("P")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Param:
    """What the signature does not say of a parameter: what it means, the range, the values or
    the form (:mod:`openviking.contract.forms`) it may take, its name on the wire when that is not its
    own, and whether it stays in-process."""

    doc: str
    ge: float | None = None
    le: float | None = None
    choices: tuple[str, ...] = ()
    wire: str | None = None  # its key in HTTP bodies and queries (upstream's name)
    local: bool = False  # an in-process argument (a callback): never sent, no tool takes it
    pattern: str | None = None  # a regular expression every string it holds matches (a list: each item)
    schema: Mapping[str, Any] | None = None  # its JSON Schema, where its type and the above cannot say it
    json_type: Any = None  # its type on the wire, when narrower than wire_type() of its own
    not_with: tuple[str, ...] = ()  # the flags that may not be set with this one

    def stated(self, schema: dict[str, Any]) -> None:
        """Put what this declares into ``schema``, the JSON Schema of the parameter's wire type:
        the range on each number it may be, the choices and the pattern on each string (a list's
        items too), or :attr:`schema` in its place (its ``description`` and ``default`` kept)."""
        if self.schema is not None:
            kept: dict[str, Any] = {key: schema[key] for key in ("title", "description", "default") if key in schema}
            nullable = {"type": "null"} in schema.get("anyOf", ())
            own = copy.deepcopy(dict(self.schema))
            schema.clear()
            schema.update({"anyOf": [own, {"type": "null"}]} if nullable else own)
            schema.update(kept)
            return
        for branch in schema.get("anyOf", ()):
            self.stated(branch)
        kind = schema.get("type")
        if kind == "array" and isinstance(schema.get("items"), dict):
            self.stated(schema["items"])
        elif kind in ("integer", "number"):
            schema.update({k: v for k, v in (("minimum", self.ge), ("maximum", self.le)) if v is not None})
        elif kind == "string":
            if self.choices:
                schema["enum"] = list(self.choices)
            if self.pattern is not None:
                schema["pattern"] = self.pattern


@dataclass(frozen=True, slots=True)
class Route:
    """Where the operation is served: the method, the path (``{name}`` a path parameter), and
    whether the other parameters travel in the query (GET and DELETE) or in a JSON body."""

    method: str
    path: str
    query: bool | None = None  # None: the query for GET and DELETE, the body for POST
    custom: bool = False  # the server's route is written by hand (it reads uploads, or checks the caller)
    # A listing in pages, as upstream's: its ``limit`` (which wins over node_limit) is the page's
    # size, ``offset`` where it starts, and the answer says whether more follow (``has_more``).
    paged: bool = False

    @property
    def in_query(self) -> bool:
        return self.query if self.query is not None else self.method in ("GET", "DELETE")

    @property
    def path_params(self) -> tuple[str, ...]:
        return tuple(part[1:-1] for part in self.path.split("/") if part.startswith("{") and part.endswith("}"))


@dataclass(frozen=True, slots=True)
class Tool:
    """The MCP tool of an operation: its title, what an agent reads of it (what it does, when to
    use it rather than another, what its result holds), one call's arguments, and the
    operation's parameters it leaves out, each with why: it takes every other one an agent can
    give (:meth:`Operation.tool_params`), so a parameter declared later reaches the tool unless
    it is named here."""

    title: str
    text: str
    example: str
    leaves_out: Mapping[str, str] = field(default_factory=dict)  # parameter -> why an agent does not give it
    required: tuple[str, ...] = ()  # those an agent must give, beyond the signature's own


@dataclass(frozen=True, slots=True)
class NoTool:
    """Why an operation has no MCP tool."""

    why: str


class Performs:
    """A client that performs every declared operation the same way (over HTTP, say)."""

    def _perform(self, operation: Operation[Any, Any], arguments: dict[str, Any]) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not perform {operation.name}")


class PerformsAsync:
    """:class:`Performs` for asyncio: each declared operation, read on it, is awaited."""

    async def _perform(self, operation: Operation[Any, Any], arguments: dict[str, Any]) -> Any:
        raise NotImplementedError(f"{type(self).__name__} does not perform {operation.name}")


def declared() -> NoReturn:
    """The body of a declared operation: every client implements it or performs it, so it never runs."""
    raise NotImplementedError("a declared operation is implemented by the client that has it")


class Operation(Generic[P, R]):
    """One declared operation (see the module docstring); made by :func:`operation`."""

    def __init__(
        self,
        function: Callable[Concatenate[Any, P], R],
        *,
        http: Route,
        mcp: Tool | NoTool,
        command: str,
        writes: bool,
        params: Mapping[str, Param],
        upstream: Mapping[str, str],
    ) -> None:
        self.function = function
        self.name = function.__name__
        self.http = http
        self.mcp = mcp
        self.command = command
        self.writes = writes
        self.params = dict(params)
        self.upstream = dict(upstream)
        self.__doc__ = function.__doc__
        self.__name__ = self.name
        self.__qualname__ = function.__qualname__
        self.__wrapped__ = function
        names = list(inspect.signature(function).parameters)[1:]
        _check_declaration(self.name, names, self.params, http, mcp, self.upstream)

    def __repr__(self) -> str:
        return f"<operation {self.name}: {self.http.method} {self.http.path}>"

    @functools.cached_property
    def signature(self) -> inspect.Signature:
        """The parameters after ``self``, with their defaults."""
        full = inspect.signature(self.function)
        return full.replace(parameters=list(full.parameters.values())[1:])

    @functools.cached_property
    def hints(self) -> dict[str, Any]:
        """The resolved annotations of the parameters and of ``return``."""
        return typing.get_type_hints(self.function)

    @property
    def result(self) -> Any:
        """The type the operation returns."""
        return self.hints["return"]

    def arguments(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The call's arguments by name, defaults included (a ``TypeError`` for a call the
        signature does not take, as Python's own)."""
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)

    def default(self, name: str) -> Any:
        return self.signature.parameters[name].default

    def wire_name(self, name: str) -> str:
        return self.params[name].wire or name

    @property
    def tool_params(self) -> tuple[str, ...]:
        """The parameters its MCP tool takes: every one an agent can give (not ``local``) that
        the tool does not leave out, in the signature's order; none without a tool."""
        if not isinstance(self.mcp, Tool):
            return ()
        left_out = self.mcp.leaves_out
        return tuple(name for name in self.signature.parameters if not self.params[name].local and name not in left_out)

    def wire_type(self, name: str) -> Any:
        """The type a parameter's value takes on the wire (:func:`wire_type`, or its declared ``json_type``)."""
        declared_type = self.params[name].json_type
        return declared_type if declared_type is not None else wire_type(self.hints[name])

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> Operation[P, R]: ...
    @overload
    def __get__(self, instance: PerformsAsync, owner: type[Any]) -> Callable[P, Awaitable[R]]: ...
    @overload
    def __get__(self, instance: object, owner: type[Any]) -> Callable[P, R]: ...
    def __get__(self, instance: object, owner: type[Any]) -> Any:
        if instance is None:
            return self
        if isinstance(instance, PerformsAsync):

            async def performed_async(*args: Any, **kwargs: Any) -> Any:
                return await instance._perform(self, self.arguments(args, kwargs))

            return self._named(performed_async)
        if isinstance(instance, Performs):

            def performed(*args: Any, **kwargs: Any) -> Any:
                return instance._perform(self, self.arguments(args, kwargs))

            return self._named(performed)
        raise TypeError(f"{type(instance).__name__} neither implements nor performs {self.name}")

    def __call__(self, client: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        """``OpenVikingClient.find(client, ...)``: the operation called on ``client``."""
        method: Callable[P, R] = getattr(client, self.name)
        return method(*args, **kwargs)

    def _named(self, method: Callable[..., Any]) -> Callable[..., Any]:
        method.__name__ = self.name
        method.__qualname__ = self.__qualname__
        method.__doc__ = self.__doc__
        method.__signature__ = self.signature  # type: ignore[attr-defined]
        return method


OPERATIONS: dict[str, Operation[Any, Any]] = {}
"""Every declared operation by name, in the order the interface declares them."""


def tool_names() -> list[str]:
    """The operations that are MCP tools (``mcp=Tool(...)``), in the order they are declared."""
    return [name for name, declared_operation in OPERATIONS.items() if isinstance(declared_operation.mcp, Tool)]


def operation(
    *,
    http: Route,
    mcp: Tool | NoTool,
    command: str,
    writes: bool = False,
    params: Mapping[str, Param],
    upstream: Mapping[str, str] | None = None,
) -> Callable[[Callable[Concatenate[Any, P], R]], Operation[P, R]]:
    """Declare the decorated interface method an operation (see the module docstring).

    Args:
        http: its route.
        mcp: its MCP tool, or why it has none.
        command: the command that runs it (``"ls"``, ``"session show"``).
        writes: whether it changes the store (never retried over HTTP once sent; not
            read-only to an agent).
        params: every parameter's :class:`Param`.
        upstream: the fields upstream's clients send that have no effect here, each with why:
            a server takes them and says so in the answer's ``warnings``, where another field
            it does not know is refused.
    """

    def declare(function: Callable[Concatenate[Any, P], R]) -> Operation[P, R]:
        declared_operation = Operation(
            function, http=http, mcp=mcp, command=command, writes=writes, params=params, upstream=upstream or {}
        )
        OPERATIONS[declared_operation.name] = declared_operation
        return declared_operation

    return declare


def _check_declaration(
    name: str,
    parameters: list[str],
    params: Mapping[str, Param],
    http: Route,
    mcp: Tool | NoTool,
    upstream: Mapping[str, str],
) -> None:
    """A declaration that does not describe its own signature is a mistake in this package."""
    problems = []
    if sorted(parameters) != sorted(params):
        problems.append(f"documents {sorted(params)} for the parameters {parameters}")
    problems += [f"route parameter {p} is not a parameter" for p in http.path_params if p not in parameters]
    problems += [f"upstream's field {f} is a parameter" for f in upstream if f in params]
    if isinstance(mcp, Tool):
        for p in (*mcp.leaves_out, *mcp.required):
            if p not in params or params[p].local:
                problems.append(f"tool parameter {p} is not a parameter an agent can give")
        problems += [f"the tool leaves out {p} with no reason" for p, why in mcp.leaves_out.items() if not why.strip()]
        problems += [f"the tool requires {p}, which it leaves out" for p in mcp.required if p in mcp.leaves_out]
    if problems:
        raise TypeError(f"operation {name}: " + "; ".join(problems))


_NO_WIRE_FORM = object()


def wire_type(annotation: Any) -> Any:
    """The JSON form of a parameter's type: what an HTTP body or query holds for it.

    Dates are ISO 8601 strings, sequences lists, mappings objects, paths strings; what has no
    JSON form (a callback, a handle) drops out of a union, and a type that is only that is
    None.
    """
    found = _wire(annotation)
    return None if found is _NO_WIRE_FORM else found


def _wire(annotation: Any) -> Any:
    if annotation in (str, int, float, bool, type(None)):
        return annotation
    if annotation in (datetime, date):
        return str
    if annotation is Any or annotation is object:
        return Any
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        kinds: list[Any] = []
        for member in typing.get_args(annotation):
            kind = _wire(member)
            if kind is not _NO_WIRE_FORM and kind not in kinds:
                kinds.append(kind)
        if all(kind is type(None) for kind in kinds):
            return _NO_WIRE_FORM  # a callback or None: nothing to send
        return kinds[0] if len(kinds) == 1 else functools.reduce(lambda a, b: a | b, kinds)
    if origin in (abc.Sequence, abc.Iterable, abc.Collection, list, tuple):
        items = typing.get_args(annotation)
        item = _wire(items[0]) if items else Any
        return list[Any] if item is _NO_WIRE_FORM else list[item]  # type: ignore[valid-type]
    if origin in (abc.Mapping, dict):
        return dict[str, Any]
    if annotation is os.PathLike or origin is os.PathLike:
        return str
    return _NO_WIRE_FORM
