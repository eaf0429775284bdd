"""The secret scanner: one planted secret per kind, `allow`, a clean corpus, redaction.

Fake secrets are assembled at runtime from pieces so this file does not itself look like it
holds credentials to other scanners.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memsync.privacy.scanner import KINDS, Finding, mask, redact, scan

CORPUS = Path(__file__).parent / "corpus" / "clean"


def _b64url(obj: dict) -> str:
    raw = json.dumps(obj, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


# 64 bytes -> 86 base64 characters + "==": the shape of an Azure Storage account key.
AZURE_KEY = base64.b64encode(bytes(range(7, 71))).decode()
assert len(AZURE_KEY) == 88 and AZURE_KEY.endswith("==")

PEM_BODY = "MIIEow" + "IBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2ZWaX9c3qJ4mUyWFTn0Xcb1Vd9e8"
PRIVATE_KEY = (
    "-----BEGIN "
    + "RSA PRIVATE KEY-----\n"
    + PEM_BODY
    + "\n"
    + "q1Lkz8Yh2Nw0eR5tP7sU4vX6yZ9aB3cD5fG7hJ9kL1mN3oP5qR7sT9uV1wX3yZ5a\n"
    + "-----END "
    + "RSA PRIVATE KEY-----"
)
CONNECTION_STRING = (
    "DefaultEndpoints"
    + "Protocol=https;AccountName=memsyncprod;"
    + "AccountKey="
    + AZURE_KEY
    + ";EndpointSuffix=core.windows.net"
)
SAS_SIG = "k3Jx9QeVt2Lw8PzR5mN1bY7cF4hA6sD0gU2iO8%2B" + "Tq4Ew%3D"
SAS_URL = (
    "https://memsyncprod.blob.core.windows.net/memory?sv="
    + "2022-11-02&ss=b&srt=co"
    + "&sp=rwdlac&se=2026-05-01T00:00:00Z&st=2026-04-17T00:00:00Z&spr=https&sig="
    + SAS_SIG
)
AWS_ACCESS = "AKIA" + "IOSFODNN7" + "EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"
ANTHROPIC = "sk-" + "ant-api03-" + "Xq7vB2nK9pL4mR8tW1yZ3cF6hJ0dS5aG-Eu_QiO2x"
OPENAI = "sk-" + "proj-" + "T3BlbkFJ" + "q9Wz4XcV7bN2mL5kJ8hG1fD6sA0pO3iU"
GITHUB = "gh" + "p_" + "aB3dE5fG7hJ9kL1mN3oP5qR7sT9uV1wX3yZ5"
SLACK = "xo" + "xb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx"
JWT = ".".join(
    (
        _b64url({"alg": "HS256", "typ": "JWT"}),
        _b64url({"sub": "1234567890", "name": "Sam", "iat": 1713312000}),
        "dozjgNryP4J3jVmNHl0w5N" + "_XgL0n3I9PlFUP0THsR8U",
    )
)
PASSWORD = "Tr0ub4" + "dor&3xQ"
CARD = "4111 " + "1111 1111 1111"
SSN = "219-" + "09-9999"
NINO = "AB " + "12 34 56 C"

# kind -> (the line planted in the memory file, the sensitive text that must never leak)
CASES: dict[str, list[tuple[str, str]]] = {
    "private_key": [(PRIVATE_KEY, PEM_BODY)],
    "azure_connection_string": [(f"- Prod storage: {CONNECTION_STRING}", AZURE_KEY)],
    "azure_account_key": [(f"- Storage account key rotated, new one {AZURE_KEY}", AZURE_KEY)],
    "azure_sas_token": [(f"- Shared upload link: {SAS_URL}", SAS_SIG)],
    "aws_access_key": [(f"- Deploy user key id {AWS_ACCESS} (us-east-1)", AWS_ACCESS)],
    "aws_secret_key": [(f"- aws_secret_access_key = {AWS_SECRET}", AWS_SECRET)],
    "anthropic_key": [(f"- Test key for the eval harness: {ANTHROPIC}", ANTHROPIC)],
    "openai_key": [(f"- Their OpenAI key is {OPENAI} for the comparison", OPENAI)],
    "github_token": [(f"- CI token `{GITHUB}` expires in May", GITHUB)],
    "slack_token": [(f"- Bot token for #memsync-alerts: {SLACK}", SLACK)],
    "jwt": [(f"- Session cookie from the bug report: {JWT}", JWT)],
    "password": [
        (f"- Staging db password: {PASSWORD}", PASSWORD),
        (f'- config had client_secret="{PASSWORD}" checked in', PASSWORD),
    ],
    "card_number": [
        (f"- Paid for the team plan with {CARD}, expiry 09/28", CARD),
        ("- Amex on file: 3782 822463 " + "10005", "822463"),
    ],
    "national_id": [
        (f"- SSN for the payroll form: {SSN}", SSN),
        (f"- UK National Insurance number {NINO}", NINO),
    ],
}
PLANT_LINE = 9


def memory_file(planted: str) -> str:
    """A normal memory file with `planted` starting on line PLANT_LINE."""
    return "\n".join(
        [
            "---",
            "name: Project notes",
            "description: Facts about the deploy setup",
            "type: project",
            "---",
            "",
            "- Released 0.3.0 on 2026-04-10 from commit 85c8d78.",
            "- Sam owns the api-key-rotation runbook; Priya reviews it.",
            planted,
            "- The password reset flow ships in 0.3.1.",
            "- Token budget stays at 200k per day.",
            "",
        ]
    )


CASE_PARAMS = [
    pytest.param(kind, planted, needle, id=f"{kind}-{i}")
    for kind, cases in CASES.items()
    for i, (planted, needle) in enumerate(cases)
]


def test_every_kind_has_a_case() -> None:
    assert set(CASES) == set(KINDS)


@pytest.mark.parametrize(("kind", "planted", "needle"), CASE_PARAMS)
def test_planted_secret_is_found_on_its_line(kind: str, planted: str, needle: str) -> None:
    text = memory_file(planted)
    findings = scan(text)
    assert [(f.kind, f.line) for f in findings] == [(kind, PLANT_LINE)]
    (finding,) = findings
    span = text[finding.start : finding.end]
    assert needle in span or span in needle
    line_start = text.rfind("\n", 0, finding.start) + 1
    assert finding.column == finding.start - line_start + 1


@pytest.mark.parametrize(("kind", "planted", "needle"), CASE_PARAMS)
def test_reports_never_contain_the_secret(kind: str, planted: str, needle: str) -> None:
    text = memory_file(planted)
    (finding,) = scan(text)
    span = text[finding.start : finding.end]
    for report in (finding.describe(), str(finding), repr(finding)):
        assert needle not in report
        assert span not in report
    assert f"line {PLANT_LINE}" in finding.describe()
    assert kind in finding.describe()
    for cleaned in (redact(text), mask(text)):
        assert needle not in cleaned
        assert scan(cleaned) == []
    assert f"[REDACTED:{kind}]" in redact(text)


@pytest.mark.parametrize(("kind", "planted", "needle"), CASE_PARAMS)
def test_allow_suppresses_only_that_kind(kind: str, planted: str, needle: str) -> None:
    other_kind = "aws_access_key" if kind != "aws_access_key" else "github_token"
    other_planted, _ = CASES[other_kind][0]
    text = memory_file(planted) + other_planted + "\n"
    assert {f.kind for f in scan(text)} == {kind, other_kind}
    assert [f.kind for f in scan(text, allow={kind})] == [other_kind]
    assert [f.kind for f in scan(text, allow=[other_kind])] == [kind]
    assert scan(text, allow=set(KINDS)) == []
    assert needle in redact(text, allow={kind})


@pytest.mark.parametrize(
    "number",
    [
        "4111 1111 1111 1112",  # Visa prefix, fails Luhn
        "4111-1111-1111-1113",
        "5500 0000 0000 0005",  # Mastercard prefix, fails Luhn
        "1234 5678 9012 3452",  # passes Luhn, but no issuer uses the prefix
        "0000 0000 0000 0000",
    ],
)
def test_card_like_numbers_failing_luhn_or_brand_are_ignored(number: str) -> None:
    assert scan(memory_file(f"- Ticket reference {number}, opened 2026-04-17")) == []


def test_valid_card_without_spaces_is_found() -> None:
    findings = scan(memory_file("- card 4111" + "111111111111 on file"))
    assert [(f.kind, f.line) for f in findings] == [("card_number", PLANT_LINE)]


@pytest.mark.parametrize(
    "line",
    [
        "- order 12 4111 1111 1111 1111 was refunded",  # a number just before the card
        "- card 4111 1111 1111 1111 22 times declined",  # a number just after it
        "- ghp-less note 5 4111-1111-1111-1111",
    ],
)
def test_card_next_to_other_numbers_is_still_found(line: str) -> None:
    findings = scan(memory_file(line))
    assert [(f.kind, f.line) for f in findings] == [("card_number", PLANT_LINE)]
    text = memory_file(line)
    span = text[findings[0].start : findings[0].end]
    assert span.replace("-", " ") == "4111 1111 1111 1111"


def test_finding_fields() -> None:
    f = Finding("jwt", 3, 7, 20, 40)
    assert f.describe() == "line 3: JSON Web Token (jwt)"
    assert Finding("mystery", 1, 1).describe() == "line 1: mystery (mystery)"


# --- clean corpus ---------------------------------------------------------------------------

CORPUS_FILES = sorted(CORPUS.glob("*.md"))


def test_corpus_is_big_enough() -> None:
    assert len(CORPUS_FILES) >= 8


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_clean_corpus_has_no_findings(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    findings = scan(text)
    assert findings == [], [f.describe() for f in findings]
    assert redact(text) == text


@pytest.mark.parametrize(
    "line",
    [
        "- The secret: Nobody reads the summary past the first line.",
        "- Password: Whatever the user typed is hashed, never stored.",
        "- Ran it from pwd: /home/sam/projects/memsync and it worked.",
        '- secret = os.getenv("MEMSYNC_SECRET") in the old config loader.',
        "- password: <your password here>; api_key: ${API_KEY}; secret: changeme",
        "- access_token: [REDACTED:password] in the pasted log",
        "- The password reset flow sends a 6-digit code; token budget: 200000.",
        "- Rotated per api-key-rotation; see client-secret-rotation.md.",
    ],
)
def test_prose_about_secrets_is_not_a_finding(line: str) -> None:
    assert scan(memory_file(line)) == []


# --- properties -----------------------------------------------------------------------------

WORDS = [
    "the", "Sam", "merged", "85c8d78", "on", "2026-04-17", "password", "reset", "flow",
    "token", "budget", "api-key-rotation", "v0.3.1", "PR", "#412", "secret", "key",
    "3f2b8c1e-9a4d-4e7b-b1c2-5d6e7f8a9b0c", "2026-04-17T09:15:00Z", "1,204", "files",
    "https://github.com/example/memsync", "9fceb02d0ae598e95dc970b74767f19372d61af8",
    "[c-2026-04-17-1]", "ticket", "555-0142", "-", "**Why:**", "`memsync", "sync`",
]  # fmt: skip
SECRETS = [
    PRIVATE_KEY, CONNECTION_STRING, AZURE_KEY, SAS_URL, AWS_ACCESS,
    f"aws_secret_access_key={AWS_SECRET}", ANTHROPIC, OPENAI, GITHUB, SLACK, JWT,
    f"password: {PASSWORD}", f"client_secret={PASSWORD}", CARD, SSN, NINO,
]  # fmt: skip
SEPARATORS = [" ", "\n", ", ", "; ", "\n- ", " (", ") "]

ordinary_text = st.lists(
    st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=40
).map(lambda parts: "".join(word + sep for word, sep in parts))

mixed_text = st.lists(
    st.tuples(
        st.one_of(st.sampled_from(WORDS), st.sampled_from(SECRETS)),
        st.sampled_from(SEPARATORS),
    ),
    max_size=30,
).map(lambda parts: "".join(token + sep for token, sep in parts))


@settings(max_examples=300, deadline=None)
@given(mixed_text)
def test_redacted_text_has_no_findings(text: str) -> None:
    cleaned = redact(text)
    assert scan(cleaned) == []
    assert redact(cleaned) == cleaned
    for secret in (AWS_ACCESS, ANTHROPIC, OPENAI, GITHUB, SLACK, JWT, PASSWORD, AZURE_KEY):
        assert secret not in cleaned


@settings(max_examples=300, deadline=None)
@given(ordinary_text)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert scan(text) == []
    assert redact(text) == text


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_redact_is_identity_without_findings(text: str) -> None:
    if not scan(text):
        assert redact(text) == text
    assert scan(redact(text)) == []


def _scan_without_gates(text: str) -> list[Finding]:
    """The scan as if every cheap pre-check passed: every pattern runs over all the text."""
    from memsync.privacy import scanner

    saved = scanner._NEEDLES, scanner._PASSWORD_NEEDLES, scanner._DIGIT_SHAPES
    scanner._NEEDLES = dict.fromkeys(saved[0], ("",))
    scanner._PASSWORD_NEEDLES = ("",)
    scanner._DIGIT_SHAPES = re.compile("")
    try:
        return scan(text)
    finally:
        scanner._NEEDLES, scanner._PASSWORD_NEEDLES, scanner._DIGIT_SHAPES = saved


digit_soup = st.text(alphabet="0123456789 -ABCDKeys=:", max_size=80)
# real test card numbers of the shortest lengths their brands use, ids, and glue between them
number_soup = st.lists(
    st.sampled_from(["4222222222222", "3782 822463 10005", "30569309025904", SSN, NINO])
    | st.sampled_from(["1", "07", " ", "-", "x", "\n"]),
    max_size=8,
).map("".join)


@settings(max_examples=400, deadline=None)
@given(
    st.one_of(
        mixed_text, mixed_text.map(str.upper), mixed_text.map(str.swapcase), digit_soup, number_soup
    )
)
def test_the_cheap_pre_checks_never_hide_a_finding(text: str) -> None:
    """Each pattern is skipped when text lacks a substring all its matches contain; skipping
    must change nothing, whatever the case or the digits."""
    assert scan(text) == _scan_without_gates(text)


# --- the card search is linear, and finds what the plain window-by-window search finds -------


def _cards_reference(text: str) -> list[tuple[int, int]]:
    """Every window of up to 19 digit groups, longest first, as the scanner used to search
    (quadratic in a long run of groups: ~15 s on a megabyte of them)."""
    from memsync.privacy.scanner import _CARD, _brand_lengths, _luhn

    found = []
    for m in _CARD.finditer(text):
        groups = [(g.start(), g.end()) for g in re.finditer(r"\d+", m.group())]
        seps = [m.group()[e] for _, e in groups[:-1]]
        i = 0
        while i < len(groups):
            for j in range(min(len(groups), i + 19), i, -1):
                if len(set(seps[i : j - 1])) > 1:
                    continue
                start, end = m.start() + groups[i][0], m.start() + groups[j - 1][1]
                digits = re.sub(r"[ -]", "", text[start:end])
                plausible = 13 <= len(digits) <= 19 and len(set(digits)) > 1
                if plausible and len(digits) in _brand_lengths(digits[:4]) and _luhn(digits):
                    found.append((start, end))
                    i = j - 1
                    break
            i += 1
    return found


digit_runs = st.lists(
    st.tuples(
        st.sampled_from(["4111", "1111", "4", "1", "5", "55", "378", "3", "6011", "0", "12"]),
        st.sampled_from([" ", "-", "\n", "x "]),
    ),
    max_size=40,
).map(lambda parts: "".join(g + s for g, s in parts))


@given(digit_runs)
@settings(max_examples=300)
def test_card_search_matches_the_window_by_window_search(text: str) -> None:
    from memsync.privacy.scanner import _CARD, _cards

    ours = [(s, e) for m in _CARD.finditer(text) for _, s, e in _cards(m)]
    assert ours == _cards_reference(text)

