"""The README's promises about the command line, parsed from README.md and checked against the
real CLI: every command it shows exists and takes the flags it shows; the option table says
exactly which commands take which option; the exit-code table is the one errors.py implements;
the bad-input table (tests/test_cli_table.py) covers every command the README shows."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer.main

from memsync.cli import _register
from memsync.cli.common import app

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")

_register()
CLI = typer.main.get_command(app)


def _options(command: str) -> set[str]:
    params = CLI.commands[command].params  # type: ignore[attr-defined]
    return {o for p in params for o in (*p.opts, *p.secondary_opts) if o.startswith("-")}


def _invocations() -> list[tuple[str, list[str], str]]:
    """(command, flags, the README's text) for every `memsync ...` in code blocks and spans."""
    snippets = []
    for block in re.findall(r"```sh\n(.*?)```", README, flags=re.S):
        snippets += [line.split("  #")[0] for line in block.splitlines()]
    snippets += re.findall(r"`(memsync [^`]+)`", README)
    found = []
    for snippet in snippets:
        at = snippet.find("memsync ")
        if at < 0:
            continue
        # "memsync history FILE / restore FILE [VERSION] / resolve [FILE]"
        for part in snippet[at + len("memsync ") :].split(" / "):
            tokens = part.split()
            if not tokens or tokens[0] in ("hook", "...") or tokens[0].startswith("-"):
                continue
            flags = re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", " ".join(tokens[1:]))
            found.append((tokens[0], flags, snippet.strip()))
    return found


INVOCATIONS = _invocations()
README_COMMANDS = sorted({command for command, _, _ in INVOCATIONS})


def test_the_readme_shows_the_commands() -> None:
    assert len(README_COMMANDS) >= 20, README_COMMANDS


@pytest.mark.parametrize(("command", "flags", "text"), INVOCATIONS, ids=lambda v: str(v)[:40])
def test_every_command_in_the_readme_takes_the_flags_it_shows(command, flags, text) -> None:
    assert command in CLI.commands, f"the README shows `memsync {command}`: {text}"  # type: ignore[attr-defined]
    missing = set(flags) - _options(command)
    assert not missing, f"`memsync {command}` does not take {missing} (README: {text})"


def _option_table() -> list[tuple[set[str], str]]:
    start = README.index("| option | taken by |")
    rows = []
    for line in README[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        options_cell, commands_cell = (c.strip() for c in line.strip("|").split("|"))
        options = {
            o.split()[0]
            for o in re.findall(r"`([^`]+)`", re.sub(r"\([^)]*\)", "", options_cell))
            if o.startswith("-")
        }
        rows.append((options, commands_cell))
    return rows


def test_the_option_table_is_exact() -> None:
    """An option row says which commands take the option: they all do, and (for "every
    command but") the ones it leaves out do not."""
    rows = _option_table()
    assert len(rows) >= 6
    for options, cell in rows:
        named = set(re.findall(r"`([a-z]+)`", re.sub(r"\([^)]*\)", "", cell)))
        unknown = named - set(README_COMMANDS)
        assert not unknown, f"the option table names commands the README does not show: {unknown}"
        if cell.startswith("every command but"):
            takers, others = set(README_COMMANDS) - named, named
        else:
            takers, others = named, set()
        for command in sorted(takers):
            assert options <= _options(command), f"`{command}` lacks {options - _options(command)}"
        for command in sorted(others):
            assert not options & _options(command), f"`{command}` takes {options}, README says not"


def test_the_yes_flag_has_both_spellings_wherever_it_exists() -> None:
    for command in CLI.commands:  # type: ignore[attr-defined]
        opts = _options(command)
        assert ("--yes" in opts) == ("-y" in opts), command


def test_the_exit_code_table_is_what_the_code_uses() -> None:
    from memsync.util.errors import Interrupted, Unreachable, UsageError, UserError

    start = README.index("| exit | meaning |")
    codes = []
    for line in README[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        codes.append(int(line.strip("|").split("|")[0]))
    assert codes == [0, 1, 2, 3, 130]
    assert [UserError.exit_code, UsageError.exit_code, Unreachable.exit_code] == [1, 2, 3]
    assert Interrupted.exit_code == 130


def test_the_bad_input_table_covers_every_readme_command() -> None:
    from tests.test_cli_table import CASES, COMMANDS

    assert sorted(COMMANDS) == README_COMMANDS
    for command in README_COMMANDS:
        assert any(case.argv[0] == command for case in CASES.values()), command


def test_hook_is_handled_before_typer() -> None:
    """`memsync hook ...` is in the README but not a Typer command: entry.py routes it."""
    assert "`memsync hook ...` always exits 0" in " ".join(README.split())
    source = (Path(__file__).resolve().parent.parent / "memsync" / "entry.py").read_text()
    assert 'argv[:1] == ["hook"]' in source
