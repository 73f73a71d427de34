"""The chat-completions client against a real HTTP server on loopback (ScriptedServer, also used
by the other test_llm_* files): answers, usage, retries with backoff on timeouts and HTTP 5xx,
no retry on other HTTP errors, and an API key that never appears in a message."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from solar.llm.client import ChatClient
from solar.llm.config import LLMConfig, LLMError

SECRET = "sk-test-0123456789-SECRET"


def answer(content: str, prompt_tokens: int = 100, completion_tokens: int = 20, **extra) -> dict:
    """A scripted reply: a chat completion with this content and usage."""
    return {"content": content, "usage": (prompt_tokens, completion_tokens), **extra}


class ScriptedServer:
    """A ThreadingHTTPServer on 127.0.0.1:0 that answers POST /v1/chat/completions with the
    scripted replies in order: ``answer(...)``, ``{"status": 500}`` (an HTTP error; its body
    echoes the request's Authorization header, to test redaction), ``{"sleep": s, ...}`` (waits
    first). Every request is recorded (``requests``: headers and JSON body)."""

    def __init__(self, script: list[dict]) -> None:
        self.script = list(script)
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                with server.lock:
                    server.requests.append(
                        {"path": self.path, "headers": dict(self.headers), "body": body}
                    )
                    step = server.script.pop(0) if server.script else {"status": 599}
                time.sleep(step.get("sleep", 0))
                try:
                    if self.path != "/v1/chat/completions":
                        self._send(404, {"error": f"no route {self.path}"})
                    elif "status" in step:
                        auth = self.headers.get("Authorization", "")
                        self._send(step["status"], {"error": "scripted failure", "auth": auth})
                    else:
                        prompt, completion = step["usage"]
                        reply = {
                            "id": "chatcmpl-test",
                            "object": "chat.completion",
                            "model": body.get("model"),
                            "choices": [
                                {
                                    "index": 0,
                                    "message": {"role": "assistant", "content": step["content"]},
                                    "finish_reason": step.get("finish_reason", "stop"),
                                }
                            ],
                            "usage": {
                                "prompt_tokens": prompt,
                                "completion_tokens": completion,
                                "total_tokens": prompt + completion,
                            },
                        }
                        self._send(200, reply)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

            def _send(self, status: int, data: dict) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def user_messages(self, i: int) -> list[str]:
        """The user messages of request i."""
        return [m["content"] for m in self.requests[i]["body"]["messages"] if m["role"] == "user"]


def isolate(tmp_path, monkeypatch) -> None:
    """No config file or LLM variables from the machine; an empty cache under tmp_path; the
    test's API key."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("SOLAR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("SOLAR_LLM_API_KEY", SECRET)
    for var in ("SOLAR_LLM_BASE_URL", "SOLAR_LLM_MODEL", "SOLAR_LLM_CONFIG"):
        monkeypatch.delenv(var, raising=False)


def config(url: str, **kw) -> LLMConfig:
    base = {"base_url": url, "model": "test-model", "api_key": SECRET, "backoff_s": 0.0}
    base.update(kw)
    return LLMConfig(**base)


MESSAGES = [{"role": "user", "content": "hello"}]


def test_answer_usage_and_request_body():
    with ScriptedServer([answer("hi", 12, 3)]) as s:
        c = ChatClient(config(s.url, max_tokens=77, temperature=0.5)).complete(MESSAGES)
    assert (c.content, c.prompt_tokens, c.completion_tokens) == ("hi", 12, 3)
    assert not c.estimated_usage
    (request,) = s.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["headers"]["Authorization"] == f"Bearer {SECRET}"
    assert request["body"] == {
        "model": "test-model",
        "messages": MESSAGES,
        "temperature": 0.5,
        "max_tokens": 77,
        "stream": False,
    }


def test_http_500_is_retried_with_exponential_backoff():
    slept: list[float] = []
    with ScriptedServer([{"status": 500}, {"status": 503}, answer("ok")]) as s:
        client = ChatClient(config(s.url, retries=2, backoff_s=0.5), sleep=slept.append)
        assert client.complete(MESSAGES).content == "ok"
    assert len(s.requests) == 3
    assert slept == [0.5, 1.0]  # backoff_s * 2**(k - 1) for retries k = 1, 2


def test_http_500_every_time_fails_after_all_tries_without_the_key():
    with ScriptedServer([{"status": 500}] * 3) as s:
        with pytest.raises(LLMError) as e:
            ChatClient(config(s.url, retries=2)).complete(MESSAGES)
    assert len(s.requests) == 3  # 1 + 2 retries
    message = str(e.value)
    assert message.startswith(f"{s.url}/chat/completions: HTTP 500 ")
    assert message.endswith("(after 3 tries)")
    assert "Bearer <redacted>" in message  # the server echoed the header; the key is hidden
    assert SECRET not in message


def test_http_401_is_not_retried():
    with ScriptedServer([{"status": 401}, answer("never")]) as s:
        with pytest.raises(LLMError, match="HTTP 401") as e:
            ChatClient(config(s.url, retries=3)).complete(MESSAGES)
    assert len(s.requests) == 1
    assert SECRET not in str(e.value)


def test_timeout_is_retried_then_fails():
    with ScriptedServer([{"sleep": 1.0, **answer("late")}] * 2) as s:
        start = time.monotonic()
        with pytest.raises(LLMError, match=r"no answer within 0.2 s \(after 2 tries\)"):
            ChatClient(config(s.url, timeout_s=0.2, retries=1)).complete(MESSAGES)
        assert time.monotonic() - start < 0.9  # two timeouts of 0.2 s, not the server's 1 s
    assert len(s.requests) == 2


def test_timeout_then_answer_succeeds():
    with ScriptedServer([{"sleep": 1.0, **answer("late")}, answer("on time")]) as s:
        c = ChatClient(config(s.url, timeout_s=0.2, retries=1)).complete(MESSAGES)
    assert c.content == "on time"


def test_connection_refused_is_an_llm_error():
    with ScriptedServer([]) as s:
        url = s.url
    with pytest.raises(LLMError, match=r"cannot connect: .* \(after 1 tries\)"):
        ChatClient(config(url, retries=0)).complete(MESSAGES)


def test_missing_endpoint_or_model_is_a_clear_error():
    with pytest.raises(LLMError, match="no LLM base_url is set .*--llm-base-url"):
        ChatClient(LLMConfig(model="m"))
    with pytest.raises(LLMError, match="no LLM model is set .*SOLAR_LLM_MODEL"):
        ChatClient(LLMConfig(base_url="http://127.0.0.1:1/v1"))
