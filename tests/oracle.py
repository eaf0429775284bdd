"""The "no silent loss" oracle: what every structured merge must do, whatever the inputs.

Given base, ours, theirs, the merged result, the conflicts recorded for the file and the
versions kept aside (local history), `check` asserts:

1. every entry either side added or changed since base is in the result, or a conflict was
   recorded and the entry is in a version kept aside;
2. every entry one side removed (or moved to Consumed/Delivered) while the other left it alone
   is gone (from where it was);
3. nothing appears twice;
4. entries changed differently on both sides are never resolved silently: a conflict is
   recorded (for structured files both versions also stay in the result, rule 1);
5. a file whose lines all end in CRLF on both sides still does after the merge.

The oracle has its own idea of an entry, written from the rule in docs/design.md rather than
from memsync/memory/merge/, so the two can disagree:

- fact files (`user_*`, `feedback_*`, ...): the whole file is one entry;
- MEMORY.md: an index line, identified by its link target;
- running_commitments.md: a list item, identified by its `[c-...]` id, placed in Open or
  Delivered (Delivered is final: once either side delivers, the id is Delivered only; both
  sides delivered it with different notes: both notes stay, with a conflict; but an id minted
  on two devices for two promises names two entries: delivering one leaves the other, whose
  text is not the delivered one's nor a reword of its base, Open, with a conflict);
- carry_forward.md: a list item, identified by its text, placed in Pending or Consumed
  (Consumed is final);
- section files and digests: an entry within its heading path, identified by its text (a
  digest's `Session <id>` level is left out: the merge wraps a digest without one);
- frontmatter: each field (list fields: each element); `modified` is left to the merge;
- voice_calibration.md: a dated section one side folded into Rules learned (compaction) is
  read as folded on the base and the other side too: its entries as the rules they make.

A reword is an entry whose text changed but kept most of its words: an entry gone from a side
and a new entry of that side whose words overlap by at least half (twice the shared words over
the words of both) are one entry, the most alike first, wherever they sit and even if the side
also moved it (Pending -> Consumed). An entry replaced by one with other words is a removal
and an addition, never a reword, so the new one can never vanish as "an edit of the old".
Commitment ids and index links are identities of their own: never paired.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from memsync.memory import frontmatter as memory
from memsync.memory import sections
from memsync.memory.memtypes import type_of

_ITEM = re.compile(r"^\s{0,3}(?:[-*+]|\d{1,9}[.)])\s+")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_CID = re.compile(r"\[(c-[A-Za-z0-9_-]+)\]")
_MARKS = re.compile(r"[✓✔✅☑]|\((?:done|delivered)\)", re.I)
_SESSION = re.compile(r"^session\b", re.I)
FINAL = {"commitments": "Delivered", "carry_forward": "Consumed"}
_PLACES = {"commitments": ("Open", "Delivered"), "carry_forward": ("Pending", "Consumed")}


class Entry(NamedTuple):
    ident: str
    where: str  # the section (heading path) it sits in
    text: str  # whitespace-normalised, no line endings


def _norm(text: str) -> str:
    return " ".join(text.replace("\r", "").split())


def _decode(data: bytes) -> tuple[dict[str, Any] | None, str]:
    text = data.decode("utf-8")
    try:
        doc = memory.parse(text)
    except memory.FrontmatterError:
        return None, text
    return doc.meta, doc.body


def kind_of(path: str, *versions: bytes | None) -> str:
    for data in versions:
        if data is None:
            continue
        try:
            meta, _ = _decode(data)
        except UnicodeDecodeError:
            continue
        return type_of(path, meta).merge
    return type_of(path).merge


def _meta_entries(meta: dict[str, Any] | None) -> list[Entry]:
    out = []
    for key, value in (meta or {}).items():
        if key == "modified":
            continue
        if isinstance(value, list):
            out.extend(Entry(f"meta:{key}[{v!r}]", "meta", repr(v)) for v in value)
        elif isinstance(value, dict):
            for sub, v in value.items():
                if sub != "modified":
                    out.append(Entry(f"meta:{key}.{sub}", "meta", str(v)))
        else:
            out.append(Entry(f"meta:{key}", "meta", str(value)))
    return out


def _section_entries(root: sections.Section, path: str = "") -> Iterable[tuple[str, str]]:
    for entry in root.entries:
        if entry.strip():
            yield path, entry
    for child in root.children:
        yield from _section_entries(child, f"{path}>{child.title}" if path else child.title)


def entries(path: str, data: bytes, kind: str | None = None) -> list[Entry]:
    """The entries of one version of a file, in order. An identity held by several entries
    of one version (a line written twice, ids that collided) is told apart by occurrence:
    the second is `ident#1`, and so on."""
    seen: Counter[str] = Counter()
    out = []
    for e in _entries(path, data, kind or kind_of(path, data)):
        n = seen[e.ident]
        seen[e.ident] += 1
        out.append(e if n == 0 or e.where == "meta" else e._replace(ident=f"{e.ident}#{n}"))
    return out


def _entries(path: str, data: bytes, kind: str) -> list[Entry]:
    if kind == "fact":
        return [Entry("file", "", data.decode("utf-8", "replace"))]
    meta, body = _decode(data)
    out = _meta_entries(meta)
    if kind == "index":
        for line in body.splitlines():
            if not _norm(line):
                continue
            m = _LINK.search(line)
            out.append(Entry(f"link:{m.group(1)}" if m else _norm(line), "", _norm(line)))
        return out
    if kind == "lines":
        out.extend(Entry(_norm(x), "", _norm(x)) for x in body.splitlines() if _norm(x))
        return out
    root = sections.parse(body)
    if kind in _PLACES:
        for place in _PLACES[kind]:
            node = root.find(place)
            for entry in node.entries if node else []:
                if not _ITEM.match(entry):
                    continue
                text = _norm(entry)
                m = _CID.search(entry) if kind == "commitments" else None
                ident = m.group(1) if m else _norm(_MARKS.sub("", _ITEM.sub("", entry))).lower()
                out.append(Entry(ident, place, text))
        return out
    for where, entry in _section_entries(root):
        if kind == "digest":  # the merge may wrap a digest in a `## Session <id>` block
            first, _, rest = where.partition(">")
            if _SESSION.match(first):
                where = rest
        text = _norm(entry)
        out.append(Entry(f"{where}|{text}", where, text))
    return out


_DATED = re.compile(r"^(\d{4}-\d{2}-\d{2})(.*)$")
_RULES = "Rules learned"


def _folded_sections(three: Sequence[list[Entry]], headings: Sequence[set[str]]) -> set[str]:
    """voice_calibration.md: the dated sections one side folded (compaction): gone there, and
    that side's Rules learned holds an entry of its date the base's does not. A version holds
    a section by its entries or by its heading alone (an empty section: as the merge reads a
    section held, voice.rebase_folds); `headings` are each version's dated headings."""
    held = [
        {e.where.split(">")[0] for e in v if _DATED.match(e.where.split(">")[0])} | h
        for v, h in zip(three, headings, strict=True)
    ]
    base_rules = {e.text for e in three[0] if e.where == _RULES}

    def folded(side: int, heading: str) -> bool:
        day = heading[:10]
        return heading not in held[side] and any(
            e.where == _RULES and e.text not in base_rules and re.match(rf"- {day}\b", e.text)
            for e in three[side]
        )

    return {
        h
        for h in held[0]
        if any(folded(s, h) for s in (1, 2)) and all(folded(s, h) or h in held[s] for s in (1, 2))
    }


def _as_folded(version: list[Entry], due: set[str]) -> list[Entry]:
    """A version with the entries of the sections in `due` (_folded_sections) read as the
    rules they fold into, `- <date> (<what the heading says after the date / subsection
    path>): <entry>`, so an entry changed there meanwhile is compared with the rules (unless a
    side dropped the section without folding it)."""
    out = []
    for e in version:
        first, *rest = e.where.split(">")
        if first not in due:
            out.append(e)
            continue
        m = _DATED.match(first)
        assert m is not None
        path = [x for x in (m.group(2).strip(" \t-—–:,"), *rest) if x]
        context = f" ({' / '.join(path)})" if path else ""
        text = _norm(f"- {m.group(1)}{context}: {_ITEM.sub('', e.text, count=1)}")
        out.append(Entry(f"{_RULES}|{text}", _RULES, text))
    return out


def _dated_headings(data: bytes) -> set[str]:
    """The dated top-level headings a voice_calibration.md version holds, entries or none."""
    return {c.title for c in sections.parse(_decode(data)[1]).children if c.date}


def _words(text: str) -> Counter[str]:
    return Counter(re.findall(r"\w+", _ITEM.sub("", text).lower()))


RELATED = 0.25  # word overlap from which two promises under one id may be one reworded


def _overlap(a: str, b: str) -> float:
    wa, wb = _words(a), _words(b)
    total = sum(wa.values()) + sum(wb.values())
    return 2 * sum((wa & wb).values()) / total if total else 0.0


def _own_identity(ident: str) -> bool:
    return ident.startswith(("link:", "c-", "meta:")) or ident == "file"


def _pair_rewords(base: list[Entry], side: list[Entry], across: bool) -> list[Entry]:
    """Give a reworded entry its base entry's identity (see the module docstring)."""
    side_ids = {e.ident for e in side}
    base_ids = {e.ident for e in base}
    gone = [b for b in base if b.ident not in side_ids and not _own_identity(b.ident)]
    new = [i for i, e in enumerate(side) if e.ident not in base_ids and not _own_identity(e.ident)]
    pairs = sorted(
        ((_overlap(old.text, side[i].text), n, i) for n, old in enumerate(gone) for i in new),
        key=lambda p: -p[0],
    )
    out = list(side)
    taken_old: set[int] = set()
    taken_new: set[int] = set()
    for score, n, i in pairs:
        if score < 0.5 or n in taken_old or i in taken_new:
            continue
        if gone[n].where != side[i].where and not across:  # moved only between list places
            continue
        taken_old.add(n)
        taken_new.add(i)
        out[i] = side[i]._replace(ident=gone[n].ident)
    return out


def _bare_promise(text: str) -> str:
    return _norm(_MARKS.sub("", _CID.sub("", _ITEM.sub("", text)))).lower()


def _promises(kind: str, base: list[Entry], *sides: list[Entry]) -> dict[str, list[str]]:
    """Commitment ids that name several promises across the three versions (an id minted on
    two devices): id -> its promises' texts (a text and those continuing it are one). As the
    merge reads them: an id the base holds once and a side holds once is that one promise on
    that side, however reworded, unless the two share next to no words (`RELATED`)."""
    if kind != "commitments":
        return {}
    found: dict[str, list[str]] = {}
    for version in (base, *sides):
        for e, text in _bare_texts(version, base):
            reps = found.setdefault(e.ident.split("#")[0], [])
            if not any(text.startswith(r) or r.startswith(text) for r in reps):
                reps.append(text)
    return {k: v for k, v in found.items() if len(v) > 1}


def _bare_texts(items: list[Entry], base: list[Entry]) -> list[tuple[Entry, str]]:
    """Each entry with the promise it stands for: its own text, or, for an id held once here
    and once in the base, the base's text (a reword of that one promise)."""

    def ids(version: list[Entry]) -> Counter[str]:
        return Counter(e.ident.split("#")[0] for e in version)

    in_base = ids(base)
    promise = {
        e.ident.split("#")[0]: _bare_promise(e.text)
        for e in base
        if in_base[e.ident.split("#")[0]] == 1
    }
    here = ids(items)
    out = []
    for e in items:
        cid = e.ident.split("#")[0]
        own = _bare_promise(e.text)
        # held more than once here, an entry with most of the base promise's words is that
        # promise reworded (an earlier merge kept two rewordings side by side)
        overlap = _overlap(own, promise[cid]) if cid in promise else 0.0
        same = cid in promise and ((here[cid] == 1 and overlap >= RELATED) or overlap >= 0.5)
        out.append((e, promise[cid] if same else own))
    return out


def _by_promise(
    items: list[Entry], split: dict[str, list[str]], base: list[Entry]
) -> list[Entry]:
    """Entries of a split id take the identity id~promise, numbered by occurrence again."""
    if not split:
        return items
    pairs = _bare_texts(items, base)
    return _numbered((e, _promise_ident(e.ident.split("#")[0], text, split)) for e, text in pairs)


def _promise_ident(cid: str, text: str, split: dict[str, list[str]]) -> str | None:
    """id~promise for an entry of a split id (a text and those continuing it are one)."""
    if cid not in split:
        return None
    rep = next((r for r in split[cid] if text.startswith(r) or r.startswith(text)), text)
    return f"{cid}~{rep}"


def _numbered(items: Iterable[tuple[Entry, str | None]]) -> list[Entry]:
    """Each entry under its new identity (None: it keeps its own), numbered by occurrence."""
    seen: Counter[str] = Counter()
    out = []
    for e, ident in items:
        if ident is not None:
            n = seen[ident]
            seen[ident] += 1
            e = e._replace(ident=ident if n == 0 else f"{ident}#{n}")
        out.append(e)
    return out


def _like_sides(items: list[Entry], split: dict[str, list[str]], sides: tuple) -> list[Entry]:
    """Result entries of a split id take the identity of the entry with the same promise on a
    side (the result holds the sides' entries, not rewordings of its own)."""
    if not split:
        return items
    known = {
        (e.ident.split("~")[0], _bare_promise(e.text)): e.ident.split("#")[0]
        for e in sides
        if "~" in e.ident
    }

    def ident(e: Entry) -> str | None:
        cid, text = e.ident.split("#")[0], _bare_promise(e.text)
        return known.get((cid, text)) or _promise_ident(cid, text, split)

    return _numbered((e, ident(e)) for e in items)


def _doubled_links(kind: str, *versions: list[Entry]) -> set[str]:
    """Index links listed more than once in some version: a conflict keeps both versions of
    a line, so one link can stand for several lines."""
    if kind != "index":
        return set()
    return {e.ident.split("#")[0] for v in versions for e in v if "#" in e.ident} & {
        e.ident for v in versions for e in v if e.ident.startswith("link:")
    }


def _by_line(items: list[Entry], links: set[str]) -> list[Entry]:
    """Lines of a doubled link take the identity link~text: their order tells nothing (a
    merge may keep either first), so an edit of one is a removal and an addition."""
    if not links:
        return items
    seen: Counter[str] = Counter()
    out = []
    for e in items:
        root = e.ident.split("#")[0]
        if root in links:
            ident = f"{root}~{e.text}"
            n = seen[ident]
            seen[ident] += 1
            e = e._replace(ident=ident if n == 0 else f"{ident}#{n}")
        out.append(e)
    return out


def _one_promise(other: str, done: str, base: list[tuple[str, str]]) -> bool:
    """Whether a commitment left Open (`other`) is the one delivered (`done`) under its id:
    an id minted on two devices for two promises names two entries. Without a base the texts
    are the same (the delivered one may carry a note after it); with one, `done` is a base
    entry delivered and `other` that entry or a reword of it."""

    def continues(a: str, b: str) -> bool:
        return a.startswith(b) or b.startswith(a)

    o, d = _bare_promise(other), _bare_promise(done)
    if not base:
        return continues(d, o)
    return any(
        continues(d, b) and (continues(o, b) or _overlap(o, b) > 0.5)
        for b in (_bare_promise(x) for _, x in base)
    )


def _gone_with_final(kind: str, b: list[Entry], o: list[Entry], t: list[Entry]) -> set[str]:
    """Entries one side added that are more versions of an entry the other side moved to
    Consumed/Delivered while this side changed it (two rewordings an earlier merge kept side
    by side, or a second copy under the same commitment id): they go with it, reported."""
    final = FINAL.get(kind)
    if final is None:
        return set()
    base = {e.ident: e for e in b}
    out = set()
    for e in b:
        if e.where == final:
            continue
        for mine, other in ((o, t), (t, o)):
            moved = [x for x in other if x.ident == e.ident]
            here = [x for x in mine if x.ident == e.ident]
            if not moved or moved[0].where != final or [(x.where, x.text) for x in here] == [
                (e.where, e.text)
            ]:
                continue
            if here and here[0].where == final:
                continue
            for x in mine:
                if x.ident in base or x.ident in {y.ident for y in other} or x.where == final:
                    continue
                same_id = x.ident.split("#")[0] == e.ident and kind == "commitments"
                if same_id or (not _own_identity(x.ident) and _overlap(x.text, e.text) >= 0.5):
                    out.add(x.ident)
    return out


def _values(items: list[Entry], ident: str) -> list[tuple[str, str]]:
    return sorted((e.where, e.text) for e in items if e.ident == ident)


def check(
    path: str,
    base: bytes | None,
    ours: bytes,
    theirs: bytes,
    result: bytes,
    conflicts: Sequence[str] = (),
    kept: Sequence[bytes] = (),
) -> None:
    """Raise AssertionError naming every way `result` lost, resurrected or doubled an entry."""
    problems = violations(path, base, ours, theirs, result, conflicts, kept)
    assert not problems, f"{path}: " + "; ".join(problems)


def violations(
    path: str,
    base: bytes | None,
    ours: bytes,
    theirs: bytes,
    result: bytes,
    conflicts: Sequence[str] = (),
    kept: Sequence[bytes] = (),
) -> list[str]:
    kind = kind_of(path, ours, theirs, base)
    b = b_raw = entries(path, base, kind) if base is not None else []
    o_raw, t_raw = entries(path, ours, kind), entries(path, theirs, kind)
    if base is not None and type_of(path).name == "voice_calibration":
        three = (b_raw, o_raw, t_raw)
        due = _folded_sections(three, [_dated_headings(v) for v in (base, ours, theirs)])
        b = b_raw = _as_folded(b_raw, due)
        o_raw, t_raw = _as_folded(o_raw, due), _as_folded(t_raw, due)
    split = _promises(kind, b, o_raw, t_raw)
    b, o_raw, t_raw = (_by_promise(v, split, b_raw) for v in (b_raw, o_raw, t_raw))
    doubled = _doubled_links(kind, b, o_raw, t_raw)
    b, o_raw, t_raw = _by_line(b, doubled), _by_line(o_raw, doubled), _by_line(t_raw, doubled)
    across = kind in _PLACES
    o, t = _pair_rewords(b, o_raw, across), _pair_rewords(b, t_raw, across)
    # a reworded entry in the result takes the identity its text was given on its side
    renamed = {
        raw.ident: paired.ident
        for raw, paired in (*zip(o_raw, o, strict=True), *zip(t_raw, t, strict=True))
        if raw.ident != paired.ident
    }
    r = _by_line(_like_sides(entries(path, result, kind), split, (*b, *o_raw, *t_raw)), doubled)
    r = [e._replace(ident=renamed.get(e.ident, e.ident)) for e in r]
    kept_entries = [e for data in kept for e in entries(path, data, kind)]
    kept_texts = {(e.where, e.text) for e in kept_entries} | {e.text for e in kept_entries}
    in_result = Counter((e.where, e.text) for e in r)
    result_meta = {e.ident: e.text for e in r if e.where == "meta"}
    final = FINAL.get(kind)
    problems: list[str] = []

    def present(ident: str, value: tuple[str, str]) -> bool:
        if value[0] == "meta":  # a free-text field may be joined with the other side's
            return value[1] in result_meta.get(ident, "")
        return in_result[value] > 0

    def conflict_kept(value: tuple[str, str]) -> bool:
        return bool(conflicts) and (value in kept_texts or value[1] in kept_texts)

    idents = dict.fromkeys(e.ident for e in (*b, *o, *t))
    gone_with = _gone_with_final(kind, b, o, t) if conflicts else set()
    for ident in idents:
        bv, ov, tv = _values(b, ident), _values(o, ident), _values(t, ident)
        rv = _values(r, ident)
        if ident in gone_with and not rv:
            continue  # another version of an entry the other side consumed: reported
        if ov == tv:
            if ov and not all(present(ident, v) for v in ov):
                problems.append(f"{ident!r}: both sides hold {ov}, the result {rv}")
            if not ov and rv:
                problems.append(f"{ident!r}: removed on both sides, back as {rv}")
            continue
        if ov == bv or tv == bv:
            changed = tv if ov == bv else ov
            if not changed:
                if rv:
                    problems.append(f"{ident!r}: removed on one side, untouched on the other, kept")
            elif not all(present(ident, v) or conflict_kept(v) for v in changed):
                problems.append(f"{ident!r}: changed on one side to {changed}, result {rv}")
            elif bv and not ident.startswith("meta:"):
                stale = [v for v in bv if v not in changed and v in rv]
                if stale:
                    problems.append(f"{ident!r}: the old version {stale} is still there")
            continue
        # changed on both sides, differently
        both_final = bool(ov and tv) and all(w == final for w, _ in ov + tv)
        moved_only = [v for v in (ov, tv) if len(bv) == 1 and v == [(final, bv[0][1])]]
        if both_final and len(ov) == len(tv) == 1 and moved_only and bv[0][0] != final:
            # both moved it, one left its words: the other's words are the only change to them
            changed = tv if ov == moved_only[0] else ov
            if not all(present(ident, v) for v in changed):
                problems.append(f"{ident!r}: moved on both sides, reworded on one, result {rv}")
            continue
        if final and any(w == final for w, _ in ov + tv) and not both_final:
            done = [v for v in ov + tv if v[0] == final]
            strays = [  # another promise under the same id: not consumed by this delivery
                v
                for v in ov + tv
                if kind == "commitments"
                and v[0] != final
                # the base's one promise under the id, held once on its side: that promise,
                # however reworded, unless they share next to no words (as the merge reads an
                # id: then the id was minted twice, and the base never held the other)
                and not (
                    len(bv) == 1
                    and len(ov if v in ov else tv) == 1
                    and _overlap(_bare_promise(v[1]), _bare_promise(bv[0][1])) >= RELATED
                )
                and not any(_one_promise(v[1], d[1], bv) for d in done)
            ]
            if not rv or any(w != final and (w, x) not in strays for w, x in rv):
                problems.append(f"{ident!r}: {final} on one side, but the result holds {rv}")
            for value in strays:
                if not present(ident, value) and not conflict_kept(value):
                    problems.append(f"{ident!r}: {value}, another promise under the id, lost")
            if strays and not conflicts:
                problems.append(f"{ident!r}: one id for two promises, no conflict recorded")
            continue
        for value in ov + tv:
            if not present(ident, value) and not conflict_kept(value):
                problems.append(f"{ident!r}: {value} lost (changed on both sides)")
        if ov and tv and not conflicts:
            problems.append(f"{ident!r}: changed differently on both sides, no conflict recorded")
    sides = Counter((e.where, e.text) for e in o) | Counter((e.where, e.text) for e in t)
    for value, count in in_result.items():
        if count > 1 and count > sides[value]:
            problems.append(f"{value} appears {count} times")
    if not conflicts:
        for ident in {e.ident for e in r}:
            vals = _values(r, ident)
            if len(vals) > 1 and len(vals) > max(len(_values(o, ident)), len(_values(t, ident))):
                problems.append(f"{ident!r} appears {len(vals)} times without a conflict")
    if _all_crlf(ours) and _all_crlf(theirs) and not _all_crlf(result):
        problems.append("both sides used CRLF line endings, the result does not")
    return problems


def _all_crlf(data: bytes) -> bool:
    lines = data.splitlines(keepends=True)
    return bool(lines) and all(x.endswith(b"\r\n") for x in lines)
