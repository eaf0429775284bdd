"""The session-start primer: priorities, and a budget it never exceeds whatever memory holds."""

from __future__ import annotations

from datetime import date

from hypothesis import given, settings
from hypothesis import strategies as st

from memsync.claude.primer import HARD_LIMIT, PrimerInput, build
from tests.conftest import write_memory

TODAY = date(2026, 11, 22)


def data(tmp_path, **kw) -> PrimerInput:
    return PrimerInput(memory_dir=tmp_path, project="p", today=TODAY, now=1e9, last_sync=1e9, **kw)


def test_order_attention_sync_carry_forward_digests_commitments(tmp_path):
    write_memory(
        tmp_path, "carry_forward.md", "## Pending\n- raise the trip\n", type="carry_forward"
    )
    write_memory(tmp_path, "session_digest_2026-11-22.md", "## Arcs\n- today's arc\n")
    write_memory(tmp_path, "session_digest_2026-11-20.md", "## Arcs\n- older arc\n")
    write_memory(tmp_path, "session_digest_2026-11-01.md", "## Arcs\n- ancient arc\n")
    write_memory(
        tmp_path,
        "running_commitments.md",
        "## Open\n- [c-1] send notes\n\n## Delivered\n- [c-0] old\n",
    )
    text = build(
        data(tmp_path, conflicts=[{"file": "x.md", "detail": "both changed"}], offline="down")
    )
    order = [
        "attention",
        "x.md",
        "not refreshed",
        "raise the trip",
        "today's arc",
        "older arc",
        "[c-1] send notes",
    ]
    positions = [text.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert "ancient arc" not in text and "[c-0] old" not in text


def test_compact_rule_survives_a_tiny_budget(tmp_path):
    write_memory(tmp_path, "carry_forward.md", "## Pending\n" + "- item\n" * 2000)
    text = build(data(tmp_path, source="compact"), 700)
    assert len(text) <= 700
    assert "re-read MEMORY.md" in text
    assert "cut to fit; read carry_forward.md" in text


_junk = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=3000)


@settings(max_examples=60, deadline=None)
@given(
    pending=st.lists(_junk, max_size=5),
    digest=_junk,
    refused=st.dictionaries(st.text(max_size=50), _junk, max_size=5),
    budget=st.integers(min_value=0, max_value=20_000),
    source=st.sampled_from(["startup", "resume", "clear", "compact"]),
)
def test_primer_never_exceeds_its_budget(
    tmp_path_factory, pending, digest, refused, budget, source
):
    root = tmp_path_factory.mktemp("mem")
    body = "## Pending\n" + "".join(f"- {p}\n" for p in pending)
    (root / "carry_forward.md").write_text(body)
    (root / "session_digest_2026-11-22.md").write_text(digest)
    (root / "running_commitments.md").write_text("## Open\n" + "- x\n" * 3000)
    text = build(data(root, refused=refused, source=source, include_index=True), budget)
    assert len(text) <= min(budget, HARD_LIMIT)


def test_a_digest_the_sync_would_refuse_is_not_read(tmp_path):
    """The primer finds digests by the sync's walk: a FIFO would block the hook, a link
    leading out of the memory dir would show another file's text."""
    import os

    outside = tmp_path / "outside.md"
    outside.write_text("## Arcs\n- not memory\n")
    mem = tmp_path / "mem"
    mem.mkdir()
    (mem / "session_digest_2026-11-22.md").symlink_to(outside)
    os.mkfifo(mem / "session_digest_2026-11-21.md")
    write_memory(mem, "session_digest_2026-11-20.md", "## Arcs\n- older arc\n")
    text = build(data(mem))
    assert "not memory" not in text and "older arc" in text
