"""Chat LLMs: any OpenAI-compatible ``/chat/completions`` server, through the ``openai`` package.

Used for intent analysis (``query_planner``, falling back to ``vlm``), directory summaries and
memories. A call given a JSON schema asks for structured output (``response_format``
``json_schema``); a server that refuses it (HTTP 400, 404, 415, 422 or 501) is asked again
without, and never with it again. Replies are read leniently (:func:`json_items`): small models
wrap JSON in prose and fences, leave trailing commas, and stop mid-list. Every failure becomes
an :class:`~openviking.errors.UnavailableError` or a
:class:`~openviking.errors.DeadlineExceededError` whose message names the server but never
the API key nor the server's reply (which could echo it); the library's own exception is
not chained, so not even a ``--debug`` traceback shows it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import urlsplit

from openviking.config import LLMConfig
from openviking.errors import DeadlineExceededError, FailedPreconditionError, OpenVikingError, UnavailableError

__all__ = ["ChatModel", "JsonItems", "OpenAIChat", "json_in_reply", "json_items", "make_chat", "safe_url"]

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)

DEFAULT_MODEL = "default"  # what a bare OpenAI-compatible server (llama.cpp, vLLM) is sent without a model


# What a server answers when it does not take a request's response_format.
STRUCTURED_REFUSALS = (400, 404, 415, 422, 501)


class ChatModel(Protocol):
    """What intent analysis, summaries and memories need from a chat model; ``structured``:
    whether the server took structured output (None: not asked yet)."""

    identity: str
    structured: bool | None

    def complete(self, messages: list[dict[str, str]], *, schema: dict[str, Any] | None = None) -> str:
        """The text of the model's reply to ``messages`` (``[{"role", "content"}]``), as JSON of
        ``schema`` (``{"name", "schema"}``) when given and the server takes it."""
        ...


def safe_url(url: str | None, default: str = "api.openai.com") -> str:
    """``scheme://host[:port]/path`` of a URL: no credentials, query or fragment."""
    if not url:
        return default
    try:
        parts = urlsplit(url)
    except ValueError:
        return "the configured api_base"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path}" if parts.scheme else "the configured api_base"


class OpenAIChat:
    """An OpenAI-compatible chat model.

    Args:
        config: ``vlm`` or ``query_planner`` (``api_base``, ``api_key``, ``model``,
            ``temperature``, ``max_tokens``, ``timeout``, ``max_retries``).
        purpose: what the model is used for, named in error messages.
    """

    def __init__(self, config: LLMConfig, *, purpose: str = "LLM") -> None:
        if not config.is_configured:
            raise FailedPreconditionError(
                "No LLM is configured",
                hint="Set vlm (or query_planner) with api_base, api_key and model in ov.conf",
            )
        self.config = config
        self.purpose = purpose
        self.identity = f"openai:{config.model or DEFAULT_MODEL}"
        self.structured: bool | None = None
        self._client: Any = None

    def _openai(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.OpenAI(
                base_url=self.config.api_base or None,
                api_key=self.config.api_key or os.environ.get("OPENAI_API_KEY") or "no-key",
                timeout=self.config.timeout,
                max_retries=max(0, self.config.max_retries),
            )
        return self._client

    def complete(self, messages: list[dict[str, str]], *, schema: dict[str, Any] | None = None) -> str:
        """One chat completion; the text of the first choice. With ``schema`` (``{"name",
        "schema"}``), structured output is asked for while the server takes it.

        Raises:
            DeadlineExceededError: no answer within ``timeout`` seconds.
            UnavailableError: the server cannot be reached, refused, failed or sent no text.
        """
        if schema is not None and self.structured is not False:
            try:
                text = self._completion(messages, schema)
            except UnavailableError as exc:
                if (exc.details or {}).get("status") not in STRUCTURED_REFUSALS:
                    raise
                self.structured = False  # a server without structured output: asked plainly from now on
            else:
                self.structured = True
                return text
        return self._completion(messages, None)

    def _completion(self, messages: list[dict[str, str]], schema: dict[str, Any] | None) -> str:
        import openai

        kwargs: dict[str, Any] = {
            "model": self.config.model or DEFAULT_MODEL,
            "messages": messages,
            "temperature": self.config.temperature,
        }
        if self.config.max_tokens:
            kwargs["max_tokens"] = self.config.max_tokens
        if schema is not None:
            kwargs["response_format"] = {"type": "json_schema", "json_schema": {**schema, "strict": True}}
        where = safe_url(self.config.api_base)
        error: OpenVikingError | None = None
        try:
            response = self._openai().chat.completions.create(**kwargs)
        except openai.APITimeoutError:
            # the client asks again after a timeout: say how long was waited in all
            tries = max(0, self.config.max_retries) + 1
            times = f" ({tries} attempts)" if tries > 1 else ""
            error = DeadlineExceededError(
                f"The {self.purpose} server at {where} did not answer within {self.config.timeout:g}s{times}",
                hint="Set timeout and max_retries of vlm (or query_planner) in ov.conf to wait less",
                details={"api_base": where, "timeout": self.config.timeout, "tries": tries},
            )
        except openai.APIConnectionError:
            error = UnavailableError(
                f"Cannot reach the {self.purpose} server at {where}",
                hint="Check api_base in ov.conf and that the server is running.",
                details={"api_base": where},
            )
        except openai.AuthenticationError:
            error = UnavailableError(
                f"The {self.purpose} server at {where} refused the API key (HTTP 401)",
                hint="Check api_key in ov.conf.",
                details={"api_base": where, "status": 401},
            )
        except openai.APIStatusError as exc:
            error = UnavailableError(
                f"The {self.purpose} server at {where} answered HTTP {exc.status_code}",
                details={"api_base": where, "status": exc.status_code},
            )
        except openai.OpenAIError as exc:
            error = UnavailableError(
                f"The {self.purpose} request to {where} failed ({type(exc).__name__})",
                details={"api_base": where},
            )
        except (ValueError, TypeError):  # a 200 reply that is not a chat completion
            error = UnavailableError(
                f"The {self.purpose} server at {where} sent a reply that is not a chat completion (failed to parse)",
                details={"api_base": where},
            )
        if error is not None:
            raise error  # outside the except blocks: the openai error (and its reply text) is not chained
        choices = getattr(response, "choices", None) or []
        message = getattr(choices[0], "message", None) if choices else None
        text = getattr(message, "content", None)
        if not isinstance(text, str) or not text.strip():
            raise UnavailableError(
                f"The {self.purpose} server at {where} returned no text", details={"api_base": where}
            )
        return text


def make_chat(config: LLMConfig, *, purpose: str = "LLM") -> ChatModel | None:
    """The chat model ``config`` describes, or None when it describes none."""
    if not config.is_configured:
        return None
    return OpenAIChat(config, purpose=purpose)


def json_in_reply(text: str, looks_right: Callable[[Any], bool]) -> Any:
    """The first JSON value in a model's reply for which ``looks_right`` holds: the whole reply,
    a fenced block, or the first balanced ``{...}`` or ``[...]`` in it (models wrap JSON in
    prose and fences however they are asked); None when there is none."""
    candidates: list[str] = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    candidates += _balanced_spans(text, "{", "}")
    candidates += _balanced_spans(text, "[", "]")
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except (TypeError, ValueError):
            continue
        if looks_right(value):
            return value
    return None


def _balanced_spans(text: str, opener: str, closer: str) -> list[str]:
    """Candidate spans from each opener to its matching closer (strings respected)."""
    spans: list[str] = []
    start = text.find(opener)
    while start != -1 and len(spans) < 20:
        end = _balanced_end(text, start, opener, closer)
        if end is not None:
            spans.append(text[start:end])
        start = text.find(opener, start + 1)
    return spans


def _balanced_end(text: str, start: int, openers: str, closers: str) -> int | None:
    """The index after the bracket that closes the one at ``start`` (brackets inside strings do
    not count), or None when the text ends first."""
    depth = 0
    in_string = escaped = False
    for index in range(start, len(text)):
        ch = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in openers:
            depth += 1
        elif ch in closers:
            depth -= 1
            if depth == 0:
                return index + 1
    return None


@dataclass(slots=True)
class JsonItems:
    """The items of a JSON list in a model's reply, as many as could be read; ``problems``:
    what could not be (each said in a few words); ``whole``: the list was read to its end."""

    items: list[Any] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    whole: bool = False


_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_OPEN_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?")


def json_items(text: str, key: str) -> JsonItems:
    """The items of the list under ``key`` in a model's reply (or of the first list in it),
    read leniently: prose and code fences around it, trailing commas, and a list cut short
    (the items before the cut are kept). An item that does not parse is left out and said."""
    body = _unfenced(text)
    found = JsonItems()
    named = re.search(r'["\']' + re.escape(key) + r'["\']\s*:\s*\[', body)
    start = named.end() if named else body.find("[") + 1
    if start <= 0:
        found.problems.append(f"no {key} list in the answer")
        return found
    decoder = json.JSONDecoder()
    position = start
    while True:
        while position < len(body) and body[position] in " \t\r\n,":
            position += 1
        if position >= len(body):
            found.problems.append(_cut(key, len(found.items)))
            return found
        if body[position] == "]":
            found.whole = True
            return found
        try:
            item, position = decoder.raw_decode(body, position)
        except ValueError:
            end = _item_end(body, position)
            if end is None:
                found.problems.append(_cut(key, len(found.items)))
                return found
            try:
                item = json.loads(_TRAILING_COMMA.sub(r"\1", body[position:end]))
            except json.JSONDecodeError as exc:
                found.problems.append(
                    f"an item of its {key} list does not parse ({exc.msg}): {_shown(body[position:end])}"
                )
                position = end
                continue
            position = end
        found.items.append(item)


def _cut(key: str, kept: int) -> str:
    return f"the answer stops in the middle of its {key} list, after {kept} whole item{'' if kept == 1 else 's'}"


def _shown(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= 80 else flat[:77] + "..."


def _unfenced(text: str) -> str:
    """A fenced block's content (to its end, when the closing fence was cut off), else ``text``."""
    whole = _FENCE.search(text)
    if whole:
        return whole.group(1)
    opened = _OPEN_FENCE.search(text)
    return text[opened.end() :] if opened else text


def _item_end(text: str, start: int) -> int | None:
    """Where the JSON value starting at ``start`` ends: the index after it, or None when the
    text ends first."""
    if text[start] not in "{[":
        match = re.compile(r"[^,\]]*").match(text, start)
        return match.end() if match and match.end() < len(text) else None
    return _balanced_end(text, start, "{[", "}]")
