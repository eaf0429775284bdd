"""Find secrets and personal data in memory text before it leaves the machine.

Findings name the kind, line and column — never the matched text. False positives matter as
much as misses: memory is full of dates, commit hashes, UUIDs and prose about passwords, so
each pattern is anchored on a structure real secrets have (a vendor prefix, a checksum, a
key=value shape with a secret-looking value).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

KINDS: dict[str, str] = {
    "private_key": "PEM private key",
    "azure_connection_string": "Azure Storage connection string",
    "azure_account_key": "Azure Storage account key",
    "azure_sas_token": "Azure SAS token",
    "aws_access_key": "AWS access key",
    "aws_secret_key": "AWS secret key",
    "anthropic_key": "Anthropic API key",
    "openai_key": "OpenAI-style API key",
    "github_token": "GitHub token",
    "slack_token": "Slack token",
    "jwt": "JSON Web Token",
    "password": "password or secret value",
    "card_number": "payment card number",
    "national_id": "national id number",
}


class Finding(NamedTuple):
    kind: str
    line: int  # 1-based
    column: int  # 1-based
    start: int = 0  # offsets into the scanned text, for redaction
    end: int = 0

    def describe(self) -> str:
        return f"line {self.line}: {KINDS.get(self.kind, self.kind)} ({self.kind})"


_B64 = r"A-Za-z0-9+/"
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    (
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
            r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|[\s\S]*\Z)"
        ),
    ),
    (
        "azure_connection_string",
        re.compile(
            r"(?:DefaultEndpointsProtocol|BlobEndpoint|AccountName)=[^\s;]+;"
            r"(?:[A-Za-z]+=[^\s;]*;)*?(?:AccountKey|SharedAccessSignature)=[^\s;]+"
        ),
    ),
    ("azure_account_key", re.compile(rf"(?<![{_B64}])[{_B64}]{{86}}==(?![{_B64}=])")),
    (
        "azure_sas_token",
        re.compile(
            r"(?<![\w])(?=[^\s\"'<>]*\bsv=\d{4}-\d{2}-\d{2})[^\s\"'<>]*\bsig=[\w%+/=-]{16,}"
        ),
    ),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b")),
    (
        "aws_secret_key",
        re.compile(
            r"(?i)\b(?:aws_?)?secret_?access_?key\b[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])"
        ),
    ),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}")),
    ("openai_key", re.compile(r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}")),
    ("github_token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{22,}")),
    ("slack_token", re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
]

_PASSWORD = re.compile(
    r"(?i)\b(?P<label>password|passwd|pwd|passphrase|secret|client[_-]?secret|api[_-]?key"
    r"|access[_-]?token|auth[_-]?token)\b[\"']?\s*[:=]\s*[\"'`]?(?P<value>[^\s\"'`]{6,})"
)
_PLACEHOLDER = re.compile(
    r"(?i)^(?:<.*>|\[.*\]|\{.*\}|\$\{?\w+\}?|%\w+%|\*+|x{3,}|\.{3,}|none|null|nil|undefined"
    r"|changeme|change_me|example\w*|your[_-]?\w*|redacted|placeholder|secret|password"
    r"|\*\*\*.*|os\.(?:environ|getenv).*|env\(.*)$"
)
_KEBAB_WORDS = re.compile(r"^[a-z]+(?:[-_][a-z]+)*[.,;:!?]?$")
_PATH = re.compile(r"^(?:~|\.{1,2})?(?:/[a-z0-9._-]+)+/?$")  # pwd: /home/sam/projects
_PROSE = re.compile(r"[A-Z][a-z]+ +[a-z]")  # "The secret: Nobody reads the summary"

_CARD = re.compile(r"(?<![\d-])\d+(?:[ -]\d+)*(?![\d-])")  # a run of digit groups
_SSN = re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])")
_NINO = re.compile(
    r"\b(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"
    r" ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b"
)


_DOUBLED = {str(d): (d * 2 - 9 if d > 4 else d * 2) for d in range(10)}


def _luhn(digits: str) -> bool:
    odd = sum(map(int, digits[-1::-2]))
    even = sum(map(_DOUBLED.__getitem__, digits[-2::-2]))
    return (odd + even) % 10 == 0


def _brand_lengths(head: str) -> tuple[int, ...]:
    """The lengths a card number starting with these (4) digits may have: an issuer's prefix
    and the lengths that issuer uses; none for a number no issuer starts with."""
    if head[0] == "4":
        return (19, 16, 13)
    if 51 <= int(head[:2]) <= 55 or 2221 <= int(head[:4]) <= 2720:
        return (16,)
    if head[:2] in ("34", "37"):
        return (15,)
    if head.startswith(("6011", "65")) or 644 <= int(head[:3]) <= 649 or head[:2] == "35":
        return (19, 18, 17, 16)
    if head[:2] in ("30", "36", "38"):
        return (14,)
    return ()


def _looks_secret(value: str) -> bool:
    value = value.rstrip(".,;:)")
    if len(value) < 6 or _PLACEHOLDER.match(value) or _KEBAB_WORDS.match(value):
        return False
    if _PATH.match(value):
        return False
    if value.startswith(("http://", "https://", "[REDACTED")):
        return False
    classes = sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        )
    )
    return classes >= 2


def _cards(m: re.Match[str]) -> Iterator[tuple[str, int, int]]:
    """Card numbers inside a run of digit groups: the longest valid window of groups, so a
    number next to the card ("order 12 4111 1111 1111 1111") does not hide it.

    Linear in the run's length (a megabyte of digit groups is one run): from each group only
    the windows whose digit count an issuer uses are tried (found through the running digit
    count), and only while they keep one separator."""
    run = m.group()
    spans = [(g.start(), g.end()) for g in re.finditer(r"\d+", run)]
    count = len(spans)
    groups = [run[s:e] for s, e in spans]
    joined = "".join(groups)
    ends = {0: 0}  # running digit count -> the group index it ends before
    total = 0
    for k, g in enumerate(groups):
        total += len(g)
        ends[total] = k + 1
    starts = [0] * count  # digits before group k
    for k in range(1, count):
        starts[k] = starts[k - 1] + len(groups[k - 1])
    # one_sep[k]: the windows from group k may end before this group index (cards use one
    # separator throughout)
    one_sep = [count] * count
    for k in range(count - 3, -1, -1):
        same = run[spans[k][1]] == run[spans[k + 1][1]]
        one_sep[k] = one_sep[k + 1] if same else k + 2
    i = 0
    while i < count:
        at = starts[i]
        head = joined[at : at + 4]
        for length in _brand_lengths(head) if len(head) == 4 else ():  # the longest first
            j = ends.get(at + length)
            if j is None or j > one_sep[i]:
                continue
            digits = joined[at : at + length]
            if len(set(digits)) > 1 and _luhn(digits):
                yield "card_number", m.start() + spans[i][0], m.start() + spans[j - 1][1]
                i = j - 1
                break
        i += 1


# Cheap necessary conditions, checked before the patterns they guard: most memory text holds
# none of these, and a regex that must try every position (\b, lookbehinds) is far slower over
# the same text than a substring search. Each needle is a substring every match of its pattern
# contains, so skipping a pattern whose needles are absent never misses a finding (a property
# test holds them to it).
_NEEDLES: dict[str, tuple[str, ...]] = {  # looked for in the lower-cased text
    "private_key": ("private key-----",),
    "azure_connection_string": ("accountkey=", "sharedaccesssignature="),
    "azure_account_key": ("==",),
    "azure_sas_token": ("sig=",),
    "aws_access_key": ("akia", "asia"),
    "aws_secret_key": ("secret",),
    "anthropic_key": ("sk-ant-",),
    "openai_key": ("sk-",),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "slack_token": ("xox",),
    "jwt": ("eyj",),
}
_PASSWORD_NEEDLES = ("pass", "pwd", "secret", "api", "token")  # matched against lower()
_DIGIT_SHAPES = re.compile(  # a card's 13+ digits, an SSN's or a NINO's digit groups
    r"\d(?:[ -]?\d){12}|\d{3}-\d{2}-\d{4}|\d\d ?\d\d ?\d\d ?[A-D]"
)


def _spans(text: str) -> Iterator[tuple[str, int, int]]:
    lower = text.lower()
    for kind, pattern in _PATTERNS:
        if not any(needle in lower for needle in _NEEDLES[kind]):
            continue
        for m in pattern.finditer(text):
            yield kind, m.start(), m.end()
    if any(needle in lower for needle in _PASSWORD_NEEDLES):
        for m in _PASSWORD.finditer(text):
            if _PROSE.match(text, m.start("value")):
                continue  # a capitalised word followed by more words is a sentence
            if _looks_secret(m.group("value")):
                yield "password", m.start("value"), m.end("value")
    if _DIGIT_SHAPES.search(text):
        for m in _CARD.finditer(text):
            yield from _cards(m)
        for pattern in (_SSN, _NINO):
            for m in pattern.finditer(text):
                yield "national_id", m.start(), m.end()


def _dedupe(spans: Iterable[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    """Drop spans inside a longer span already kept (a key inside its connection string)."""
    kept: list[tuple[str, int, int]] = []
    reach = -1  # the furthest end of a kept span; every kept span starts at or before `start`
    for kind, start, end in sorted(spans, key=lambda s: (s[1], -(s[2] - s[1]))):
        if end <= reach:
            continue
        kept.append((kind, start, end))
        reach = max(reach, end)
    return kept


def scan(text: str, allow: Iterable[str] = ()) -> list[Finding]:
    """Every secret-looking span in `text`, sorted by position; kinds in `allow` are skipped."""
    allowed = set(allow)
    findings = []
    # spans come sorted by start: the newlines are counted once, not from the top for each
    line, counted, line_start = 1, 0, 0
    for kind, start, end in _dedupe(_spans(text)):
        if kind in allowed:
            continue
        newlines = text.count("\n", counted, start)
        if newlines:
            line += newlines
            line_start = text.rfind("\n", counted, start) + 1
        counted = start
        column = start - line_start + 1
        findings.append(Finding(kind, line, column, start, end))
    return sorted(findings, key=lambda f: (f.line, f.column))


def redact(text: str, allow: Iterable[str] = ()) -> str:
    """`text` with each secret replaced by `[REDACTED:<kind>]`."""
    out = []
    last = 0
    for f in sorted(scan(text, allow), key=lambda f: f.start):
        if f.start < last:
            continue
        out.append(text[last : f.start])
        out.append(f"[REDACTED:{f.kind}]")
        last = f.end
    out.append(text[last:])
    return "".join(out)


_CREDENTIAL_PARAMS = re.compile(
    r"(?i)\b(AccountKey|SharedAccessSignature|sig|se|skoid|sktid|token|key|password)=([^&;\s\"']+)"
)


def mask(text: str) -> str:
    """For logs, errors and JSON output: redact secrets, and hide credential parameters."""
    return _CREDENTIAL_PARAMS.sub(lambda m: f"{m.group(1)}=***", redact(text))
