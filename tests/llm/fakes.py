"""A scripted OpenAI-compatible endpoint under the real openai client (httpx2.MockTransport): no server, no sockets."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx2

from reconcile_app.core.llm import LlmClient

Reply = dict[str, Any] | str | httpx2.Response | Exception | Callable[[dict[str, Any]], Any]


def completion(content: str | dict[str, Any], *, prompt_tokens: int = 120, completion_tokens: int = 30, finish: str = "stop") -> dict[str, Any]:
    """A chat.completion body as an OpenAI-compatible server sends it."""
    text = content if isinstance(content, str) else json.dumps(content)
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "total_tokens": prompt_tokens + completion_tokens},
    }


class FakeEndpoint:
    """Answers /chat/completions from a script, one reply per request; records every request body.

    A reply is a JSON-able answer object (wrapped as the message content), a raw content string, an
    httpx2.Response, an exception to raise in the transport (a timeout, a refused connection), or a
    function of the request body that returns any of those.
    """

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def handler(self, request: httpx2.Request) -> httpx2.Response:
        body = json.loads(request.content or b"{}")
        self.requests.append(body)
        if not self.replies:
            raise AssertionError("the fake endpoint got more requests than scripted replies")
        reply = self.replies.pop(0)
        if callable(reply) and not isinstance(reply, (httpx2.Response, Exception)):
            reply = reply(body)
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, httpx2.Response):
            return reply
        if isinstance(reply, str):
            return httpx2.Response(200, json=completion(reply))
        if isinstance(reply, dict) and "choices" in reply:
            return httpx2.Response(200, json=reply)
        return httpx2.Response(200, json=completion(reply))

    def client(self, **overrides: Any) -> LlmClient:
        options: dict[str, Any] = {"base_url": "http://llm.test/v1", "api_key": "k", "model": "test-model", "timeout": 2.0, "max_retries": 0}
        options.update(overrides)
        return LlmClient(http_client=httpx2.Client(transport=httpx2.MockTransport(self.handler)), **options)

    def user_prompt(self, n: int = -1) -> str:
        return next(m["content"] for m in self.requests[n]["messages"] if m["role"] == "user")
