"""Frontmatter of plain `key: text` lines is read without PyYAML; it must read exactly as
PyYAML's safe loader reads it, and decline everything else."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memsync.memory.frontmatter import FrontmatterError, load_yaml, simple_mapping
from tests.conftest import NO_FCNTL

pytestmark = pytest.mark.skipif(NO_FCNTL, reason="a pure function: the first pass covers it")

# characters YAML treats specially, the bool/null words, digits, dates, unicode, whitespace
TRICKY = ":#&*!|>'\"%@`{}[],?-~=<.+ \t\r\x85\u2028\u00a0_0123456789"
WORDS = ["yes", "No", "TRUE", "off", "null", "Null", "~", "1.5", "2026-11-23", "0x1F", ".inf"]
keys = st.one_of(
    st.sampled_from(["name", "description", "type", "on", "Yes", "a-b", "_k"]),
    st.text(alphabet="abcXYZ_-09:", min_size=1, max_size=6),
)
values = st.one_of(
    st.sampled_from(WORDS),
    st.text(alphabet=st.sampled_from(list(TRICKY) + list("abcdéßЖ")), max_size=12),
    st.text(max_size=12),
)


@settings(max_examples=800, deadline=None)
@given(st.lists(st.tuples(keys, values), min_size=1, max_size=5))
@example([("name", "Role"), ("description", "what the user does"), ("type", "user")])
@example([("0b_", "yes")])
def test_a_simple_mapping_is_what_the_safe_loader_reads(pairs):
    source = "".join(f"{k}: {v}\n" for k, v in pairs)
    fast = simple_mapping(source)
    try:
        loaded = yaml.safe_load(source)
    except (yaml.YAMLError, ValueError):  # ValueError: "0b_", "2026-02-30" resolve but fail
        assert fast is None
        return
    if fast is not None:
        assert isinstance(loaded, dict)
        assert fast == {str(k): v for k, v in loaded.items()}
        assert all(type(v) is str for v in fast.values())


def test_the_usual_frontmatter_takes_the_fast_path_and_the_rest_does_not():
    usual = "name: Role\ndescription: what the user does, and why (2 lines)\ntype: user\n"
    assert simple_mapping(usual) == load_yaml(usual)
    assert simple_mapping(usual) is not None
    for other in (
        "modified: 2026-11-23\n",
        "tags: [a, b]\n",
        "n: yes\n",
        "a: b # c\n",
        "status: on\n",
        "x: 'quoted'\n",
        "list:\n  - one\n",
        "a: b\r\n",
    ):
        assert simple_mapping(other) is None, other


def test_values_yaml_resolves_but_cannot_build_are_refused_in_one_sentence():
    for source in ("modified: 2026-02-30\n", "n: 0b_\n", "0x_: a\n"):
        with pytest.raises(FrontmatterError, match="has a value YAML cannot read"):
            load_yaml(source)


# Claude Code's own shape (docs/claude-code.md): plain lines and one `metadata:` block, with a
# UTC stamp and a session UUID among its values
stamps = st.builds(
    lambda y, mo, d, h, mi, s, frac: f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}{frac}Z",
    st.integers(1, 9999),
    st.integers(0, 13),
    st.integers(0, 32),
    st.integers(0, 24),
    st.integers(0, 60),
    st.integers(0, 61),
    st.sampled_from(["", ".", ".7", ".752", ".123456", ".1234567891"]),
)
uuids = st.one_of(
    st.uuids().map(str),
    st.uuids().map(lambda u: str(u).upper()),
    st.text(alphabet="0123456789abcdef-", min_size=8, max_size=40),
)
plain_keys = st.sampled_from(["name", "type", "node_type", "originSessionId", "modified", "x_1"])
plain = st.from_regex(r"[a-zA-Zé][a-zA-Zé .,()'-]{0,8}[a-z.)]", fullmatch=True)
real_stamps = st.datetimes().map(lambda d: d.isoformat(timespec="milliseconds") + "Z")
good = st.tuples(plain_keys, st.one_of(plain, real_stamps, st.uuids().map(str)))
tricky = st.tuples(keys, st.one_of(values, stamps, uuids))
# mostly lines the fast path takes, now and then one it must decline or read as YAML does
lines = st.lists(st.one_of(good, good, good, tricky), max_size=4)


@settings(max_examples=500, deadline=None)
@given(
    lines,
    st.sampled_from(["metadata", "metadata", "on", "a-b"]),
    lines,
    st.sampled_from(["  ", "  ", " ", "    ", "\t"]),
    lines,
)
@example(
    [("name", "tested"), ("description", "The user likes tests")],
    "metadata",
    [
        ("node_type", "memory"),
        ("type", "feedback"),
        ("originSessionId", "2b587376-1917-43c7-8bee-9a04c019d008"),
        ("modified", "2026-11-24T05:47:59.752Z"),
    ],
    "  ",
    [],
)
def test_claude_codes_frontmatter_is_what_the_safe_loader_reads(before, block, inner, pad, after):
    source = "".join(f"{k}: {v}\n" for k, v in before) + f"{block}:\n"
    source += "".join(f"{pad}{k}: {v}\n" for k, v in inner)
    source += "".join(f"{k}: {v}\n" for k, v in after)
    fast = simple_mapping(source)
    try:
        loaded = yaml.safe_load(source)
    except (yaml.YAMLError, ValueError):
        assert fast is None
        return
    if fast is not None:
        assert isinstance(loaded, dict)
        assert fast == {str(k): v for k, v in loaded.items()}


def test_the_frontmatter_claude_code_writes_takes_the_fast_path():
    written = (
        "name: tested\ndescription: The user likes tests\nmetadata:\n  node_type: memory\n"
        "  type: feedback\n  originSessionId: 2b587376-1917-43c7-8bee-9a04c019d008\n"
        "  modified: 2026-11-24T05:47:59.752Z\n"
    )
    fast = simple_mapping(written)
    assert fast is not None and fast == yaml.safe_load(written)
    assert fast["metadata"]["modified"].tzinfo is not None
    for other in ("metadata:\n", "metadata:\nname: x\n", "a: b\n  c: d\n", "m:\n  a: b\n   c: d\n"):
        assert simple_mapping(other) is None, other
