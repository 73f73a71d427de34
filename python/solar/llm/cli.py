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

LLM_GROUP = "LLM agent (docs/llm.md)"


def add_llm_arguments(g: argparse._ActionsContainer) -> None:
    """The agent's settings (``solar.llm.config``: a flag over the environment over the config
    file over the default), on ``g``: a parser or one of its argument groups."""
    d = LLMConfig
    g.add_argument(
        "--llm-base-url",
        metavar="URL",
        help="OpenAI-compatible endpoint, e.g. http://localhost:11434/v1 (default "
        "$SOLAR_LLM_BASE_URL, else the config file's base_url)",
    )
    g.add_argument(
        "--llm-model",
        metavar="NAME",
        help="the endpoint's model name (default $SOLAR_LLM_MODEL, else the config file's model)",
    )
    g.add_argument(
        "--llm-config",
        metavar="FILE",
        help="TOML settings (default "
        "$SOLAR_LLM_CONFIG or ~/.config/solar/llm.toml); the API key comes from "
        "SOLAR_LLM_API_KEY or this file",
    )
    g.add_argument(
        "--llm-max-attempts",
        type=int,
        metavar="N",
        help=f"answers per translation, each checked and run (default {d.max_attempts})",
    )
    g.add_argument(
        "--llm-max-tokens",
        type=int,
        metavar="N",
        help=f"completion tokens per answer (default {d.max_tokens})",
    )
    g.add_argument(
        "--llm-token-budget",
        type=int,
        metavar="N",
        help=f"prompt + completion tokens per translation, all attempts (default {d.token_budget})",
    )
    g.add_argument(
        "--llm-timeout",
        type=float,
        metavar="S",
        help=f"seconds per HTTP request (default {d.timeout_s:g})",
    )
    g.add_argument(
        "--llm-retries",
        type=int,
        metavar="N",
        help=f"further tries of a request that timed out or got HTTP 429/5xx (default {d.retries})",
    )
    g.add_argument(
        "--llm-backoff",
        type=float,
        metavar="S",
        help=f"wait before retry k: S * 2^(k-1) seconds (default {d.backoff_s:g})",
    )
    g.add_argument(
        "--llm-temperature",
        type=float,
        metavar="T",
        help=f"the sampling temperature of each request (default {d.temperature:g}: the most "
        "likely answer)",
    )
    g.add_argument(
        "--llm-cache-dir",
        metavar="DIR",
        help="verified translations (default $SOLAR_CACHE_DIR/llm, else ~/.cache/solar/llm)",
    )
    g.add_argument(
        "--no-llm-cache",
        action="store_true",
        help="neither read nor write the cache of verified translations",
    )
    g.add_argument(
        "--offline",
        action="store_true",
        help="use only cached translations: never call the endpoint",
    )
    g.add_argument(
        "--llm-log", metavar="FILE", help="write every attempt (answers, feedback, tokens) as JSON"
    )


def add_analyze_arguments(p: argparse.ArgumentParser) -> None:
    """The options ``solar analyze`` takes for the agent, in their own group."""
    g = p.add_argument_group(LLM_GROUP)
    g.add_argument(
        "--llm",
        action="store_true",
        help="translate the whole file with the LLM agent instead of capturing it",
    )
    g.add_argument(
        "--llm-fallback",
        action="store_true",
        help="translate each operator without a lowering rule with the LLM agent",
    )
    g.add_argument(
        "--llm-disable-rule",
        action="append",
        default=[],
        metavar="OP",
        help="with --llm-fallback: treat operator OP as having no lowering rule (repeatable; "
        "tests of the fallback)",
    )
    add_llm_arguments(g)


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
    g = p.add_argument_group("input and output")
    g.add_argument(
        "model",
        help="model file: class Model, get_inputs(), get_init_inputs() "
        "(PyTorch), or forward() and get_inputs() (JAX)",
    )
    g.add_argument(
        "-o", "--output", required=True, metavar="OUT.ir", help="write the verified program here"
    )
    add_llm_arguments(p.add_argument_group(LLM_GROUP))
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
