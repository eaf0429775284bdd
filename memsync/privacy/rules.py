"""The scanner's rule table: one row per credential or personal-number format (kind, cheap
needles, pattern, validation), and the checks the rows name.

Which formats exist follows the public rule sets of gitleaks, detect-secrets and GitHub's
secret-scanning partner patterns; each row is anchored on a structure the real credential has
(a vendor prefix, a fixed length and alphabet, a checksum, or a secret-like key name in front of
it). Two rules keep documentation out of the findings without one exception per sample:
every token match that holds a placeholder mark (`EXAMPLE`, `your`, `xxxx`, a run of one
character, a template) is dropped (`placeholder`), and numbers with a checksum drop the
published test and example values (`documented_card`, `EXAMPLE_IBANS`).
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import NamedTuple

from memsync.privacy.checksums import (
    belgian_number,
    bsn,
    codice_fiscale,
    cpf,
    dni,
    fnr,
    hetu,
    iban_valid,
    nir,
    personnummer,
    pesel,
    sin_valid,
    ssn,
)


class Pattern:
    """A regular expression compiled when first used: the hook scans one file in a fresh
    process, and most rows' needles are absent from it, so their patterns are never built."""

    __slots__ = ("_compiled", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.source)
        return self._compiled

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text)

    @property
    def groupindex(self) -> Mapping[str, int]:
        return self.compiled.groupindex


class Rule(NamedTuple):
    """One row of the table: findings of `kind` are the matches of `pattern` (its group `s`
    when it has one) that pass `check`, and, when the row has a `context`, that follow one of
    its words within `CONTEXT_CHARS` (a bare nine-digit number is an id only after "BSN").
    `needles` are lower-case substrings every finding's text contains: a text holding none of
    them skips the pattern (a substring search is far cheaper than a regex trying every
    position). `literal` rows (key blocks, checksummed numbers) skip the placeholder filter,
    which is meant for tokens."""

    kind: str
    needles: tuple[str, ...]
    pattern: Pattern
    check: Callable[[str], bool] | None = None
    context: re.Pattern[str] | None = None
    literal: bool = False


CONTEXT_CHARS = 80


def _rule(
    kind: str,
    needles: str,
    pattern: str,
    check: Callable[[str], bool] | None = None,
    context: str = "",
    literal: bool = False,
) -> Rule:
    return Rule(
        kind,
        tuple(needles.split()) or ("",),
        Pattern(pattern),
        check,
        re.compile(rf"(?i)(?:{context})") if context else None,
        literal,
    )


# --- value checks ----------------------------------------------------------------------------

_PLACEHOLDER_MARK = re.compile(
    r"(?i)example|placeholder|changeme|change_me|replace_?me|fixme|todo|redacted|dummy|your"
    r"|x{4}|\*{3}|\.\.\.|…"
    r"|(.)\1{5}|<[^>]*>|\$\{|\{\{|%[A-Za-z_]+%"
    # published documentation examples: the jwt.io sample's signature, xkcd's passphrase,
    # the test key in Stripe's API reference
    r"|SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c|correct horse battery staple"
    r"|4eC39HqLyjWDarjtT1zdp7dc"
)


def placeholder(value: str) -> bool:
    """A value written for documentation, not a credential: it says so (`EXAMPLE`, `your`,
    `xxxx`, `***`, `<...>`, `${...}`, `{{ ... }}`), repeats one character six times, or holds a
    published documentation example (the jwt.io sample token, AWS's `...EXAMPLE` keys).
    Random keys hold none of these marks (odds below 1 in 10,000)."""
    return _PLACEHOLDER_MARK.search(value) is not None


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
    """Random-looking enough to be a key, not a word or a run."""
    return _entropy(value) >= 3.0


def _strong(value: str) -> bool:
    """A token standing after a key name with no `=` or `:`: long, random, with a digit —
    so the next word of a sentence ("API key rotation") never qualifies."""
    value = value.rstrip(".,;:)")
    classes = sum((any(c.islower() for c in value), any(c.isupper() for c in value)))
    return (
        len(value) >= 20
        and any(c.isdigit() for c in value)
        and classes >= 1
        and _entropy(value) >= 3.3
        and not _VERSION.match(value)
    )


_TEMPLATE = re.compile(
    r"(?i)^(?:<.*>|\[.*\]|\{.*\}|\$\{?\w+\}?|%\w+%|\*+|x{3,}|\.{3,}|none|null|nil|undefined"
    r"|true|false|secret|password|passwd|pass|pwd|pw|token|api_?key|\*\*\*.*)$"
)
_KEBAB_WORDS = re.compile(r"^[a-z]+(?:[-_][a-z]+)*[.,;:!?]?$")
_CLASS_NAME = re.compile(r"^(?:[A-Z][a-z]+){2,}$")  # credential: DefaultAzureCredential
_PATH = re.compile(r"^(?:~|\.{1,2})?(?:/[\w.-]+)+/?$")  # pwd: /home/sam/projects
# code that fetches a secret rather than the secret: os.environ["X"], a YAML tag (`!vault |`),
# a CLI flag, `$(command)` or a pipeline macro, an attribute path (settings.SECRET_KEY,
# process.env.DB_PASS)
_CODE = re.compile(
    r"(?i)^(?:[!&*-]|\$\(|\w+:\w*\(|secrets\.|vault:)|\[[\"']|process\.env|os\.environ|getenv"
    r"|^[a-z_]+(?:\.[a-z_]+)+$|^[A-Z][a-z]+(?:To|From)?-[A-Z][A-Za-z]+$"  # a cmdlet
)
# a call: a dotted name and `(`, then nothing or one name closed by `)` or `,` (getpass(,
# env(DB_PASS), os.getenv(name,) — a random value with a `(` in it ("Xk9(xsnpCePn") is none
_CALL = re.compile(r"^[\w.]+\((?:[\w.]*[),])?[.,;:]?$")
_CONSTANT = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")  # REPLACE_ME, SET_IN_CI, MY_KEY_V2
_HEX_ID = re.compile(r"^[0-9a-f]{8,}(?:-[0-9a-f]{4,})*$")
_VERSION = re.compile(r"(?i)^v?\d+(?:\.\d+)+(?:[-+.][\w.]+)?$")


def _looks_secret(value: str) -> bool:
    """The value of a secret-named key: not a placeholder, template, word, class name, path,
    URL, version, code or a note in parentheses (Terraform's `(sensitive value)`); two
    character classes at least."""
    if _CALL.match(value) or value.startswith("("):
        return False
    value = value.rstrip(".,;:)")
    if len(value) < 6 or _TEMPLATE.match(value) or _KEBAB_WORDS.match(value):
        return False
    if _CLASS_NAME.match(value) or _CONSTANT.match(value):
        return False
    if _PATH.match(value) or _VERSION.match(value):
        return False
    if _CODE.search(value) or value.startswith(("http://", "https://", "[REDACTED")):
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


def _spoken_password(value: str) -> bool:
    """A password said in a sentence ("the wifi password is hunter2"): a letter and a digit
    or symbol, so the next word of prose ("is hashed") never qualifies."""
    value = value.rstrip(".,;:)!?")
    return (
        value[:1] not in ("(", "[", "{", "<")  # a remark in brackets: "password (merged …"
        and not _HEX_ID.match(value)  # an id or a digest, not a password someone typed
        and not (value[0].isdigit() and sum(c.isalpha() for c in value) <= 2)  # a date, a sum
        and _looks_secret(value)
        and any(c.isalpha() for c in value)
        and any(not c.isalpha() for c in value)
    )


_PROSE_WORDS = frozenset(
    {"the", "a", "an", "of", "in", "on", "at", "from", "to", "for", "is", "are", "be", "use"}
    | {"see", "ask", "not", "no", "with", "by", "and", "or", "it", "this", "that", "our", "my"}
    | {"your", "same", "set"}
)


def _passphrase(value: str) -> bool:
    """A quoted passphrase of words ("lantern falcon lantern falcon 85"): three to eight words,
    none of them a word of a sentence ("see the vault", "not set") or a template."""
    words = value.split()
    return (
        3 <= len(words) <= 8
        and not any(w.lower() in _PROSE_WORDS for w in words)
        and not any(c in value for c in "$<{[%()")
    )


def _short_password(value: str) -> bool:
    """A password where its place says it is one (a `.pgpass` field, `curl -u user:…`, `-p…`):
    four characters or more, a letter and a second character class, not a placeholder word
    (`pass`, `VALUE`, `REPLACE_ME`) or a template."""
    classes = sum(
        (
            any(c.islower() for c in value),
            any(c.isupper() for c in value),
            any(c.isdigit() for c in value),
            any(not c.isalnum() for c in value),
        )
    )
    return (
        len(value) >= 4
        and any(c.isalpha() for c in value)
        and classes >= 2
        and not _TEMPLATE.match(value)
        and not _CONSTANT.match(value)
    )


def _basic_auth(value: str) -> bool:
    """Base64 of `user:password` (a Docker `auths` entry)."""
    try:
        raw = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return False
    user, colon, password = raw.partition(":")
    return bool(colon and user and password and raw.isprintable())


def _pem_in_base64(value: str) -> bool:
    """Base64 whose text begins with a private key's PEM header (kubeconfig `client-key-data`,
    a Kubernetes secret), not a certificate's."""
    head = value[: min(len(value) // 4 * 4, 96)]
    try:
        return b"PRIVATE KEY" in base64.b64decode(head)
    except binascii.Error:
        return False


def _sas(token: str) -> bool:
    """A SAS token names its service version (`sv=2022-11-02`) or its expiry and permissions;
    the parameters come in any order."""
    return re.search(r"\bsv=\d{4}-\d{2}-\d{2}", token) is not None or (
        re.search(r"\bse=\d{4}-", token) is not None and re.search(r"\bsp=", token) is not None
    )


# --- the table -------------------------------------------------------------------------------

_B64 = r"A-Za-z0-9+/"
_END = r"(?![\w-])"  # a token ends where its alphabet does
_START = r"(?<![\w-])"
_SEP = r"(?:\s|\\[nr])"  # a line break, or `\n` inside a JSON string
# `KEY=value`, `key: value`, `"key": "value"`, `key => value`, `key := value`
_ASSIGN = r"[\"']?[ \t]*(?::=|=>|[:=：])[ \t]*[\"'`]?"
_PASSWORD_WORDS = (
    r"password|passwort|passwd|passcode|passphrase|kennwort|wachtwoord|mot de passe|contraseña"
    r"|contrasena|senha|passord|lösenord|losenord|salasana|adgangskode|hasło|haslo|parola|heslo"
    r"|пароль|mdp|şifre|sifre|jelszó|jelszo|lozinka|geslo|parool|κωδικός"
)
# words with no word boundary around them in their script
_CJK_PASSWORD_WORDS = r"パスワード|暗証番号|密码|密碼|口令|비밀번호"
_PASSWORD_NEEDLES = (
    "pass pw wachtwoord kennwort contrase senha lösenord losenord salasana adgangskode"
    " hasło haslo parola heslo пароль mdp şifre sifre jelszó jelszo lozinka geslo parool κωδικός"
    " パスワード 暗証番号 密码 密碼 口令 비밀번호"
)
_SPOKEN_TOKEN = r"(?![\w-])(?:[ \t]+(?:is|was|ist|est|es))?[ \t]+[\"'`]?(?P<s>[\w./+~=-]{20,200})"
# "the password for the router is", "la password del router è", "hasło do wifi w biurze:"
_OF = (
    r"for|of|to|on|at|für|zum|zur|vom|des|pour|de|du|para|da|do|del|della|di|voor|van|för|till"
    r"|til|av|af|dla|na|za|от|для|per|par"
)
_ONE_WORD = r"[^\s:=\"'`]{1,30}"
_VERB = r"(?:is|was|ist|lautet|est|es|é|er|är|on|jest|è|is now|ist jetzt)"

RULES: list[Rule] = [
    # --- private keys
    _rule(
        "private_key",
        "private key-----",
        # a header followed by a key body: a mention of the header alone is prose
        rf"-----BEGIN[ A-Z0-9]{{0,30}}PRIVATE KEY(?: BLOCK)?-----{_SEP}*"
        rf"(?:[\w-]+: [^\n]*\n{_SEP}*)*[{_B64}=]{{40,}}(?:{_SEP}+[{_B64}=]+)*"
        rf"(?:{_SEP}*-----END[ A-Z0-9]{{0,30}}PRIVATE KEY(?: BLOCK)?-----)?",
        literal=True,
    ),
    _rule(  # PuTTY .ppk: its private lines
        "private_key",
        "private-lines:",
        rf"Private-Lines: \d+(?:\r?\n[{_B64}=]{{1,80}})+",
        literal=True,
    ),
    _rule(  # a PEM private key in base64 (kubeconfig `client-key-data`, a Kubernetes secret)
        "private_key", "ls0tls1crudjti", rf"LS0tLS1CRUdJTi[{_B64}]{{40,}}={{0,2}}", _pem_in_base64
    ),
    _rule("private_key", "age-secret-key-1", r"AGE-SECRET-KEY-1[02-9AC-HJ-NP-Z]{58}", literal=True),
    # --- Azure
    _rule(
        "azure_connection_string",
        "accountkey= sharedaccesssignature= sharedaccesskey=",
        r"(?:DefaultEndpointsProtocol|BlobEndpoint|AccountName|Endpoint)=[^\s;]+;"
        r"(?:[A-Za-z]+=[^\s;]*;)*?(?:AccountKey|SharedAccessSignature|SharedAccessKey)=[^\s;]+",
    ),
    # 64 bytes in base64 after a word that names a key: a bare 88-character blob is as often a
    # signature or a sha512 digest
    _rule(
        "azure_account_key",
        "==",
        rf"(?<![{_B64}])(?<!sha512-)[{_B64}]{{86}}==(?![{_B64}=])",
        context=r"key|azure|storage|account",
    ),
    _rule(
        "azure_sas_token",
        "sig=",
        # from a token's start (tried once per token, not at every `/` in it) to its end
        r"(?<![^\s\"'<>])[^\s\"'<>]*?\bsig=[\w%+/=-]{16,}[^\s\"'<>]*",
        _sas,
    ),
    _rule(
        "azure_client_secret",
        "q~",
        r"(?<![\w~.-])[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.-]{31,34}(?![\w~.-])",
        _random,
    ),
    _rule(  # Azure DevOps PAT, the 84-character format: 76 characters, AZDO, 4 characters
        "azure_devops_pat", "azdo", r"\b[A-Za-z0-9]{76}AZDO[A-Za-z0-9]{4}\b", _random
    ),
    _rule(  # the older 52-character lower-case base32 PAT, after a PAT key name
        "azure_devops_pat",
        "pat",
        r"(?i)(?<![A-Za-z0-9])pat(?![\w-])" + _ASSIGN + r"(?P<s>[a-z2-7]{52})\b",
        lambda v: _random(v) and any(c.isdigit() for c in v),
    ),
    # --- AWS
    _rule(
        "aws_access_key",
        "akia asia abia acca a3t agpa aida aroa aipa anpa anva",
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA)[A-Z2-7]{16}\b",
    ),
    _rule(
        "aws_secret_key",
        "secret",
        r"(?i)\b(?:aws[_ .-]?secret(?:[_ .-]?access)?|secret[_ .-]?access)[_ .-]?key\b[\"']?"
        r"(?:[ \t]*(?::=|=>|[:=]|\bis\b)[ \t]*|[ \t]+)[\"'`]?"
        r"(?P<s>[A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        _mixed,
    ),
    _rule(  # the secret next to its key id (the credentials CSV, a pasted pair), after "aws",
        # or after a key word and an AWS service word ("the key for the s3 uploader bot is")
        "aws_secret_key",
        "akia asia aws s3 bucket iam",
        r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
        lambda v: _mixed(v) and _entropy(v) >= 4.0,
        context=r"\b(?:AKIA|ASIA)[A-Z2-7]{16}\b|\baws|\b(?:key|secret)[^\n]*\b(?:s3|bucket|iam)\b"
        r"|\b(?:s3|bucket|iam)\b[^\n]*\b(?:key|secret)",
    ),
    _rule("aws_secret_key", "absk", rf"\bABSK[{_B64}]{{109,269}}={{0,2}}"),  # Bedrock API key
    # --- Google
    _rule("gcp_api_key", "aiza", rf"\bAIza[\w-]{{35}}{_END}"),
    _rule(  # an OAuth client secret, an access token, a refresh token
        "gcp_api_key",
        "gocspx- ya29. 1//0",
        rf"{_START}(?:GOCSPX-[\w-]{{28}}|ya29\.[\w-]{{30,}}|1//0[\w-]{{40,}}){_END}",
        _random,
    ),
    # --- AI providers
    _rule("anthropic_key", "sk-ant-", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    _rule("openai_key", "sk-", r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
    _rule(
        "ai_api_key",
        "hf_ api_org_ gsk_ xai- pplx- r8_ lsv2_ pcsk_ sk_",
        rf"{_START}(?:hf_[A-Za-z0-9]{{34,40}}|api_org_[A-Za-z0-9]{{34}}|gsk_[A-Za-z0-9]{{52}}"
        rf"|xai-[A-Za-z0-9]{{80}}|pplx-[A-Za-z0-9]{{48}}|r8_[A-Za-z0-9]{{37}}"
        rf"|lsv2_(?:pt|sk)_[a-f0-9]{{32}}_[a-f0-9]{{10}}|pcsk_[\w]{{50,80}}|sk_[a-f0-9]{{48}})"
        rf"{_END}",
        _random,
    ),
    # --- source hosting
    _rule(
        "github_token",
        "ghp_ gho_ ghu_ ghs_ ghr_ github_pat_",
        r"\bgh[pousr]_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{22,}",
    ),
    _rule(
        "gitlab_token",
        "glpat- glptt- gldt- glrt- glsoat- glcbt- glft- glimt- glagent- gloas- glffct- gr1348941",
        rf"{_START}(?:glpat|glptt|gldt|glrt|glsoat|glcbt|glft|glimt|glagent|gloas|glffct)"
        rf"-[\w-]{{20,}}|\bGR1348941[\w-]{{20}}{_END}",
    ),
    _rule(
        "bitbucket_token",
        "atbb atatt atctt",
        rf"\b(?:ATBB[A-Za-z0-9_=-]{{32,64}}|AT[AC]TT3[A-Za-z0-9_=-]{{150,}}){_END}",
    ),
    # --- chat and webhooks
    _rule(
        "slack_token", "xox xapp-", r"\bxox[abprse]-[A-Za-z0-9-]{10,}|\bxapp-\d-[A-Z0-9]+-\d+-\w+"
    ),
    _rule(
        "webhook_url",
        "hooks.slack.com discord.com/api/webhooks discordapp.com/api/webhooks webhook.office"
        " logic.azure.com chat.googleapis.com hooks.zapier.com",
        r"(?:https?://)?(?:hooks\.slack\.com/(?:services|workflows|triggers)/[\w/]{20,}"
        r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[\w-]{20,}"
        r"|[\w-]+\.webhook\.office\.com/webhookb2/[\w@/-]{40,}"
        r"|[\w.-]+\.logic\.azure\.com(?::\d+)?/workflows/[^\s\"'<>]*?\bsig=[\w%-]{20,}"
        r"|chat\.googleapis\.com/v1/spaces/[\w-]+/messages\?[^\s\"'<>]*?\btoken=[\w%-]{20,}"
        r"|hooks\.zapier\.com/hooks/catch/\d+/\w{5,})",
    ),
    _rule(
        "discord_token",
        ".",
        r"(?<![\w.-])[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![\w.-])",
        _mixed,
    ),
    # --- payments
    _rule(
        "stripe_key",
        "_live_ _test_ _prod_ whsec_",
        rf"\b(?:(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{{20,}}|whsec_[A-Za-z0-9]{{32,}}){_END}",
    ),
    _rule(
        "payment_token",
        "access_token$ sq0atp- sq0csp- eaaa rzp_live_ flwseck",
        r"\baccess_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}\b"
        rf"|{_START}(?:sq0atp-[\w-]{{22}}|sq0csp-[\w-]{{43}}|EAAA[\w-]{{60}}"
        rf"|rzp_live_[A-Za-z0-9]{{14}}|FLWSECK(?:_TEST)?-[a-h0-9]{{32}}-X){_END}",
    ),
    # --- package registries
    _rule(
        "registry_token",
        "npm_ pypi-ageichlwas5vcmc rubygems_ oy2 dckr_pat_ dckr_oat_ akcp cmvmd clojars_",
        rf"{_START}(?:npm_[A-Za-z0-9]{{36}}|pypi-AgEIcHlwaS5vcmc[\w-]{{50,}}"
        rf"|rubygems_[a-f0-9]{{48}}|oy2[a-z0-9]{{43}}|dckr_(?:pat|oat)_[\w-]{{27,}}"
        rf"|AKCp[A-Za-z0-9]{{69}}|cmVmd[A-Za-z0-9]{{59}}|CLOJARS_[a-z0-9]{{60}}){_END}",
        _random,
    ),
    _rule(  # a Docker config's `"auth": base64(user:password)`
        "registry_token",
        '"auth"',
        r"\"auth\"\s*:\s*\"(?P<s>[A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])",
        _basic_auth,
    ),
    # --- email and SMS
    _rule(
        "email_sms_key",
        "sg. key- sk -us xkeysib-",
        rf"{_START}(?:SG\.[\w-]{{22}}\.[\w-]{{43}}|key-[0-9a-f]{{32}}|SK[0-9a-f]{{32}}"
        rf"|[0-9a-f]{{32}}-us\d{{1,2}}|xkeysib-[a-f0-9]{{64}}-[A-Za-z0-9]{{16}}){_END}",
        _random,
    ),
    # --- infrastructure
    _rule(
        "infra_token",
        "hvs. hvb. hvr. s. dop_v1_ doo_v1_ dor_v1_ hrku- .atlasv1. sntrys_ sntryu_ v1.0- dapi"
        " glc_ glsa_ dp. pul- fo1_ pscale_ dt0c01. ltai tskey- sbp_ nfp_",
        rf"{_START}(?:hv[sbr]\.[\w-]{{24,}}|s\.[A-Za-z0-9]{{24}}|do[opr]_v1_[a-f0-9]{{64}}"
        rf"|HRKU-AA[\w-]{{58}}|[A-Za-z0-9]{{14}}\.atlasv1\.[\w-]{{60,70}}"
        rf"|sntrys_eyJ[\w=+/-]{{60,}}|sntryu_[a-f0-9]{{64}}|v1\.0-[a-f0-9]{{24}}-[a-f0-9]{{146}}"
        rf"|dapi[a-f0-9]{{32}}(?:-\d)?|glc_[{_B64}]{{32,400}}={{0,3}}|glsa_\w{{32}}_[a-fA-F0-9]{{8}}"
        rf"|dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{{40,44}}|pul-[a-f0-9]{{40}}"
        rf"|fo1_[\w-]{{43}}|pscale_(?:tkn|pw|oauth)_[\w.=-]{{32,64}}"
        rf"|dt0c01\.[A-Za-z0-9]{{24}}\.[A-Za-z0-9]{{64}}|LTAI[A-Za-z0-9]{{20}}"
        rf"|tskey-(?:auth|api|client|scim|webhook)-[\w-]{{20,}}|sbp_[a-f0-9]{{40}}"
        rf"|nfp_[A-Za-z0-9]{{36}}){_END}",
        lambda v: _random(v) and (not v.startswith("s.") or _mixed(v)),
    ),
    _rule(  # a Sentry DSN: a key (and once a secret) as the URL's user
        "infra_token",
        "://",
        r"\bhttps?://(?P<s>[0-9a-f]{32}(?::[0-9a-f]{32})?)@[\w.-]+(?::\d+)?/(?:[\w.-]+/)*\d+\b",
    ),
    # --- other services
    _rule(
        "saas_token",
        "shpat_ shpss_ shpca_ shppa_ nrak- nrii- nrjs- lin_api_ ntn_ secret_ pmak- pat :aa",
        rf"{_START}(?:shp(?:at|ss|ca|pa)_[a-fA-F0-9]{{32}}|NRAK-[A-Z0-9]{{27}}|NRII-[\w-]{{32}}"
        rf"|NRJS-[a-f0-9]{{19}}|lin_api_[A-Za-z0-9]{{40}}|ntn_\d{{11}}[A-Za-z0-9]{{35}}"
        rf"|secret_[A-Za-z0-9]{{43}}|PMAK-[a-f0-9]{{24}}-[a-f0-9]{{34}}"
        rf"|pat[A-Za-z0-9]{{14}}\.[a-f0-9]{{64}}|\d{{8,10}}:AA[\w-]{{33}}){_END}",
        _random,
    ),
    _rule("jwt", "eyj", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    # --- passwords
    _rule(
        "url_password",
        "://",
        r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,20}://[^\s:/@\"'<>]{0,64}:(?P<s>[^\s:/@\"'<>]{1,128})@[\w.-]+",
        lambda v: not _TEMPLATE.match(v) and not v.isdigit(),
    ),
    _rule(  # a secret-named key assigned a value
        "password",
        f"pass pwd secret key token cred {_PASSWORD_NEEDLES}",
        # the name's last word is enough (DB_PASSWORD, x-api-key); a password word may be glued
        # to what precedes it (PGPASSWORD)
        r"(?i)(?:password|passwd|pwd|"
        + _CJK_PASSWORD_WORDS
        + r"|(?<![A-Za-z0-9])(?:"
        + _PASSWORD_WORDS
        + r"|pass"
        r"|secret|client[_ -]?secret|api[_ -]?key|api[_ -]?secret|access[_ -]?key"
        r"|secret[_ -]?key|app[_ -]?key|auth[_ -]?key|master[_ -]?key|encryption[_ -]?key"
        r"|signing[_ -]?key|private[_ -]?key|(?:api|auth|access|bearer|bot|server|service"
        r"|secret|refresh|session|personal|deploy)[_ -]?token|token|license[_ -]?key"
        r"|credentials?))(?![\w-])" + _ASSIGN + r"(?![A-Z][a-z]+ +[a-z])"  # "Secret: Nobody ..."
        r"(?P<s>[^\s\"'`]{6,})",
        _looks_secret,
    ),
    _rule(  # a password said in a sentence, in several languages: "the wifi password is …"
        "password",
        _PASSWORD_NEEDLES,
        # memsync's own advice `--allow password FILE` names a kind, not a password
        rf"(?i)(?:(?<!\w)(?<!--allow )(?:{_PASSWORD_WORDS}|pwd|pw)(?![\w-])|{_CJK_PASSWORD_WORDS})"
        # up to six words after a preposition, then the verb or a colon: "the password for the
        # grafana admin account is", "A senha do banco de dados de homologação é"
        rf"(?:[ \t]+(?:{_OF})(?:[ \t]+{_ONE_WORD}){{0,6}}?(?:[ \t]+{_VERB}|(?=[ \t]*[:=：]))"
        rf"|[ \t]+{_VERB}|[ \t]*[はが是为為은는])?"
        # a word ending in `:` introduces the value, it is not one ("hasło do wifi w biurze:")
        r"(?:[ \t]*[:=：][ \t]*|[ \t]+|(?<=[はが是为為은는]))"
        r"(?:[\"'`“„「]|«[ \t\u00a0\u202f]?)?(?P<s>[^\s\"'`”“«»」]{5,63}[^\s\"'`”“«»」:])"
        r"(?![^\s\"'`”“«»」])",
        _spoken_password,
    ),
    _rule(  # a secret-named key followed by a long random token, no `=` or `:` between
        "password",
        "key token secret",
        r"(?i)(?<![A-Za-z0-9])(?:api|access|auth|secret|bearer|bot|deploy|service|server"
        r"|personal|private|refresh|session|app|master|license)[ _.-]?(?:key|token|secret)"
        rf"{_SPOKEN_TOKEN}",
        _strong,
    ),
    _rule(  # "my Azure DevOps PAT for the pipelines is …": a token with up to six words after a
        # preposition, then the verb; only a long mixed-case random value
        "password",
        "pat token secret",
        rf"(?i)(?<![A-Za-z0-9])(?:pat|token|secret)[ \t]+(?:{_OF})(?:[ \t]+{_ONE_WORD}){{0,6}}?"
        rf"[ \t]+{_VERB}[ \t]+[\"'`]?(?P<s>[\w./+~=-]{{20,200}})",
        lambda v: _strong(v) and _mixed(v),
    ),
    _rule(  # the bare words, where a hash or an id may follow too: only a mixed-case token
        "password",
        "token secret",
        rf"(?i)(?<![A-Za-z0-9])(?:token|secret){_SPOKEN_TOKEN}",
        lambda v: _strong(v) and _mixed(v),
    ),
    _rule(  # a personal access token's key: GITHUB_PAT=, AZURE_DEVOPS_EXT_PAT=
        "password",
        "pat",
        r"(?i)(?<![A-Za-z0-9])pat(?![\w-])" + _ASSIGN + r"(?P<s>[^\s\"'`]{6,})",
        _looks_secret,
    ),
    _rule(  # a passphrase key with a quoted value of several words: PASSPHRASE="lantern falcon …"
        "password",
        "passphrase pass_phrase pass-phrase",
        r"(?i)(?<![A-Za-z0-9])pass[_ -]?phrase[\"']?[ \t]*(?::=|=>|[:=：])[ \t]*"
        r"(?P<q>[\"'])(?P<s>[^\"'\n]{8,200})(?P=q)",
        _passphrase,
    ),
    _rule(  # curl -u user:password, wget --user
        "password",
        "-u --user",
        r"(?<![\w-])(?:-u|--user)[ =][\"']?[^\s:\"'$]{1,64}:(?P<s>[^\s\"'`]{4,})",
        _short_password,
    ),
    _rule(  # --password VALUE, --password=VALUE
        "password",
        "--password",
        r"(?<![\w-])--password[ =][\"']?(?P<s>[^\s\"'`]{4,})",
        _short_password,
    ),
    _rule(  # docker login -u sam -p VALUE, sshpass -p VALUE
        "password",
        "login sshpass",
        r"(?<![\w-])-p[ =]?[\"']?(?P<s>[^\s\"'`-][^\s\"'`]{3,})",
        _spoken_password,  # "the -p flag" is prose
        context=r"\blogin\b|sshpass",
    ),
    _rule(  # <password>VALUE</password>
        "password",
        "pass pwd secret key token",
        r"(?i)<(?:[\w.-]*[_.-])?(?:password|passwd|pwd|secret|client[_-]?secret|api[_-]?key|token"
        r"|access[_-]?token|secret[_-]?key)>(?P<s>[^<\s]{4,200})</",
        _looks_secret,
    ),
    _rule(  # <add key="ClearTextPassword" value="VALUE" /> (NuGet, .NET app settings)
        "password",
        "pass secret token key",
        r"(?i)\bkey\s*=\s*\"[\w.:-]*(?:password|secret|token|api[_-]?key)\"\s+value\s*=\s*\""
        r"(?P<s>[^\"\s]{4,200})\"",
        _looks_secret,
    ),
    _rule(  # PowerShell: ConvertTo-SecureString "VALUE" -AsPlainText
        "password",
        "convertto-securestring",
        r"(?i)ConvertTo-SecureString\s+(?:-String\s+)?[\"'](?P<s>[^\"'\s]{4,200})[\"']",
        _short_password,
    ),
    _rule(  # mysql -pPASSWORD
        "password",
        "mysql mariadb",
        r"(?<![\w-])-p(?P<s>[^\s\"'`-][^\s\"'`]{3,})",
        _short_password,
        context=r"mysql|mariadb",
    ),
    _rule(  # a .pgpass line: host:port:database:user:password
        "password",
        ":",
        r"(?<![^\s`\"'(])[\w.*-]+:(?:\d{1,5}|\*):[\w.*-]+:[\w.*@-]+:(?P<s>[^\s:`\"']+)"
        r"(?=[\s`\"')]|\Z)",
        _short_password,
    ),
    _rule(
        "password",
        "authorization",
        # any scheme: Bearer, Basic, Token, SSWS, …
        r"(?i)\bauthorization\b[\"']?\s*:\s*[a-z][\w-]{1,20}\s+(?P<s>[A-Za-z0-9._~+/=-]{16,})",
        _looks_secret,
    ),
    # --- personal numbers
    _rule(
        "iban",
        "",  # every text may hold one; the two letters and two digits are checked first
        r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b",
        iban_valid,
        literal=True,
    ),
    _rule(  # typed in lower case
        "iban",
        "",
        r"\b[a-z]{2}\d{2}(?: ?[a-z0-9]{4}){2,7}(?: ?[a-z0-9]{1,3})?\b",
        iban_valid,
        literal=True,
    ),
    _rule(  # US SSN
        "national_id",
        "-",
        r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])",
        ssn,
        literal=True,
    ),
    _rule(  # US SSN without dashes, after a word that says it is one
        "national_id",
        "ssn social",
        r"(?<![\d-])\d{3} ?\d{2} ?\d{4}(?![\d-])",
        ssn,
        context=r"\bssn|social[ -]security",
        literal=True,
    ),
    _rule(
        "national_id",
        "",
        r"\b(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]"  # UK NINO
        r" ?\d{2} ?\d{2} ?\d{2} ?[A-D]\b",
        literal=True,
    ),
    _rule(
        "national_id",
        "",
        r"\b[XYZ]?\d{7,8}-?[TRWAGMYFPDXBNJZSQVHLCKE]\b",  # Spanish DNI / NIE, mod-23 letter
        dni,
        literal=True,
    ),
    _rule(  # Dutch BSN, 11-proof
        "national_id",
        "bsn burgerservicenummer sofi",
        r"(?<![\d.])\d{4}\.?\d{2}\.?\d{3}(?![\d.])",
        bsn,
        context=r"bsn|burgerservicenummer|sofi",
        literal=True,
    ),
    _rule(
        "national_id",
        "pesel",
        r"(?<!\d)\d{11}(?!\d)",
        pesel,
        context="pesel",
        literal=True,
    ),
    _rule(  # Brazilian CPF, in its written form anywhere, as bare digits after "CPF"
        "national_id",
        "",
        r"(?<![\d.])\d{3}\.\d{3}\.\d{3}-\d{2}(?![\d-])",
        cpf,
        literal=True,
    ),
    _rule("national_id", "cpf", r"(?<!\d)\d{11}(?!\d)", cpf, context="cpf", literal=True),
    _rule(
        "national_id",
        "personnummer personnr person-nr samordningsnummer",
        r"(?<![\d-])(?:19|20)?\d{6}[-+ ]?\d{4}(?![\d-])",
        personnummer,
        context=r"personnummer|personnr|person-nr|samordningsnummer",
        literal=True,
    ),
    _rule(  # Canadian SIN
        "national_id",
        "sin social nas assurance",
        r"(?<![\d-])\d{3}[ -]?\d{3}[ -]?\d{3}(?![\d-])",
        sin_valid,
        context=r"\bsin\b|social insurance|\bnas\b|assurance sociale",
        literal=True,
    ),
    _rule(  # French NIR (social security number): mod-97 key, after its name
        "national_id",
        "sociale nir insee sécu secu",
        r"(?<![\d-])[12] ?\d{2} ?\d{2} ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}(?![\d-])",
        nir,
        context=r"s[ée]curit[ée] sociale|\bnir\b|\binsee\b|\bs[ée]cu\b",
        literal=True,
    ),
    _rule(  # Norwegian fødselsnummer / D-nummer: two mod-11 check digits
        "national_id",
        "fødselsnummer fodselsnummer fnr d-nummer",
        r"(?<!\d)\d{6} ?\d{5}(?!\d)",
        fnr,
        context=r"fødselsnummer|fodselsnummer|\bfnr\b|d-nummer",
        literal=True,
    ),
    _rule(  # Italian codice fiscale: its shape (digits may be letters in homonym codes) and
        # its check character
        "national_id",
        "",
        r"\b[A-Z]{6}[\dLMNP-V]{2}[ABCDEHLMPRST][\dLMNP-V]{2}[A-Z][\dLMNP-V]{3}[A-Z]\b",
        codice_fiscale,
        literal=True,
    ),
    _rule(  # Belgian national number (YY.MM.DD-NNN.CC), after its name
        "national_id",
        "rijksregister registre niss insz national",
        r"(?<![\d.-])\d{2}\.?\d{2}\.?\d{2}[ .-]?\d{3}[ .]?\d{2}(?![\d-])",
        belgian_number,
        context=r"rijksregister|registre national|national (?:register )?number|\bniss\b|\binsz\b",
        literal=True,
    ),
    _rule(  # Finnish HETU: the century sign and check character make it unambiguous
        "national_id",
        "",
        r"(?<![\w-])\d{6}[-+ABCDEFYXWVU]\d{3}[0-9A-FHJ-NPR-Y](?![\w-])",
        hetu,
        literal=True,
    ),
]
