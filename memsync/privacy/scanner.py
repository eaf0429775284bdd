"""Find secrets and personal data in memory text before it leaves the machine.

Findings name the kind, line and column — never the matched text. False positives matter as
much as misses: memory is full of dates, commit hashes, UUIDs and prose about passwords, so
each pattern is anchored on a structure real secrets have (a vendor prefix, a checksum, a
key=value shape with a secret-looking value).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

KINDS: dict[str, str] = {
    "private_key": "PEM or OpenSSH private key",
    "azure_connection_string": "Azure Storage connection string",
    "azure_account_key": "Azure Storage account key",
    "azure_sas_token": "Azure SAS token",
    "azure_client_secret": "Entra ID (Azure AD) client secret",
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
}


class Finding(NamedTuple):
    kind: str
    line: int  # 1-based
    column: int  # 1-based
    start: int = 0  # offsets into the scanned text, for redaction
    end: int = 0

    def describe(self) -> str:
        return f"line {self.line}: {KINDS.get(self.kind, self.kind)} ({self.kind})"


class Rule(NamedTuple):
    """One row of the table: findings of `kind` are the matches of `pattern` (its group `s`
    when it has one) that pass `check`. `needles` are lower-case substrings every match
    contains: a text holding none of them skips the pattern (a substring search is far cheaper
    than a regex trying every position)."""

    kind: str
    needles: tuple[str, ...]
    pattern: re.Pattern[str]
    check: Callable[[str], bool] | None = None


_B64 = r"A-Za-z0-9+/"
_END = r"(?![\w-])"  # a token ends where its alphabet does
_START = r"(?<![\w-])"


def _rule(
    kind: str, needles: str, pattern: str, check: Callable[[str], bool] | None = None
) -> Rule:
    return Rule(kind, tuple(needles.split()) or ("",), re.compile(pattern), check)


def _mixed(value: str) -> bool:
    """A random token mixes character classes; words, hex digests and numbers mostly do not
    mix all three of lower case, upper case and digits."""
    return (
        any(c.islower() for c in value)
        and any(c.isupper() for c in value)
        and any(c.isdigit() for c in value)
    )


def _entropy(value: str) -> float:
    counts = [value.count(c) for c in set(value)]
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts)


def _random(value: str) -> bool:
    """Random-looking enough to be a key, not a word, a run or a placeholder (`xxxx`)."""
    return _entropy(value) >= 3.0 and not re.search(r"(?i)x{6}|example|0{8}", value)


_PLACEHOLDER = re.compile(
    r"(?i)^(?:<.*>|\[.*\]|\{.*\}|\$\{?\w+\}?|%\w+%|\*+|x{3,}|\.{3,}|none|null|nil|undefined"
    r"|changeme|change_me|example\w*|your[_-]?\w*|redacted|placeholder|secret|password"
    r"|\*\*\*.*|os\.(?:environ|getenv).*|env\(.*)$"
)
_KEBAB_WORDS = re.compile(r"^[a-z]+(?:[-_][a-z]+)*[.,;:!?]?$")
_CLASS_NAME = re.compile(r"^(?:[A-Z][a-z]+){2,}$")  # credential: DefaultAzureCredential
_PATH = re.compile(r"^(?:~|\.{1,2})?(?:/[a-z0-9._-]+)+/?$")  # pwd: /home/sam/projects
_PROSE = re.compile(r"[A-Z][a-z]+ +[a-z]")  # "The secret: Nobody reads the summary"

# a run of digit groups; one glued to two capitals ("DE59 2304 ...") is an IBAN's, never a card
_CARD = re.compile(r"(?<![\d-])(?:[A-Z]{2}(?=\d))?\d+(?:[ -]\d+)*(?![\d-])")

_DOUBLED = {str(d): (d * 2 - 9 if d > 4 else d * 2) for d in range(10)}


def _luhn(digits: str) -> bool:
    odd = sum(map(int, digits[-1::-2]))
    even = sum(map(_DOUBLED.__getitem__, digits[-2::-2]))
    return (odd + even) % 10 == 0


# IBAN length per country (ISO 13616 registry)
_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22, "BH": 22,
    "BR": 29, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22, "DK": 18, "DO": 28, "EE": 20,
    "ES": 24, "FI": 18, "FO": 18, "FR": 27, "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27,
    "GT": 28, "HR": 21, "HU": 28, "IE": 22, "IL": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30,
    "KZ": 20, "LB": 28, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24, "ME": 22,
    "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24, "PL": 28, "PS": 29,
    "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SE": 24, "SI": 19, "SK": 24, "SM": 27,
    "TN": 24, "TR": 26, "UA": 29, "VG": 24, "XK": 20,
}  # fmt: skip


def _iban(value: str) -> bool:
    """An IBAN of its country's length whose mod-97 check digits hold."""
    iban = value.replace(" ", "")
    if _IBAN_LENGTHS.get(iban[:2]) != len(iban):
        return False
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _dni(value: str) -> bool:
    """A Spanish DNI or NIE: its letter is the number mod 23 (an NIE's X/Y/Z counts 0/1/2)."""
    value = value.replace("-", "")
    number = "XYZ".index(value[0]) if value[0] in "XYZ" else ""
    digits = f"{number}{value[1:-1] if number != '' else value[:-1]}"
    return len(digits) == 8 and "TRWAGMYFPDXBNJZSQVHLCKE"[int(digits) % 23] == value[-1]


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
    if _CLASS_NAME.match(value):
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
    if run[0].isalpha():
        return
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


# The table. Which formats exist follows the public rule sets of gitleaks, detect-secrets and
# GitHub's secret-scanning partner patterns; each row is anchored on a structure the real
# credential has (a vendor prefix, a fixed length and alphabet, a checksum) so that hashes,
# UUIDs, base64 data and version numbers do not match.
_RULES: list[Rule] = [
    _rule(
        "private_key",
        "private key-----",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|[\s\S]*\Z)",
    ),
    _rule(
        "azure_connection_string",
        "accountkey= sharedaccesssignature= sharedaccesskey=",
        r"(?:DefaultEndpointsProtocol|BlobEndpoint|AccountName|Endpoint)=[^\s;]+;"
        r"(?:[A-Za-z]+=[^\s;]*;)*?(?:AccountKey|SharedAccessSignature|SharedAccessKey)=[^\s;]+",
    ),
    # 64 bytes in base64; not a subresource-integrity hash (`"integrity": "sha512-…=="`)
    _rule("azure_account_key", "==", rf"(?<![{_B64}])(?<!sha512-)[{_B64}]{{86}}==(?![{_B64}=])"),
    _rule(
        "azure_sas_token",
        "sig=",
        # from a token's start (tried once per token, not at every `/` in it) to its signature
        r"(?<![^\s\"'<>])[^\s\"'<>]*?\bsig=[\w%+/=-]{16,}",
        lambda token: re.search(r"\bsv=\d{4}-\d{2}-\d{2}", token) is not None,
    ),
    _rule(
        "azure_client_secret",
        "q~",
        r"(?<![\w~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![\w~.-])",
        _random,
    ),
    _rule(
        "aws_access_key",
        "akia asia abia acca a3t agpa aida aroa aipa anpa anva",
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z2-7]{16}\b",
    ),
    _rule(
        "aws_secret_key",
        "secret",
        r"(?i)\b(?:aws_?)?secret_?access_?key\b[\"']?\s*[:=]\s*[\"']?"
        r"[A-Za-z0-9/+=]{40}(?![A-Za-z0-9/+=])",
    ),
    _rule("gcp_api_key", "aiza", rf"\bAIza[\w-]{{35}}{_END}"),
    _rule(  # an OAuth client secret, an access token, a refresh token
        "gcp_api_key",
        "gocspx- ya29. 1//0",
        rf"{_START}(?:GOCSPX-[\w-]{{28}}|ya29\.[\w-]{{30,}}|1//0[\w-]{{40,}}){_END}",
        _random,
    ),
    _rule("anthropic_key", "sk-ant-", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    _rule("openai_key", "sk-", r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    _rule(
        "ai_api_key",
        "hf_ gsk_ xai- pplx- r8_",
        rf"{_START}(?:hf_[A-Za-z]{{34}}|gsk_[A-Za-z0-9]{{52}}|xai-[A-Za-z0-9]{{80}}"
        rf"|pplx-[A-Za-z0-9]{{48}}|r8_[A-Za-z0-9]{{37}}){_END}",
        _random,
    ),
    _rule(
        "github_token",
        "ghp_ gho_ ghu_ ghs_ ghr_ github_pat_",
        r"\bgh[pousr]_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{22,}",
    ),
    _rule(
        "gitlab_token",
        "glpat- glptt- gldt- glrt- glsoat- glcbt- glft- glimt- glagent- gr1348941",
        rf"{_START}(?:glpat|glptt|gldt|glrt|glsoat|glcbt|glft|glimt|glagent)-[\w-]{{20,}}"
        rf"|\bGR1348941[\w-]{{20}}{_END}",
    ),
    _rule(
        "bitbucket_token",
        "atbb atatt",
        rf"\b(?:ATBB[A-Za-z0-9]{{32}}|ATATT3[A-Za-z0-9_=-]{{150,}}){_END}",
    ),
    _rule("slack_token", "xox", r"\bxox[abprse]-[A-Za-z0-9-]{10,}"),
    _rule(
        "webhook_url",
        "hooks.slack.com discord.com/api/webhooks discordapp.com/api/webhooks webhook.office",
        r"https://(?:hooks\.slack\.com/(?:services|workflows|triggers)/[\w/]{20,}"
        r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w-]{20,}"
        r"|[\w-]+\.webhook\.office\.com/webhookb2/[\w@/-]{40,})",
    ),
    _rule(
        "discord_token",
        ".",
        r"(?<![\w.-])[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![\w.-])",
        _mixed,
    ),
    _rule(
        "stripe_key",
        "_live_ _test_ whsec_",
        rf"\b(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{{20,}}|whsec_[A-Za-z0-9]{{32,}}){_END}",
    ),
    _rule(
        "payment_token",
        "access_token$ sq0atp- sq0csp- eaaa",
        r"\baccess_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}\b"
        rf"|{_START}(?:sq0atp-[\w-]{{22}}|sq0csp-[\w-]{{43}}|EAAA[\w-]{{60}}){_END}",
    ),
    _rule(
        "registry_token",
        "npm_ pypi-ageichlwas5vcmc rubygems_ oy2 dckr_pat_",
        rf"{_START}(?:npm_[A-Za-z0-9]{{36}}|pypi-AgEIcHlwaS5vcmc[\w-]{{50,}}"
        rf"|rubygems_[a-f0-9]{{48}}|oy2[a-z0-9]{{43}}|dckr_pat_[\w-]{{27}}){_END}",
        _random,
    ),
    _rule(
        "email_sms_key",
        "sg. key- sk",
        rf"{_START}(?:SG\.[\w-]{{22}}\.[\w-]{{43}}|key-[0-9a-f]{{32}}|SK[0-9a-f]{{32}}){_END}",
        _random,
    ),
    _rule(
        "infra_token",
        "hvs. hvb. dop_v1_ doo_v1_ dor_v1_ hrku- .atlasv1. sntrys_ sntryu_ v1.0-",
        rf"{_START}(?:hv[sb]\.[\w-]{{90,}}|do[opr]_v1_[a-f0-9]{{64}}|HRKU-AA[\w-]{{58}}"
        rf"|[A-Za-z0-9]{{14}}\.atlasv1\.[\w-]{{60,70}}|sntrys_eyJ[\w=+/-]{{60,}}"
        rf"|sntryu_[a-f0-9]{{64}}|v1\.0-[a-f0-9]{{24}}-[a-f0-9]{{146}}){_END}",
    ),
    _rule("jwt", "eyj", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    _rule(
        "url_password",
        "://",
        r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@\"'<>]{0,64}:(?P<s>[^\s:/@\"'<>]{1,128})@[\w.-]+",
        lambda v: not _PLACEHOLDER.match(v) and not v.isdigit(),
    ),
    _rule(
        "iban",
        "",  # every text may hold one; the two letters and two digits are checked first
        r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b",
        _iban,
    ),
    _rule(
        "password",
        "pass pwd secret key token cred",
        r"(?i)\b(?:[a-z0-9]{1,24}[_.-]){0,4}(?:password|passwd|pwd|passphrase|secret"
        r"|client[_-]?secret|api[_-]?key|api[_-]?secret|access[_-]?key|secret[_-]?key|app[_-]?key"
        r"|private[_-]?key|(?:api|auth|access|bearer|bot|server|service|secret|refresh|session"
        r"|personal|deploy)[_-]?token|token|license[_-]?key|credentials?)\b[\"']?\s*[:=]\s*[\"'`]?"
        r"(?![A-Z][a-z]+ +[a-z])(?P<s>[^\s\"'`]{6,})",  # "Secret: Nobody reads it" is prose
        _looks_secret,
    ),
    _rule(
        "password",
        "authorization",
        r"(?i)\bauthorization\b[\"']?\s*:\s*(?:bearer|basic|token)\s+(?P<s>[A-Za-z0-9._~+/=-]{16,})",
        _looks_secret,
    ),
    _rule(
        "national_id",
        "-",
        r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])",  # US SSN
    ),
    _rule(
        "national_id",
        "",
        r"\b(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"  # UK NINO
        r" ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b",
    ),
    _rule(
        "national_id",
        "",
        r"\b[XYZ]?\d{7,8}-?[TRWAGMYFPDXBNJZSQVHLCKE]\b",  # Spanish DNI / NIE, mod-23 letter
        _dni,
    ),
]

_DIGIT_SHAPES = re.compile(r"\d(?:[ -]?\d){12}")  # a card's 13+ digits, the cards' cheap gate


def _spans(text: str) -> Iterator[tuple[str, int, int]]:
    lower = text.lower()
    for rule in _RULES:
        if not any(needle in lower for needle in rule.needles):
            continue
        for m in rule.pattern.finditer(text):
            group = "s" if "s" in rule.pattern.groupindex else 0
            if rule.check is None or rule.check(m.group(group)):
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


def mask(text: str) -> str:
    """For logs, errors and JSON output: redact secrets, and hide credential parameters."""
    return _CREDENTIAL_PARAMS.sub(lambda m: f"{m.group(1)}=***", redact(text))
