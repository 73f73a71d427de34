"""``solar translate MODEL.py -o OUT.ir``, and the LLM options of ``solar analyze`` (docs/llm.md).

``main(argv)`` is the ``translate`` subcommand (registered in ``solar.cli.MODULE_COMMANDS``):
exit 0 with a verified program written, 1 on a user error or when no answer verified (the last
diagnostics and every attempt are printed to stderr). ``add_analyze_arguments`` and
``config_from_args`` are what ``solar analyze`` takes for ``--llm`` and ``--llm-fallback`` (the
analysis itself: ``solar.llm.analysis.run_llm``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from solar.llm.config import LLMConfig, LLMError, load_config


def add_llm_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("LLM agent (docs/llm.md)")
    g.add_argument(
        "--llm-base-url",
        metavar="URL",
        help="OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (env SOLAR_LLM_BASE_URL)",
    )
    g.add_argument("--llm-model", metavar="NAME", help="model name (env SOLAR_LLM_MODEL)")
    g.add_argument(
        "--llm-config",
        metavar="FILE",
        help="TOML settings (default "
        "$SOLAR_LLM_CONFIG or ~/.config/solar/llm.toml); the API key comes from "
        "SOLAR_LLM_API_KEY or this file",
    )
    g.add_argument("--llm-max-attempts", type=int, metavar="N", help="answers per translation")
    g.add_argument("--llm-max-tokens", type=int, metavar="N", help="completion tokens per answer")
    g.add_argument(
        "--llm-token-budget",
        type=int,
        metavar="N",
        help="prompt + completion tokens per translation",
    )
    g.add_argument("--llm-timeout", type=float, metavar="S", help="seconds per HTTP request")
    g.add_argument(
        "--llm-retries",
        type=int,
        metavar="N",
        help="further tries of a request that timed out or got HTTP 429/5xx",
    )
    g.add_argument(
        "--llm-backoff", type=float, metavar="S", help="wait before retry k: S * 2^(k-1) seconds"
    )
    g.add_argument("--llm-temperature", type=float, metavar="T")
    g.add_argument(
        "--llm-cache-dir",
        metavar="DIR",
        help="verified translations (default $SOLAR_CACHE_DIR/llm, else ~/.cache/solar/llm)",
    )
    g.add_argument("--no-llm-cache", action="store_true", help="neither read nor write the cache")
    g.add_argument("--offline", action="store_true", help="use only cached translations")
    g.add_argument(
        "--llm-log", metavar="FILE", help="write every attempt (answers, feedback, tokens) as JSON"
    )


def add_analyze_arguments(p: argparse.ArgumentParser) -> None:
    """The options ``solar analyze`` takes for the agent."""
    p.add_argument(
        "--llm",
        action="store_true",
        help="translate the whole file with the LLM agent instead of capturing it",
    )
    p.add_argument(
        "--llm-fallback",
        action="store_true",
        help="translate each operator without a lowering rule with the LLM agent",
    )
    p.add_argument(
        "--llm-disable-rule",
        action="append",
        default=[],
        metavar="OP",
        help="treat operator OP as having no lowering rule (tests of the fallback)",
    )
    add_llm_arguments(p)


def config_from_args(args: argparse.Namespace) -> LLMConfig:
    flags = {
        "base_url": args.llm_base_url,
        "model": args.llm_model,
        "max_attempts": args.llm_max_attempts,
        "max_tokens": args.llm_max_tokens,
        "token_budget": args.llm_token_budget,
        "timeout_s": args.llm_timeout,
        "retries": args.llm_retries,
        "backoff_s": args.llm_backoff,
        "temperature": args.llm_temperature,
        "cache_dir": args.llm_cache_dir,
        "cache": False if args.no_llm_cache else None,
        "offline": True if args.offline else None,
    }
    return load_config(flags, config_file=args.llm_config)


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _write_log(path: str | None, config: LLMConfig, parts: list[dict]) -> None:
    if not path:
        return
    from solar._files import write_atomic

    data = {"base_url": config.base_url, "model": config.model, "translations": parts}
    write_atomic(path, json.dumps(data, sort_keys=True, indent=1) + "\n")


def _fail(command: str, e: LLMError) -> int:
    from solar.llm.agent import TranslationError

    print(f"solar {command}: error: {e}", file=sys.stderr)
    if isinstance(e, TranslationError) and e.last_feedback:  # the attempts were logged above
        print("last diagnostics:\n" + e.last_feedback, file=sys.stderr)
    return 1


def main(argv: Sequence[str]) -> int:
    p = argparse.ArgumentParser(
        prog="solar translate",
        description="Translate a PyTorch or JAX model file into Affine Loop IR with an LLM, "
        "verified against the framework on the file's inputs (docs/llm.md).",
    )
    p.add_argument(
        "model",
        help="model file: class Model, get_inputs(), get_init_inputs() "
        "(PyTorch), or forward() and get_inputs() (JAX)",
    )
    p.add_argument("-o", "--output", required=True, metavar="OUT.ir", help="the verified program")
    add_llm_arguments(p)
    try:
        args = p.parse_args(list(argv))
    except SystemExit as e:
        return 0 if e.code == 0 else 1
    from solar._files import write_atomic
    from solar.llm.agent import TranslationError, translate
    from solar.llm.tasks import program_task

    config = None
    try:
        from solar._files import check_output_paths

        check_output_paths(args.output, args.llm_log)  # before paying for a translation
        config = config_from_args(args)
        if not config.offline:
            config.require_endpoint()  # before running the model
        task, framework = program_task(args.model)
        t = translate(task, config, log=_progress)
    except TranslationError as e:
        if config is not None:
            _write_log(args.llm_log, config, [_log_part(e.attempts, "failed", str(e))])
        return _fail("translate", e)
    except (ValueError, OSError) as e:  # LLMError, CaptureError, IRError, file errors
        return _fail("translate", LLMError(" ".join(str(e).split())))
    write_atomic(args.output, t.ir)
    _write_log(args.llm_log, config, [_log_part(t.attempts, "verified", t.label)])
    for v in t.verification:
        print(
            f"verified: {v['name']} {v['dtype']}{v['shape']} max_abs_err="
            f"{'undefined' if v['max_abs_err'] is None else format(v['max_abs_err'], '.3g')}"
            f" rtol={v['rtol']:g} atol={v['atol']:g} ok"
        )
    how = (
        "from the cache, verified again"
        if t.cached
        else f"{len(t.attempts)} attempt(s), {t.prompt_tokens} prompt + "
        f"{t.completion_tokens} completion tokens"
    )
    print(f"wrote {args.output} ({framework} program translated by the LLM agent: {how})")
    return 0


def _log_part(attempts: list, status: str, what: str) -> dict:
    from solar.llm.agent import attempts_as_dicts

    return {"status": status, "what": what, "attempts": attempts_as_dicts(attempts)}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
