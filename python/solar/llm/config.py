"""Settings of the LLM agent: command-line flags over environment variables over a config file
over defaults (docs/llm.md).

The config file is TOML with the keys of ``LLMConfig`` (unknown keys are errors): ``--llm-config
FILE``, else ``$SOLAR_LLM_CONFIG``, else ``$XDG_CONFIG_HOME/solar/llm.toml`` (default
``~/.config/solar/llm.toml``) when it exists. Environment: ``SOLAR_LLM_BASE_URL``,
``SOLAR_LLM_MODEL``, ``SOLAR_LLM_API_KEY``, ``SOLAR_CACHE_DIR``. The API key is never printed:
it is left out of ``repr`` and of every message and file SOLAR writes.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class LLMError(ValueError):
    """A user error of the LLM agent (bad settings, an endpoint that fails, no verified
    translation). The message is one line."""


@dataclass
class LLMConfig:
    base_url: str | None = None  # e.g. https://api.openai.com/v1 (POST {base_url}/chat/completions)
    model: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 300.0  # per HTTP request
    retries: int = 3  # further tries of a request after a timeout, connection error, 429 or 5xx
    backoff_s: float = 2.0  # wait before retry k (1, 2, ...): backoff_s * 2**(k - 1)
    max_attempts: int = 5  # answers per translation (each one checked and run)
    max_tokens: int = 8192  # completion tokens per answer (the request's max_tokens)
    token_budget: int = 400_000  # prompt + completion tokens per translation, all attempts
    temperature: float = 0.0
    cache_dir: str | None = None  # default $SOLAR_CACHE_DIR/llm, else ~/.cache/solar/llm
    cache: bool = True  # read and write verified translations
    offline: bool = False  # only the cache: never call the endpoint

    def cache_path(self) -> str:
        if self.cache_dir:
            return os.path.expanduser(self.cache_dir)
        if os.environ.get("SOLAR_CACHE_DIR"):
            return os.path.join(os.environ["SOLAR_CACHE_DIR"], "llm")
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        return os.path.join(base, "solar", "llm")

    def require_endpoint(self) -> None:
        """Raises LLMError unless an endpoint and a model are set."""
        for key, flag, var in (
            ("base_url", "--llm-base-url", "SOLAR_LLM_BASE_URL"),
            ("model", "--llm-model", "SOLAR_LLM_MODEL"),
        ):
            if not getattr(self, key):
                raise LLMError(
                    f"no LLM {key} is set (use {flag}, {var} or '{key}' in the config file; "
                    "docs/llm.md)"
                )


_KEYS = {f.name: f.type for f in dataclasses.fields(LLMConfig)}
_FILE_KEYS = sorted(k for k in _KEYS if k not in ("offline", "cache"))
_ENV = {
    "base_url": "SOLAR_LLM_BASE_URL",
    "model": "SOLAR_LLM_MODEL",
    "api_key": "SOLAR_LLM_API_KEY",
}


def default_config_file(env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    if env.get("SOLAR_LLM_CONFIG"):
        return env["SOLAR_LLM_CONFIG"]
    base = env.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "solar", "llm.toml")


def load_config(
    flags: Mapping[str, Any] | None = None,
    config_file: str | None = None,
    env: Mapping[str, str] | None = None,
) -> LLMConfig:
    """The settings: ``flags`` (keys of LLMConfig; None means unset) over ``env`` (default
    os.environ) over the config file (``config_file``, which must exist, else the default one
    when it exists) over the defaults."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    path = config_file or default_config_file(env)
    explicit = bool(config_file or env.get("SOLAR_LLM_CONFIG"))
    if explicit or os.path.isfile(path):
        values.update(_read_file(path))
    for key, var in _ENV.items():
        if env.get(var):
            values[key] = env[var]
    for key, value in (flags or {}).items():
        if key not in _KEYS:
            raise LLMError(f"unknown LLM setting '{key}'")
        if value is not None:
            values[key] = value
    config = LLMConfig(**values)
    _validate(config)
    return config


def _read_file(path: str) -> dict[str, Any]:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        raise LLMError(f"{path}: reading a config file needs Python 3.11 or later") from None
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise LLMError(f"{path}: no such LLM config file") from None
    except tomllib.TOMLDecodeError as e:
        raise LLMError(f"{path}: invalid TOML: {e}") from None
    except OSError as e:
        raise LLMError(f"{path}: {e.strerror}") from None
    for key, value in data.items():
        if key not in _FILE_KEYS:
            raise LLMError(f"{path}: unknown key '{key}' (valid: {', '.join(_FILE_KEYS)})")
        expected = _KEYS[key]
        if "float" in expected:
            kinds, word = (int, float), "a number"
        elif "int" in expected:
            kinds, word = int, "an integer"
        else:
            kinds, word = str, "a string"
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise LLMError(f"{path}: '{key}' must be {word}, not {value!r}")
    return data


def _validate(c: LLMConfig) -> None:
    checks = [
        ("timeout_s", c.timeout_s > 0),
        ("retries", c.retries >= 0),
        ("backoff_s", c.backoff_s >= 0),
        ("max_attempts", c.max_attempts >= 1),
        ("max_tokens", c.max_tokens >= 1),
        ("token_budget", c.token_budget >= 1),
        ("temperature", c.temperature >= 0),
    ]
    for name, ok in checks:
        if not ok:
            raise LLMError(f"LLM setting '{name}' is out of range: {getattr(c, name)!r}")
    if c.base_url and not c.base_url.startswith(("http://", "https://")):
        raise LLMError(f"LLM base URL must start with http:// or https://: {c.base_url!r}")
