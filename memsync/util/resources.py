"""Files shipped with memsync: memory templates and Claude Code skills.

In the repository they live at the top level (templates/, skills/), where a Claude Code plugin
expects them; a wheel ships them as the packages memsync.templates and memsync.skills. An
editable install or a source checkout reads them from the repository itself.
"""

from __future__ import annotations

from functools import cache
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path


def _root(name: str) -> Traversable:
    try:
        return resources.files(f"memsync.{name}")
    except ModuleNotFoundError:
        return Path(__file__).resolve().parents[2] / name


def template_text(filename: str) -> str:
    return _root("templates").joinpath(filename).read_text(encoding="utf-8")


@cache
def template_lines() -> frozenset[str]:
    """Every line of every memory template, whitespace-normalised: the example lines a
    device replaces with its own when it fills a template in."""
    lines: set[str] = set()
    for entry in _root("templates").iterdir():
        if entry.name.endswith(".md"):
            text = entry.read_text(encoding="utf-8")
            lines.update(" ".join(x.split()) for x in text.splitlines() if x.strip())
    return frozenset(lines)


def skill_texts() -> dict[str, str]:
    """{skill name: SKILL.md text} for every skill memsync installs."""
    skills = {}
    for entry in _root("skills").iterdir():
        skill = entry.joinpath("SKILL.md")
        if entry.is_dir() and skill.is_file():
            skills[entry.name] = skill.read_text(encoding="utf-8")
    return dict(sorted(skills.items()))
