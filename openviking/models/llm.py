"""Chat LLMs: any OpenAI-compatible ``/chat/completions`` server, through the ``openai`` package.

Used for intent analysis (``query_planner``, falling back to ``vlm``). Every failure becomes
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
from typing import Any, Protocol
from urllib.parse import urlsplit

from openviking.config import LLMConfig
from openviking.errors import DeadlineExceededError, FailedPreconditionError, OpenVikingError, UnavailableError

__all__ = ["ChatModel", "OpenAIChat", "json_in_reply", "make_chat", "safe_url"]

_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n?(.*?)```", re.DOTALL)

DEFAULT_MODEL = "default"  # what a bare OpenAI-compatible server (llama.cpp, vLLM) is sent without a model


class ChatModel(Protocol):
    """What intent analysis needs from a chat model."""

    identity: str

    def complete(self, messages: list[dict[str, str]]) -> str:
        """The text of the model's reply to ``messages`` (``[{"role", "content"}]``)."""
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

    def complete(self, messages: list[dict[str, str]]) -> str:
        """One chat completion; the text of the first choice.

        Raises:
            DeadlineExceededError: no answer within ``timeout`` seconds.
            UnavailableError: the server cannot be reached, refused, failed or sent no text.
        """
        import openai

        kwargs: dict[str, Any] = {
            "model": self.config.model or DEFAULT_MODEL,
            "messages": messages,
            "temperature": self.config.temperature,
        }
        if self.config.max_tokens:
            kwargs["max_tokens"] = self.config.max_tokens
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
        depth = 0
        in_string = False
        escaped = False
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
            elif ch == opener:
                depth += 1
            elif ch == closer:
                depth -= 1
                if depth == 0:
                    spans.append(text[start : index + 1])
                    break
        start = text.find(opener, start + 1)
    return spans
