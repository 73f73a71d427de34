"""The help of every Python command of ``solar`` (``solar.cli.PYTHON_COMMANDS`` and
``MODULE_COMMANDS``, so a new command is covered as it is registered): every option says what it
does, and a command with many options shows them in titled groups (``solar analyze --help``:
input, device, fidelity, verification, ...), none left in argparse's untitled "options" group
but ``-h``. Each parser is taken in-process, from the command's own ``main`` (``parse_args``
stopped before anything runs), so nothing is captured or measured."""

from __future__ import annotations

import argparse

import pytest

from solar import cli

COMMANDS = (*cli.PYTHON_COMMANDS, *cli.MODULE_COMMANDS)
# A command with more options than this shows every one of them in a titled group.
GROUPED_ABOVE = 8


def parser_of(command: str, monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The parser ``solar COMMAND`` builds: the first one whose ``parse_args`` is called."""
    seen: list[argparse.ArgumentParser] = []

    def stop(self: argparse.ArgumentParser, *args: object, **kwargs: object) -> None:
        seen.append(self)
        raise SystemExit(0)

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", stop)
    assert cli.main([command, "--help"]) == 0
    assert seen, f"solar {command} built no parser"
    return seen[0]


def options_of(p: argparse.ArgumentParser) -> list[argparse.Action]:
    """The parser's arguments but ``-h`` and those hidden from the help."""
    return [
        a
        for a in p._actions
        if not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS
    ]


def untitled(p: argparse.ArgumentParser) -> list[str]:
    """The arguments in argparse's own groups ("options", "positional arguments"), but -h."""
    return [
        a.dest
        for group in (p._positionals, p._optionals)
        for a in group._group_actions
        if not isinstance(a, argparse._HelpAction)
    ]


def titled_groups(p: argparse.ArgumentParser) -> list[str]:
    return [
        g.title
        for g in p._action_groups
        if g not in (p._positionals, p._optionals) and g._group_actions
    ]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_says_what_it_does(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    p = parser_of(command, monkeypatch)
    undescribed = [
        a.option_strings[-1] if a.option_strings else a.dest
        for a in options_of(p)
        if not (a.help or "").strip()
    ]
    assert undescribed == [], f"solar {command}: options without a help text"


@pytest.mark.parametrize("command", COMMANDS)
def test_many_options_are_grouped(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    p = parser_of(command, monkeypatch)
    if len(options_of(p)) > GROUPED_ABOVE:
        assert len(titled_groups(p)) >= 2, f"solar {command}: {titled_groups(p)}"
        assert untitled(p) == [], f"solar {command}: outside a titled group"


def test_analyze_help_has_titled_groups(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    p = parser_of("analyze", monkeypatch)
    titles = titled_groups(p)
    assert len(titles) >= 5, titles
    assert untitled(p) == []
    monkeypatch.undo()
    assert cli.main(["help", "analyze"]) == 0  # the same as solar analyze --help
    text = capsys.readouterr().out
    for title in titles:
        assert f"\n{title}:\n" in text


@pytest.mark.parametrize("command", COMMANDS)
def test_help_prints(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: solar {command}")
