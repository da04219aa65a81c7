"""The API's routes, one module per group; each route validates its input, picks the caller's
client and calls one interface method."""

from __future__ import annotations

from fastapi import APIRouter

from . import content, fs, relations, resources, search, sessions, system

__all__ = ["ROUTERS"]

ROUTERS: tuple[APIRouter, ...] = tuple(
    module.router for module in (system, search, content, fs, relations, sessions, resources)
)
