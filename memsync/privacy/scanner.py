"""Find secrets and personal data in memory text before it leaves the machine.

Findings name the kind, line and column — never the matched text. False positives matter as
much as misses: memory is full of dates, commit hashes, UUIDs and prose about passwords, so
each rule of the table (memsync/privacy/rules.py) is anchored on a structure real secrets have
(a vendor prefix, a checksum, a key=value shape with a secret-looking value), and a match that
says it is a placeholder (`EXAMPLE`, `your-token`, `xxxx`) is not a finding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from memsync.privacy.checksums import OTHER_NUMBER, documented_card, luhn
from memsync.privacy.rules import CONTEXT_CHARS, RULES, placeholder

KINDS: dict[str, str] = {
    "private_key": "PEM or OpenSSH private key",
    "azure_connection_string": "Azure Storage connection string",
    "azure_account_key": "Azure Storage account key",
    "azure_sas_token": "Azure SAS token",
    "azure_client_secret": "Entra ID (Azure AD) client secret",
    "azure_devops_pat": "Azure DevOps personal access token",
    "aws_access_key": "AWS access key",
    "aws_secret_key": "AWS secret key",
    "gcp_api_key": "Google API key",
    "anthropic_key": "Anthropic API key",
    "openai_key": "OpenAI-style API key",
    "ai_api_key": "AI provider API key",
    "github_token": "GitHub token",
    "gitlab_token": "GitLab token",
    "bitbucket_token": "Bitbucket or Atlassian token",
    "slack_token": "Slack token",
    "webhook_url": "chat webhook URL",
    "discord_token": "Discord bot token",
    "stripe_key": "Stripe key",
    "payment_token": "PayPal, Braintree or Square token",
    "registry_token": "package registry token",
    "email_sms_key": "SendGrid, Mailgun or Twilio key",
    "infra_token": "infrastructure service token",
    "jwt": "JSON Web Token",
    "url_password": "password in a URL",
    "password": "password or secret value",
    "card_number": "payment card number",
    "iban": "IBAN",
    "national_id": "national id number",
    "saas_token": "SaaS API token (Shopify, New Relic, Linear, Notion, Postman, Telegram, …)",
}


class Finding(NamedTuple):
    kind: str
    line: int  # 1-based
    column: int  # 1-based
    start: int = 0  # offsets into the scanned text, for redaction
    end: int = 0

    def describe(self) -> str:
        return f"line {self.line}: {KINDS.get(self.kind, self.kind)} ({self.kind})"


# a run of digit groups; one glued to two capitals ("DE59 2304 ...") is an IBAN's, never a card
_CARD = re.compile(r"(?<![\d-])(?:[A-Z]{2}(?=\d))?\d+(?:[ -]\d+)*(?![\d-])")


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


def _cards(m: re.Match[str]) -> Iterator[tuple[str, int, int]]:
    """Card numbers inside a run of digit groups: the longest valid window of groups, so a
    number next to the card ("order 12 4539 5260 1815 9083") does not hide it. A published test
    card is none, nor is one bare number labelled as an order, invoice, ticket, ….

    Linear in the run's length (a megabyte of digit groups is one run): from each group only
    the windows whose digit count an issuer uses are tried (found through the running digit
    count), and only while they keep one separator."""
    run = m.group()
    if run[0].isalpha():
        return
    bare = " " not in run and "-" not in run
    if bare and OTHER_NUMBER.search(m.string, max(0, m.start() - 40), m.start()):
        return  # "Order number 5466…": a number labelled as something else
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
            if luhn(digits) and not documented_card(digits):
                yield "card_number", m.start() + spans[i][0], m.start() + spans[j - 1][1]
                i = j - 1
                break
        i += 1


_RULES = RULES
_DIGIT_SHAPES = re.compile(r"\d(?:[ -]?\d){12}")  # a card's 13+ digits, the cards' cheap gate


def _spans(text: str) -> Iterator[tuple[str, int, int]]:
    lower = text.lower()
    for rule in _RULES:
        if not any(needle in lower for needle in rule.needles):
            continue
        group = "s" if "s" in rule.pattern.groupindex else 0
        for m in rule.pattern.finditer(text):
            value = m.group(group)
            if rule.check is not None and not rule.check(value):
                continue
            if not rule.literal and placeholder(value):
                continue
            if rule.context is not None:
                before = text[max(0, m.start() - CONTEXT_CHARS) : m.start()]
                if not rule.context.search(before):
                    continue
            yield rule.kind, m.start(group), m.end(group)
    if _DIGIT_SHAPES.search(text):
        for m in _CARD.finditer(text):
            yield from _cards(m)


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


# memsync's own advice, `--allow KIND FILE`: a kind it names and a file name
_ADVICE = re.compile(r"--allow[ =](?P<kind>[a-z_]+) (?P<file>[^\s`'\"]+)")


def _mask_part(text: str) -> str:
    return _CREDENTIAL_PARAMS.sub(lambda m: f"{m.group(1)}=***", redact(text))


def mask(text: str) -> str:
    """For logs, errors and JSON output: redact secrets, and hide credential parameters.
    memsync's advice `--allow KIND FILE` is kept: the kind is not an assignment's key and the
    file not its value (the file name alone is still scanned)."""
    out, last = [], 0
    for m in _ADVICE.finditer(text):
        if m.group("kind") not in KINDS:
            continue
        out.append(_mask_part(text[last : m.start("file")]))
        out.append(_mask_part(m.group("file")))
        last = m.end()
    out.append(_mask_part(text[last:]))
    return "".join(out)
