"""`memsync compact` and `memsync schedule` through the CLI, on two devices."""

from __future__ import annotations

import json
import re
import stat

from tests.devices import make_device


def digest(day: str, arc: str) -> str:
    return f"## Arcs\n- {arc}\n\n## Open threads\n- thread from {day}\n"


def test_compact_dry_run_then_apply_then_nothing_left(tmp_path):
    (tmp_path / "remote").mkdir()
    a = make_device(tmp_path, "a", (tmp_path / "remote").as_uri())
    b = make_device(tmp_path, "b", (tmp_path / "remote").as_uri())
    for day in ("2026-10-05", "2026-10-06", "2026-10-07"):
        a.write(f"session_digest_{day}.md", digest(day, f"arc of {day}"), type="session_digest")
    a.run("push")
    plan = json.loads(a.run("compact", "--dry-run", "--json", "--now", "2026-11-22").stdout)
    assert plan["version"] == 1 and plan["data"]["counts"]["delete"] == 3
    assert all(item["reason"] for item in plan["data"]["actions"])
    assert sorted(a.files()) == [
        f"session_digest_{d}.md" for d in ("2026-10-05", "2026-10-06", "2026-10-07")
    ]

    # another device writes a digest meanwhile; compaction syncs first, so it is folded in too
    b.run("pull")
    b.write(
        "session_digest_2026-10-08.md", digest("2026-10-08", "arc from b"), type="session_digest"
    )
    b.run("push")
    a.run("compact", "--now", "2026-11-22")
    names = sorted(a.files())
    assert not any(n.startswith("session_digest_2026-10-0") for n in names), names
    # roll-ups are written in Claude Code's shape: a slug name, the rest under `metadata:`
    rollups = [n for n in names if re.fullmatch(r"session_digest_\d{4}-(W\d{2}|\d{2})\.md", n)]
    assert rollups, names
    for n in rollups:
        head = a.memory.joinpath(n).read_text().split("\n---\n")[0]
        label = n.removeprefix("session_digest_").removesuffix(".md").lower()
        assert f"\nname: session-digest-{label}\n" in head, head
        assert "\nmetadata:\n  node_type: memory\n" in head and "  type: session_digest" in head
        assert "\ntype:" not in head and "\nperiod:" not in head, head
    text = "".join(a.memory.joinpath(n).read_text() for n in names)
    for arc in ("arc of 2026-10-05", "arc of 2026-10-07", "arc from b", "thread from 2026-10-06"):
        assert arc in text
    assert "Nothing to compact." in a.run("compact", "--now", "2026-11-22").stdout
    b.run("sync")
    assert b.files() == a.files()


def test_compact_rejects_a_bad_date(tmp_path):
    (tmp_path / "remote").mkdir()
    a = make_device(tmp_path, "a", (tmp_path / "remote").as_uri())
    assert "--now" in a.run("compact", "--now", "yesterday", check=2).stderr


def test_schedule_with_cron_is_idempotent_and_removable(tmp_path):
    table = tmp_path / "crontab.txt"
    table.write_text("0 * * * * backup.sh\n")
    fake = tmp_path / "crontab"
    # a stand-in for crontab(1): `-l` prints the table, `-` replaces it from stdin
    fake.write_text(f'#!/bin/sh\nif [ "$1" = -l ]; then cat {table}; else cat > {table}; fi\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    (tmp_path / "remote").mkdir()
    a = make_device(tmp_path, "a", (tmp_path / "remote").as_uri(), MEMSYNC_CRONTAB=str(fake))
    assert "Scheduled" in a.run("schedule", "install").stdout
    assert "Already scheduled" in a.run("schedule", "install").stdout
    lines = table.read_text().splitlines()
    assert lines[0] == "0 * * * * backup.sh" and len(lines) == 2
    assert " compact --home " in lines[1] and " --memory-dir " in lines[1]
    assert "e2e-project" in lines[1]
    assert "e2e-project" in a.run("schedule", "show").stdout
    assert "Removed" in a.run("schedule", "remove").stdout
    assert table.read_text() == "0 * * * * backup.sh\n"


def test_schedule_without_cron_writes_a_systemd_user_timer(tmp_path, monkeypatch):
    from memsync import config, schedule

    monkeypatch.setattr(schedule, "_crontab", lambda: None)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    ctx = config.resolve(memory_dir=tmp_path / "mem", project="proj")
    assert schedule.install(ctx)[0] is True
    assert schedule.install(ctx)[0] is False
    units = tmp_path / "xdg" / "systemd" / "user"
    assert "OnCalendar" in (units / "memsync-compact-proj.timer").read_text()
    assert '"compact" "--home"' in (units / "memsync-compact-proj.service").read_text()
    assert [e.project for e in schedule.show(ctx)] == ["proj"]
    assert len(schedule.remove(ctx)) == 2
    assert not units.exists()  # the folder install made goes with the last unit
