"""A client of OpenAI-compatible chat-completions endpoints (OpenAI, vLLM, Ollama, llama.cpp
server, NIM), on urllib only.

``ChatClient(config).complete(messages)`` POSTs ``{base_url}/chat/completions`` and returns the
first choice's text and the tokens used. A request that times out, cannot connect, or gets HTTP
429 or 5xx is tried again, ``config.retries`` more times, after ``backoff_s * 2**(k - 1)``
seconds; any other HTTP error fails at once. The API key goes in the ``Authorization`` header
only: every message this module raises has it redacted.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass

from solar.llm.config import LLMConfig, LLMError

_RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504})


@dataclass
class Completion:
    content: str
    prompt_tokens: int
    completion_tokens: int
    finish_reason: str | None = None
    estimated_usage: bool = False  # the server sent no usage: tokens estimated (4 chars each)


class ChatClient:
    def __init__(self, config: LLMConfig, sleep: Callable[[float], None] = time.sleep) -> None:
        config.require_endpoint()
        self.config = config
        self.url = config.base_url.rstrip("/") + "/chat/completions"
        self.requests = 0  # HTTP requests sent, retries included
        self._sleep = sleep

    def complete(self, messages: list[dict]) -> Completion:
        body = {
            "model": self.config.model,
            "messages": messages,
            "temperature": self.config.temperature,
            "max_tokens": self.config.max_tokens,
            "stream": False,
        }
        data = json.dumps(body).encode()
        tries = self.config.retries + 1
        problem = ""
        for k in range(tries):
            if k:
                self._sleep(self.config.backoff_s * 2 ** (k - 1))
            try:
                return self._parse(self._post(data), messages)
            except _RetryableError as e:
                problem = str(e)
        raise LLMError(self._redact(f"{self.url}: {problem} (after {tries} tries)"))

    def _post(self, data: bytes) -> bytes:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.config.api_key:
            headers["Authorization"] = f"Bearer {self.config.api_key}"
        request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        self.requests += 1
        try:
            with urllib.request.urlopen(request, timeout=self.config.timeout_s) as response:
                return response.read()
        except urllib.error.HTTPError as e:
            detail = _snippet(e.read())
            message = f"HTTP {e.code} {e.reason}" + (f": {detail}" if detail else "")
            if e.code in _RETRY_STATUS:
                raise _RetryableError(message) from None
            raise LLMError(self._redact(f"{self.url}: {message}")) from None
        except TimeoutError:
            raise _RetryableError(f"no answer within {self.config.timeout_s:g} s") from None
        except urllib.error.URLError as e:
            if isinstance(e.reason, (TimeoutError, socket.timeout)):
                raise _RetryableError(f"no answer within {self.config.timeout_s:g} s") from None
            raise _RetryableError(f"cannot connect: {e.reason}") from None
        except (ConnectionError, OSError) as e:
            raise _RetryableError(f"connection failed: {e}") from None

    def _parse(self, raw: bytes, messages: list[dict]) -> Completion:
        try:
            reply = json.loads(raw)
            choice = reply["choices"][0]
            content = choice["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMError(
                self._redact(f"{self.url}: not a chat-completions answer: {_snippet(raw)}")
            ) from None
        usage = reply.get("usage") or {}
        prompt = usage.get("prompt_tokens")
        completion = usage.get("completion_tokens")
        estimated = not isinstance(prompt, int) or not isinstance(completion, int)
        if estimated:  # no usage sent: about 4 characters a token
            prompt = sum(len(str(m.get("content", ""))) for m in messages) // 4
            completion = len(content) // 4
        return Completion(content, prompt, completion, choice.get("finish_reason"), estimated)

    def _redact(self, text: str) -> str:
        key = self.config.api_key
        return text.replace(key, "<redacted>") if key else text


class _RetryableError(Exception):
    """A failure worth another try."""


def _snippet(raw: bytes, limit: int = 200) -> str:
    text = " ".join(raw.decode("utf-8", "replace").split())
    return text if len(text) <= limit else text[:limit] + "..."
