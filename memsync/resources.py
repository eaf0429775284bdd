"""Files shipped with memsync: memory templates and Claude Code skills.

In the repository they live at the top level (templates/, skills/); installed, they are the
packages memsync.templates and memsync.skills.
"""

from __future__ import annotations

from importlib import resources


def template_names() -> list[str]:
    """Template file names, e.g. ['MEMORY.md', 'callbacks.md', ...]."""
    root = resources.files("memsync.templates")
    return sorted(p.name for p in root.iterdir() if p.name.endswith(".md"))


def template_text(filename: str) -> str:
    return resources.files("memsync.templates").joinpath(filename).read_text(encoding="utf-8")


def skill_texts() -> dict[str, str]:
    """{skill name: SKILL.md text} for every skill memsync installs."""
    root = resources.files("memsync.skills")
    skills = {}
    for entry in root.iterdir():
        skill = entry.joinpath("SKILL.md")
        if entry.is_dir() and skill.is_file():
            skills[entry.name] = skill.read_text(encoding="utf-8")
    return dict(sorted(skills.items()))
