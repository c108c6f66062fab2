"""The OpenAI-compatible client: JSON-schema structured output, token counts, and errors that say whether to retry."""
from __future__ import annotations

import copy
import hashlib
import json
import logging
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import Any

import httpx2
import openai
from django.conf import settings

from .exceptions import PermanentError, RetryableError

logger = logging.getLogger(__name__)

# Statuses worth another try later: the server is busy or briefly broken, not the request.
_RETRYABLE_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


@dataclass(frozen=True)
class LlmResult:
    data: dict[str, Any]
    prompt_tokens: int
    completion_tokens: int
    model: str
    repaired: bool = False  # the first answer failed to parse or validate; this one came from the repair turn
    finish_reason: str = ""
    cached: bool = False  # answered from this process's answer cache: no call was made, no token spent

    def usage(self) -> dict[str, int]:
        calls = 0 if self.cached else 2 if self.repaired else 1
        return {"prompt_tokens": self.prompt_tokens, "completion_tokens": self.completion_tokens, "calls": calls}


class AnswerCache:
    """The validated answers of this process's recent calls, by a hash of everything the endpoint sees.

    The engines ask at temperature 0 with a fixed seed, so the same request deserves the same answer:
    the hybrid reconciler asks exactly what the LLM reconciler asked for the same memories, and a
    re-evaluation asks again what nothing has changed. Kept in memory only and bounded (the prompts
    and answers carry patient text, which is never written to a shared cache); LLM_ANSWER_CACHE_SIZE
    entries, 0 turns it off.
    """

    def __init__(self) -> None:
        self._answers: OrderedDict[str, LlmResult] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def key(**request: Any) -> str:
        return hashlib.sha256(json.dumps(request, sort_keys=True, default=str).encode()).hexdigest()

    def get(self, key: str) -> LlmResult | None:
        with self._lock:
            found = self._answers.get(key)
            if found is not None:
                self._answers.move_to_end(key)
        if found is None:
            return None
        # A copy with no tokens: the caller may change its data, and no call was paid for.
        return replace(found, data=copy.deepcopy(found.data), prompt_tokens=0, completion_tokens=0, cached=True)

    def put(self, key: str, result: LlmResult, *, size: int) -> None:
        with self._lock:
            self._answers[key] = replace(result, data=copy.deepcopy(result.data))
            self._answers.move_to_end(key)
            while len(self._answers) > size:
                self._answers.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._answers.clear()

    def __len__(self) -> int:
        return len(self._answers)


ANSWERS = AnswerCache()


class SchemaError(ValueError):
    """The answer parsed as JSON but does not fit the schema; `path` says where (never the value)."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path or '$'}: {problem}")
        self.path = path
        self.problem = problem


def validate(value: Any, schema: dict[str, Any], path: str = "$") -> None:
    """Check the subset of JSON Schema the engines use (type, enum, properties, required,
    additionalProperties, items, minItems, maxItems, maxLength, minimum, maximum). jsonschema is not a dependency."""
    types = schema.get("type")
    if types is not None:
        allowed = types if isinstance(types, list) else [types]
        if not any(_is_type(value, t) for t in allowed):
            raise SchemaError(path, f"expected {'/'.join(allowed)}")
    if "enum" in schema and value not in schema["enum"]:
        raise SchemaError(path, "value not in enum")
    if isinstance(value, str) and "maxLength" in schema and len(value) > schema["maxLength"]:
        raise SchemaError(path, f"longer than {schema['maxLength']}")
    if _is_type(value, "number"):
        if "minimum" in schema and value < schema["minimum"]:
            raise SchemaError(path, "below minimum")
        if "maximum" in schema and value > schema["maximum"]:
            raise SchemaError(path, "above maximum")
    if isinstance(value, list):
        if "minItems" in schema and len(value) < schema["minItems"]:
            raise SchemaError(path, f"fewer than {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            raise SchemaError(path, f"more than {schema['maxItems']} items")
        if "items" in schema:
            for i, item in enumerate(value):
                validate(item, schema["items"], f"{path}[{i}]")
    if isinstance(value, dict):
        props = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                raise SchemaError(path, f"missing {key}")
        for key, item in value.items():
            if key in props:
                validate(item, props[key], f"{path}.{key}")
            elif schema.get("additionalProperties") is False:
                raise SchemaError(path, "unexpected key")  # never echo model text: it may quote the patient


def _is_type(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if name == "null":
        return value is None
    return False


_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.IGNORECASE)


def parse_json_object(text: str) -> dict[str, Any]:
    """Parse an answer that should be one JSON object; tolerate code fences and chatter around it."""
    stripped = _FENCE.sub("", text or "").strip()
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError:
        start, end = stripped.find("{"), stripped.rfind("}")
        if start < 0 or end <= start:
            raise
        value = json.loads(stripped[start : end + 1])
    if not isinstance(value, dict):
        raise json.JSONDecodeError("top level is not an object", stripped, 0)
    return value


@dataclass(frozen=True)
class Prompt:
    """A versioned prompt file: the system text, then `=== user ===`, then a $-template for the user turn."""

    version: str  # the file name without .txt, e.g. "memory-delta.v1": stored on every output it shapes
    system: str
    user: Template

    def messages(self, **values: str) -> list[dict[str, str]]:
        return [{"role": "system", "content": self.system}, {"role": "user", "content": self.user.substitute(**values)}]


@lru_cache(maxsize=16)
def load_prompt(path: Path) -> Prompt:
    system, sep, user = path.read_text(encoding="utf-8").partition("\n=== user ===\n")
    if not sep:
        raise ValueError(f"prompt {path.name} has no '=== user ===' line")
    return Prompt(version=path.stem, system=system.strip(), user=Template(user.strip()))


def neutralize(text: str) -> str:
    """Make data unable to close the prompt's <tags>: swap angle brackets for look-alikes, one for one,
    so offsets into the shown text are offsets into the original."""
    return text.replace("<", "\u2039").replace(">", "\u203a")


class LlmClient:
    """One OpenAI-compatible endpoint. Outbound HTTP for the LLM engines happens only here.

    Every argument defaults to its setting; `http_client` lets tests put an httpx2.MockTransport under
    the openai client. The openai client retries passing faults itself (OPENAI_MAX_RETRIES, with
    backoff); what still fails becomes a RetryableError for the task layer.
    """

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        model: str | None = None,
        timeout: float | None = None,
        max_retries: int | None = None,
        strict_schema: bool | None = None,
        http_client: httpx2.Client | None = None,
    ) -> None:
        self.base_url = (base_url if base_url is not None else settings.OPENAI_BASE_URL) or None  # None: the OpenAI API
        self.model = model or settings.OPENAI_MODEL
        self.timeout = float(timeout if timeout is not None else settings.OPENAI_TIMEOUT_SECONDS)
        self.max_retries = int(max_retries if max_retries is not None else settings.OPENAI_MAX_RETRIES)
        # OpenAI's strict mode rejects maxLength, which the small local models need to stop; llama.cpp
        # enforces the whole schema as a grammar either way, and every answer is validated here.
        self.strict_schema = bool(strict_schema if strict_schema is not None else getattr(settings, "OPENAI_SCHEMA_STRICT", False))
        self._client = openai.OpenAI(
            base_url=self.base_url,
            api_key=api_key or settings.OPENAI_API_KEY or "not-needed",
            timeout=self.timeout,
            max_retries=self.max_retries,
            http_client=http_client,
        )

    def complete_json(
        self,
        *,
        messages: list[dict[str, str]],
        schema_name: str,
        schema: dict[str, Any],
        max_tokens: int = 1024,
        temperature: float = 0.0,
        seed: int = 7,
    ) -> LlmResult:
        """Ask for one JSON object that fits `schema`; one repair turn if it doesn't, then PermanentError.
        A request this process has already had answered is answered from the AnswerCache."""
        size = int(getattr(settings, "LLM_ANSWER_CACHE_SIZE", 0))
        key = ANSWERS.key(base_url=self.base_url, model=self.model, messages=messages, schema_name=schema_name, schema=schema,
                          max_tokens=max_tokens, temperature=temperature, seed=seed) if size > 0 else ""
        if key and (cached := ANSWERS.get(key)) is not None:
            logger.info("llm call: schema=%s model=%s answered from the cache", schema_name, self.model)
            return cached
        result = self._complete(messages, schema_name, schema, max_tokens, temperature, seed)
        if key:
            ANSWERS.put(key, result, size=size)
        return result

    def _complete(self, messages: list[dict[str, str]], schema_name: str, schema: dict[str, Any],
                  max_tokens: int, temperature: float, seed: int) -> LlmResult:
        started = time.monotonic()
        response = self._create(messages, schema_name, schema, max_tokens, temperature, seed)
        prompt_tokens, completion_tokens = _usage(response)
        text, finish = _content(response)
        try:
            data = self._checked(text, schema)
            repaired = False
        except (json.JSONDecodeError, SchemaError) as first:
            # The repair turn shows the model its own answer and the (value-free) problem, once.
            repair_messages = [
                *messages,
                {"role": "assistant", "content": text[:4000]},
                {"role": "user", "content": f"That answer was not valid for the required JSON schema ({_problem(first)}). "
                                            "Answer again with only one JSON object that fits the schema."},
            ]
            response = self._create(repair_messages, schema_name, schema, max_tokens, temperature, seed)
            more_prompt, more_completion = _usage(response)
            prompt_tokens, completion_tokens = prompt_tokens + more_prompt, completion_tokens + more_completion
            text, finish = _content(response)
            try:
                data = self._checked(text, schema)
            except (json.JSONDecodeError, SchemaError) as second:
                logger.warning("llm answer invalid after repair: schema=%s problem=%s finish=%s", schema_name, _problem(second), finish)
                raise PermanentError(
                    f"model answer did not fit schema {schema_name} after a repair attempt ({_problem(second)})",
                    extra={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
                ) from second
            repaired = True
        logger.info(
            "llm call: schema=%s model=%s prompt_tokens=%s completion_tokens=%s repaired=%s seconds=%.2f",
            schema_name, self.model, prompt_tokens, completion_tokens, repaired, time.monotonic() - started,
        )
        return LlmResult(data, prompt_tokens, completion_tokens, self.model, repaired, finish)

    def _checked(self, text: str, schema: dict[str, Any]) -> dict[str, Any]:
        data = parse_json_object(text)
        validate(data, schema)
        return data

    def _create(self, messages: list[dict[str, str]], schema_name: str, schema: dict[str, Any],
                max_tokens: int, temperature: float, seed: int) -> Any:
        try:
            return self._client.chat.completions.create(
                model=self.model,
                messages=messages,  # type: ignore[arg-type]
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": schema_name, "schema": schema, "strict": self.strict_schema},
                },  # type: ignore[arg-type]
                max_tokens=max_tokens,
                temperature=temperature,
                seed=seed,
            )
        except openai.APITimeoutError as exc:
            raise RetryableError(f"LLM endpoint timed out after {self.timeout:g}s") from exc
        except openai.APIConnectionError as exc:
            raise RetryableError("LLM endpoint unreachable") from exc
        except openai.APIStatusError as exc:
            status = exc.status_code
            if status in _RETRYABLE_STATUS or status >= 500:
                raise RetryableError(f"LLM endpoint answered HTTP {status}", extra={"status": status}) from exc
            raise PermanentError(f"LLM endpoint refused the request (HTTP {status})", extra={"status": status}) from exc
        except openai.APIResponseValidationError as exc:
            raise PermanentError("LLM endpoint sent a malformed response") from exc
        except openai.OpenAIError as exc:  # anything else the client raises is not worth a retry
            raise PermanentError(f"LLM client error ({exc.__class__.__name__})") from exc


def _usage(response: Any) -> tuple[int, int]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return 0, 0
    return int(getattr(usage, "prompt_tokens", 0) or 0), int(getattr(usage, "completion_tokens", 0) or 0)


def _content(response: Any) -> tuple[str, str]:
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise PermanentError("LLM endpoint returned no choices")
    choice = choices[0]
    return (choice.message.content or ""), str(choice.finish_reason or "")


def _problem(exc: Exception) -> str:
    if isinstance(exc, SchemaError):
        return str(exc)[:200]
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON: {exc.msg} at char {exc.pos}"
    return exc.__class__.__name__


class LlmEngine:
    """What the LLM engines share: a versioned prompt, an injectable client and a version that keys
    idempotency. Subclasses set `prompt_path` and `engine_version`; mix in before the engine ABC."""

    prompt_path: Path
    engine_version: str = "1.0.0"

    def __init__(self, client: LlmClient | None = None) -> None:
        self._client = client
        self.last_usage: dict[str, int] = {}  # the latest call's token counts, for run stats

    @property
    def prompt(self) -> Prompt:
        return load_prompt(self.prompt_path)

    @property
    def version(self) -> str:
        # The model and prompt shape the output, so both key idempotency (40 chars fit the column).
        model = (self._client.model if self._client else settings.OPENAI_MODEL) or ""
        return f"{self.engine_version}+{self.prompt.version.rsplit('.', 1)[-1]}/{model}"[:40]

    def client(self) -> LlmClient:
        # Built per call from settings when none was given, so a settings change takes effect at once.
        return self._client or LlmClient()
