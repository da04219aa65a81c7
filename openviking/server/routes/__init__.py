"""The API's routes: those of the declared operations, made from the declarations
(``declared.py``), and the few written by hand, one module per group; each route validates its
input, picks the caller's client and calls one interface method."""

from __future__ import annotations

from fastapi import APIRouter

from . import content, declared, resources, search, sessions, system, upstream, watches

__all__ = ["ROUTERS"]

ROUTERS: tuple[APIRouter, ...] = tuple(
    module.router for module in (system, declared, search, content, sessions, resources, watches, upstream)
)
