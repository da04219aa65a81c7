"""The routes of the declared operations, made from their declarations (:mod:`openviking.contract.operations`).

Each operation whose route is not ``custom`` gets one: its path parameters from the path, the
others from the query (GET and DELETE) or from a JSON body whose model is made here from the
declaration, under their wire names, with their docs, ranges and choices, unknown fields
refused and values of the wrong kind too. The route calls the operation on the caller's client
with what the request gave (so the library's defaults apply to the rest) and answers the
envelope of its result. The operations whose routes are written by hand (uploads, checks of the
caller) have them in the other modules of this package.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from pydantic import Field, create_model

from openviking.contract.operations import OPERATIONS, Operation
from openviking.errors import InvalidArgumentError
from openviking.server.bodies import Body
from openviking.server.envelope import EnvelopeResponse, ok, said
from openviking.server.state import Client
from openviking.values.arguments import MAX_INT

__all__ = ["body_model", "given_once", "router", "say_ignored"]


def _camel(name: str) -> str:
    return "".join(part.title() for part in name.split("_"))


def _sent_params(operation: Operation[Any, Any]) -> list[str]:
    """The parameters a request carries besides the path's: all but the in-process ones."""
    in_path = operation.http.path_params
    return [name for name in operation.signature.parameters if not operation.params[name].local and name not in in_path]


def _field_type(operation: Operation[Any, Any], name: str) -> Any:
    return operation.wire_type(name)


def _constraints(operation: Operation[Any, Any], name: str) -> Any:
    """What the declaration says of the parameter's values (its range, choices, form), put
    into its schema (:meth:`Param.stated`). The library checks them, so that an error over
    HTTP reads as the same call's error in-process."""
    return operation.params[name].stated


def _field(operation: Operation[Any, Any], name: str) -> Any:
    param = operation.params[name]
    default = operation.default(name)
    return Field(
        ... if default is inspect.Parameter.empty else default,
        alias=param.wire,
        description=param.doc,
        json_schema_extra=_constraints(operation, name),
    )


def body_model(operation: Operation[Any, Any]) -> type[Body]:
    """The model of the operation's JSON body: its parameters, and upstream's fields it takes."""
    fields: dict[str, Any] = {
        name: (_field_type(operation, name), _field(operation, name)) for name in _sent_params(operation)
    }
    fields.update({name: (Any, _upstream_field(operation, name)) for name in operation.upstream})
    model: type[Body] = create_model(
        f"{_camel(operation.name)}Body", __base__=Body, __doc__=f"The body of {operation.name}.", **fields
    )
    apart: list[Any] = [
        {"not": {"properties": {flag: {"const": True}, other: {"const": True}}, "required": [flag, other]}}
        for flag in fields
        if flag in operation.params
        for other in operation.params[flag].not_with
    ]
    if apart:  # flags that may not be set together
        model.model_config["json_schema_extra"] = {"allOf": apart}
        model.model_rebuild(force=True)
    return model


PAGE_SIZE = "Upstream's name for the page's size; it wins over node_limit."
# The query parameters upstream's client sends as lists (each item a parameter of the same name).
UPSTREAM_LISTS = ("extra_fields", "tags")


def given_once(request: Request) -> None:
    """Refuse a query parameter given twice, where one value is read: the request means
    something the route would not do (every query parameter holds one value, but upstream's
    lists)."""
    for name in dict.fromkeys(request.query_params):
        if name not in UPSTREAM_LISTS and len(request.query_params.getlist(name)) > 1:
            raise InvalidArgumentError(
                f"{name} is given {len(request.query_params.getlist(name))} times; it takes one value",
                hint=f"Send {name} once",
                details={"parameter": name},
            )


def _upstream_doc(operation: Operation[Any, Any], name: str) -> str:
    return f"Upstream's; it has no effect here: {operation.upstream[name]}."


def _upstream_field(operation: Operation[Any, Any], name: str) -> Any:
    return Field(None, description=_upstream_doc(operation, name))


def say_ignored(operation: Operation[Any, Any], given: Iterable[str]) -> None:
    """A warning for each of upstream's fields in ``given``: taken, and without effect here."""
    for name in given:
        said(f"{name} has no effect here: {operation.upstream[name]}")


def _endpoint(operation: Operation[Any, Any]) -> Callable[..., EnvelopeResponse]:
    """The route's function: what FastAPI reads of its signature is what the request may carry."""
    route = operation.http
    sent = _sent_params(operation)
    parameters = [inspect.Parameter("client", inspect.Parameter.KEYWORD_ONLY, annotation=Client)]
    for name in route.path_params:
        where = Path(description=operation.params[name].doc, json_schema_extra=_constraints(operation, name))
        parameters.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[str, where]))
    model: type[Body] | None = None
    if route.in_query:
        for name in sent:
            param = operation.params[name]
            default = operation.default(name)
            query = Query(alias=param.wire, description=param.doc, json_schema_extra=_constraints(operation, name))
            parameters.append(
                inspect.Parameter(
                    name,
                    inspect.Parameter.KEYWORD_ONLY,
                    annotation=Annotated[_field_type(operation, name), query],
                    default=inspect.Parameter.empty if default is inspect.Parameter.empty else default,
                )
            )
        extra = [*operation.upstream, *(["limit"] if route.paged else [])]
        for name in extra:
            annotation: Any = (
                Annotated[int | None, Query(alias=name, description=PAGE_SIZE, ge=1, le=MAX_INT)]
                if name == "limit"
                else Annotated[
                    list[str] if name in UPSTREAM_LISTS else str | None,
                    Query(alias=name, description=_upstream_doc(operation, name)),
                ]
            )
            parameters.append(
                inspect.Parameter(
                    f"upstream_{name}",
                    inspect.Parameter.KEYWORD_ONLY,
                    annotation=annotation,
                    # A list is never null: any value of a query parameter is a list's item.
                    default=[] if name in UPSTREAM_LISTS else None,
                )
            )
    elif sent or operation.upstream:
        model = body_model(operation)
        optional = all(operation.default(name) is not inspect.Parameter.empty for name in sent)
        parameters.append(
            inspect.Parameter(
                "body",
                inspect.Parameter.KEYWORD_ONLY,
                annotation=model | None if optional else model,
                default=None if optional else inspect.Parameter.empty,
            )
        )

    def endpoint(*, client: Any, body: Body | None = None, **given: Any) -> EnvelopeResponse:
        upstream = {key[len("upstream_") :]: given.pop(key) for key in list(given) if key.startswith("upstream_")}
        if body is not None:
            fields = body.model_dump(exclude_unset=True)
            say_ignored(operation, [name for name in operation.upstream if name in fields])
            given.update({name: value for name, value in fields.items() if name not in operation.upstream})
        say_ignored(
            operation, [name for name, value in upstream.items() if value not in (None, []) and name != "limit"]
        )
        if not route.paged:
            return ok(getattr(client, operation.name)(**given))
        page = upstream.get("limit") or given.get("node_limit")
        if not isinstance(page, int) or not 0 < page < MAX_INT:
            page = None  # every entry (or a node_limit out of range, which the library names)
        else:
            given["node_limit"] = page + 1  # one more than the page tells whether more follow
        entries = getattr(client, operation.name)(**given)
        return ok(entries[:page] if page is not None else entries, has_more=page is not None and len(entries) > page)

    endpoint.__name__ = operation.name
    endpoint.__doc__ = inspect.cleandoc(operation.__doc__ or "")
    endpoint.__signature__ = inspect.Signature(parameters, return_annotation=EnvelopeResponse)  # type: ignore[attr-defined]
    return endpoint


def _tag(path: str) -> str:
    parts = path.split("/")
    return parts[3] if len(parts) > 3 and parts[1] == "api" else "system"


router = APIRouter(default_response_class=EnvelopeResponse, dependencies=[Depends(given_once)])
for _operation in OPERATIONS.values():
    if _operation.http.custom:
        continue
    router.add_api_route(
        _operation.http.path,
        _endpoint(_operation),
        methods=[_operation.http.method],
        name=_operation.name,
        operation_id=_operation.name,
        summary=(_operation.__doc__ or _operation.name).strip().split("\n")[0],
        tags=[_tag(_operation.http.path)],
    )
