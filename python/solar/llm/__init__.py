"""The LLM translation agent (docs/llm.md): a model writes Affine Loop IR for a program that
capture cannot handle, or for one operator without a lowering rule; SOLAR checks the answer, runs
it on the same inputs as the framework, compares the outputs, feeds every problem back, and
accepts the program only when it verifies. The answer is data: nothing the model writes is run
as Python.

- ``solar.llm.config``: settings (flags > environment > config file), ``LLMError``.
- ``solar.llm.client``: an OpenAI-compatible chat-completions client (urllib only).
- ``solar.llm.prompt``: the prompts, and extraction of the IR from an answer.
- ``solar.llm.agent``: the loop, the cache of verified translations.
- ``solar.llm.tasks``: what is translated (a model file, one capture node) and its golden data.
- ``solar.llm.analysis``: ``solar analyze --llm`` and ``--llm-fallback``.
- ``solar.llm.cli``: ``solar translate``.

Importing this package imports neither torch nor jax.
"""

from __future__ import annotations

from solar.llm.config import LLMConfig, LLMError, load_config

__all__ = ["LLMConfig", "LLMError", "load_config"]
