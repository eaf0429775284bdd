"""Frontmatter of plain `key: text` lines is read without PyYAML; it must read exactly as
PyYAML's safe loader reads it, and decline everything else."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import example, given, settings
from hypothesis import strategies as st

from memsync.memory.frontmatter import FrontmatterError, load_yaml, simple_mapping

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
