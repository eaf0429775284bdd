"""Writes the scanner's recall corpus (secrets.jsonl) and its look-alike corpus (lookalikes.jsonl).

Every credential here is FAKE: random characters in the published shape of each format, drawn
from a seeded generator, so the files are the same on every run. Each secret is pasted into a
line of prose the way credentials reach memory notes (a deploy log, a chat, a config). The
look-alikes are what memory is full of and must never be refused: hashes, UUIDs, checksums,
base64 images, version numbers, numbers failing their checksum, prose about secrets.

Usage: python tests/corpus/generate.py  (rewrites both files)
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).parent
rng = random.Random(38)
ALNUM = string.ascii_letters + string.digits
LOWER_DIGITS = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
UPPER32 = string.ascii_uppercase + "234567"


def pick(alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def mixed(n: int, alphabet: str = ALNUM) -> str:
    """n random characters holding a lower-case letter, an upper-case letter and a digit."""
    while True:
        s = pick(alphabet, n)
        if (
            any(c.islower() for c in s)
            and any(c.isupper() for c in s)
            and any(c.isdigit() for c in s)
        ):
            return s


def luhn_complete(prefix: str, length: int) -> str:
    body = prefix + pick(string.digits, length - len(prefix) - 1)
    for d in string.digits:
        digits = body + d
        total = sum(
            (int(c) * 2 - 9 if int(c) * 2 > 9 else int(c) * 2) if i % 2 else int(c)
            for i, c in enumerate(reversed(digits))
        )
        if total % 10 == 0:
            return digits
    raise AssertionError


def grouped(number: str, sep: str) -> str:
    return sep.join(number[i : i + 4] for i in range(0, len(number), 4))


def bad_luhn() -> str:
    good = luhn_complete("4", 16)
    return good[:-1] + str((int(good[-1]) + 1) % 10)


def iban(country: str, length: int, good: bool = True) -> str:
    bban = pick(string.digits, length - 4)
    moved = bban + country + "00"
    check = 98 - int("".join(str(int(c, 36)) for c in moved)) % 97
    if not good:
        check = (check + 1) % 97 or 2
    raw = f"{country}{check:02d}{bban}"
    return " ".join(raw[i : i + 4] for i in range(0, len(raw), 4))


def dni(good: bool = True) -> str:
    n = rng.randint(10_000_000, 99_999_999)
    letter = "TRWAGMYFPDXBNJZSQVHLCKE"[n % 23]
    if not good:
        letter = "TRWAGMYFPDXBNJZSQVHLCKE"[(n + 1) % 23]
    return f"{n}{letter}"


def pem(label: str) -> str:
    body = "\n".join(pick(B64, 64) for _ in range(4))
    return f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"


def jwt() -> str:
    def seg(obj: dict[str, object]) -> str:
        raw = json.dumps(obj, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    claims = {"sub": str(rng.randint(1000, 99999)), "iat": rng.randint(1.7e9, 1.8e9)}
    return f"{seg({'alg': 'HS256', 'typ': 'JWT'})}.{seg(claims)}.{pick(URLSAFE, 43)}"


def sas() -> str:
    return (
        f"https://acct{pick(LOWER_DIGITS, 6)}.blob.core.windows.net/memory?sv=2022-11-02&ss=b"
        f"&srt=co&sp=rl&se=2026-05-01T00:00:00Z&spr=https&sig={pick(ALNUM, 43)}%3D"
    )


PROSE = [
    "- Pasted from the deploy log (fake, for the scanner test): {s}",
    "- Aus dem Chat kopiert, bitte rotieren: {s}",
    "- Copié depuis le ticket (faux, pour le test) : {s}",
    "- Del registro de despliegue de ayer: {s}",
    "- Sam shared this in chat yesterday, rotate it: {s}",
    "- Staging setup uses {s} until the vault migration lands.",
    "- Note to self: the CI job failed because `{s}` had expired.",
    "- Config snippet from the incident review:\n\n    {s}\n",
]


def prose(secret: str) -> str:
    return rng.choice(PROSE).format(s=secret)


def in_json(text: str) -> str:
    return text.replace("\n", "\\n")


def ppk() -> str:
    public = "\n".join(pick(B64, 64) for _ in range(6))
    private = "\n".join(pick(B64, 64) for _ in range(14))
    return (
        f"PuTTY-User-Key-File-2: ssh-rsa\nEncryption: none\nComment: rsa-key-2026\n"
        f"Public-Lines: 6\n{public}\nPrivate-Lines: 14\n{private}\nPrivate-MAC: {pick(HEX, 40)}"
    )


def pem_base64() -> str:
    label = rng.choice(["RSA PRIVATE KEY", "EC PRIVATE KEY", "PRIVATE KEY"])
    return base64.b64encode((pem(label) + "\n").encode()).decode()


def bsn() -> str:
    while True:
        d = [rng.randint(0, 9) for _ in range(8)]
        last = sum(x * w for x, w in zip(d, range(9, 1, -1), strict=True)) % 11
        if last < 10:
            return "".join(map(str, d)) + str(last)


def pesel() -> str:
    year, month, day = rng.randint(1950, 2015), rng.randint(1, 12), rng.randint(1, 28)
    month += 20 if year >= 2000 else 0
    d = [int(c) for c in f"{year % 100:02d}{month:02d}{day:02d}{rng.randint(0, 9999):04d}"]
    check = (
        10 - sum(x * w for x, w in zip(d, (1, 3, 7, 9, 1, 3, 7, 9, 1, 3), strict=True)) % 10
    ) % 10
    return "".join(map(str, d)) + str(check)


def cpf(written: bool = True) -> str:
    d = [rng.randint(0, 9) for _ in range(9)]
    for n in (9, 10):
        d.append(sum(x * w for x, w in zip(d, range(n + 1, 1, -1), strict=True)) * 10 % 11 % 10)
    s = "".join(map(str, d))
    return f"{s[:3]}.{s[3:6]}.{s[6:9]}-{s[9:]}" if written else s


def personnummer() -> str:
    body = f"{rng.randint(40, 99):02d}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}"
    return f"{body}-{luhn_complete(body, 10)[6:]}"


def hetu() -> str:
    day, month, year = rng.randint(1, 28), rng.randint(1, 12), rng.randint(0, 99)
    sign = rng.choice("-A")
    serial = rng.randint(2, 899)
    number = int(f"{day:02d}{month:02d}{year:02d}{serial:03d}")
    check = "0123456789ABCDEFHJKLMNPRSTUVWXY"[number % 31]
    return f"{day:02d}{month:02d}{year:02d}{sign}{serial:03d}{check}"


def fodselsnummer() -> str:
    while True:
        d = [
            int(c)
            for c in f"{rng.randint(1, 28):02d}{rng.randint(1, 12):02d}{pick(string.digits, 5)}"
        ]
        for weights in ((3, 7, 6, 1, 8, 9, 4, 5, 2), (5, 4, 3, 2, 7, 6, 5, 4, 3, 2)):
            d.append((11 - sum(x * w for x, w in zip(d, weights, strict=True)) % 11) % 11)
        if d[-1] < 10 and d[-2] < 10:
            return "".join(map(str, d))


def nir() -> str:
    body = (
        f"{rng.choice('12')}{rng.randint(50, 99)}{rng.randint(1, 12):02d}{rng.randint(1, 95):02d}"
        f"{pick(string.digits, 3)}{pick(string.digits, 3)}"
    )
    return f"{body}{97 - int(body) % 97:02d}"


CF_ODD = [1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25]
CF_ODD += [24, 23]


def codice_fiscale(good: bool = True) -> str:
    letters = string.ascii_uppercase
    body = (
        pick(letters, 6)
        + f"{rng.randint(0, 99):02d}"
        + rng.choice("ABCDEHLMPRST")
        + f"{rng.randint(1, 28) + rng.choice([0, 40]):02d}"
        + rng.choice(letters)
        + pick(string.digits, 3)
    )
    value = [int(c) if c.isdigit() else ord(c) - 65 for c in body]
    total = sum(CF_ODD[v] for v in value[0::2]) + sum(value[1::2])
    return body + chr(65 + (total + (0 if good else 1)) % 26)


def belgian_number(good: bool = True) -> str:
    year = rng.randint(0, 99)
    born = f"{year:02d}{rng.randint(1, 12):02d}{rng.randint(1, 28):02d}{rng.randint(1, 997):03d}"
    check = 97 - int(("2" if year < 20 else "") + born) % 97
    if not good:  # neither century's check
        valid = {97 - int(born) % 97, 97 - int("2" + born) % 97}
        check = rng.choice([c for c in range(1, 98) if c not in valid])
    return f"{born[:2]}.{born[2:4]}.{born[4:6]}-{born[6:]}.{check:02d}"


def ssn_digits() -> str:
    return f"{rng.randint(100, 665)}{rng.randint(10, 99)}{rng.randint(1000, 9999)}"


def password() -> str:
    return mixed(rng.randint(8, 14), ALNUM + "!#%&*@")


def symbol_password() -> str:
    """A password as people make them: symbols anywhere, the first character too."""
    return mixed(rng.randint(10, 16), ALNUM + "!#%^&*+-_.")


# a password said in a sentence with several words between the keyword and the verb
SPOKEN_LEADS = [
    "the password for the {} admin account is ",
    "Note: the password of the {} box in the lab is ",
    "Das Passwort für den {}-Admin lautet ",
    "Das Kennwort vom {} Testsystem ist ",
    "Le mot de passe du {} du bureau est « ",
    "le mot de passe pour le compte {} est ",
    "La contraseña del servidor de {} es ",
    "la contraseña para la cuenta de {} es ",
    "A senha do banco de dados de {} é ",
    "a senha para o painel do {} é ",
    "la password del server di {} è ",
    "het wachtwoord van de {} server is ",
]
SYSTEMS = ["grafana", "NAS", "wifi", "staging", "homologação", "pruebas", "jenkins", "sonarqube"]


def spoken_password() -> tuple[str, str]:
    lead = rng.choice(SPOKEN_LEADS).format(rng.choice(SYSTEMS))
    return lead, symbol_password()


def django_secret_key() -> str:
    return mixed(50, ALNUM + "!@#$%^&*(-_=+)")


# kind -> makers of one fake secret each; every maker is used twice (different random draws)
MAKERS: dict[str, list[Callable[[], str]]] = {
    "private_key": [
        lambda: pem("RSA PRIVATE KEY"),
        lambda: pem("OPENSSH PRIVATE KEY"),
        lambda: pem("EC PRIVATE KEY"),
        lambda: pem("PRIVATE KEY"),
        lambda: pem("ENCRYPTED PRIVATE KEY"),
        lambda: pem("PGP PRIVATE KEY BLOCK"),
        ppk,
        pem_base64,
        lambda: in_json(pem("PRIVATE KEY")),
        lambda: "AGE-SECRET-KEY-1" + pick("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58),
    ],
    "azure_connection_string": [
        lambda: (
            f"DefaultEndpointsProtocol=https;AccountName=memsync{pick(LOWER_DIGITS, 5)};"
            f"AccountKey={pick(B64, 86)}==;EndpointSuffix=core.windows.net"
        ),
        lambda: (
            f"Endpoint=sb://bus-{pick(LOWER_DIGITS, 6)}.servicebus.windows.net/;"
            f"SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={pick(B64, 43)}="
        ),
    ],
    "azure_account_key": [
        lambda: ("storage account key ", f"{pick(B64, 86)}=="),
        lambda: ("key1 of the backup account: ", f"{pick(B64, 86)}=="),
    ],
    "azure_sas_token": [
        sas,
        lambda: f"?sig={pick(ALNUM, 43)}%3D&se=2026-06-01T00%3A00%3A00Z&sp=r&sv=2022-11-02&sr=b",
    ],
    "azure_client_secret": [lambda: f"{pick(ALNUM, 3)}8Q~{mixed(34, URLSAFE + '.~')}"] * 2,
    "azure_devops_pat": [
        lambda: ("AZURE_DEVOPS_EXT_PAT=", pick(string.ascii_lowercase + "234567", 52)),
        lambda: ("ADO_PAT: ", pick(string.ascii_lowercase + "234567", 52)),
        lambda: (
            f"my Azure DevOps PAT for the {rng.choice(['pipelines', 'release feed', 'wiki'])} is ",
            mixed(76) + "AZDO" + mixed(4),
        ),
        lambda: mixed(76) + "AZDO" + mixed(4),
    ],
    "aws_access_key": [
        lambda: "AKIA" + pick(string.ascii_uppercase + "234567", 16),
        lambda: "ASIA" + pick(string.ascii_uppercase + "234567", 16),
    ],
    "aws_secret_key": [
        lambda: f"aws_secret_access_key = {mixed(40, B64)}",
        lambda: ("aws secret access key: ", mixed(40, B64)),
        lambda: f"AWS_SECRET_ACCESS_KEY={mixed(40, B64)}",
        lambda: (
            f"User name,Password,Access key ID,Secret access key\nsam,,AKIA{pick(UPPER32, 16)},",
            mixed(40, B64),
        ),
        lambda: (
            f"the key for the s3 {rng.choice(['uploader', 'backup', 'log shipping'])} bot is ",
            mixed(40, B64),
        ),
        lambda: (f"IAM user ci-{pick(LOWER_DIGITS, 4)}, secret ", mixed(40, B64)),
        lambda: ("the bucket's access secret (rotate monthly): ", mixed(40, B64)),
    ],
    "gcp_api_key": [lambda: "AIza" + mixed(35, URLSAFE)] * 2,
    "anthropic_key": [lambda: "sk-ant-api03-" + mixed(93, URLSAFE)] * 2,
    "openai_key": [
        lambda: "sk-proj-" + mixed(48, URLSAFE),
        lambda: "sk-" + mixed(48),
    ],
    "ai_api_key": [
        lambda: "hf_" + pick(string.ascii_letters, 34),
        lambda: "hf_" + mixed(34),
        lambda: "gsk_" + mixed(52),
        lambda: "xai-" + mixed(80),
        lambda: "pplx-" + mixed(48),
        lambda: "r8_" + mixed(37),
    ],
    "github_token": [
        lambda: "ghp_" + mixed(36),
        lambda: "gho_" + mixed(36),
        lambda: "ghs_" + mixed(36),
        lambda: "github_pat_11" + mixed(20) + "_" + mixed(59),
    ],
    "gitlab_token": [
        lambda: "glpat-" + mixed(20, URLSAFE),
        lambda: "glptt-" + pick(HEX, 40),
        lambda: "gldt-" + mixed(20),
        lambda: "GR1348941" + mixed(20),
    ],
    "bitbucket_token": [
        lambda: "ATBB" + mixed(32),
        lambda: "ATBB" + mixed(32) + pick(HEX, 8).upper(),
        lambda: "ATATT3xFfGF0" + mixed(180, URLSAFE),
    ],
    "slack_token": [
        lambda: f"xoxb-{pick(string.digits, 12)}-{pick(string.digits, 13)}-{mixed(24)}",
        lambda: f"xoxp-{pick(string.digits, 12)}-{pick(string.digits, 12)}-{pick(HEX, 32)}",
    ],
    "webhook_url": [
        lambda: (
            f"https://hooks.slack.com/services/T{mixed(8).upper()}/B{mixed(10).upper()}/"
            + mixed(24)
        ),
        lambda: f"https://discord.com/api/webhooks/{pick(string.digits, 18)}/{mixed(68, URLSAFE)}",
        lambda: f"hooks.slack.com/services/T{mixed(8).upper()}/B{mixed(10).upper()}/" + mixed(24),
        lambda: (
            f"https://contoso.webhook.office.com/webhookb2/{uuid.UUID(int=rng.getrandbits(128))}"
            f"@{uuid.UUID(int=rng.getrandbits(128))}/IncomingWebhook/{pick(HEX, 32)}/"
            f"{uuid.UUID(int=rng.getrandbits(128))}"
        ),
    ],
    "discord_token": [lambda: f"M{mixed(25)}.{mixed(6)}.{mixed(38, URLSAFE)}"] * 2,
    "stripe_key": [
        lambda: "sk_live_" + mixed(99),
        lambda: "rk_live_" + mixed(24),
        lambda: "whsec_" + mixed(32),
    ],
    "payment_token": [
        lambda: f"access_token$production${pick(LOWER_DIGITS, 16)}${pick(HEX, 32)}",
        lambda: "sq0atp-" + mixed(22, URLSAFE),
        lambda: "sq0csp-" + mixed(43, URLSAFE),
        lambda: "EAAA" + mixed(60, URLSAFE),
        lambda: "rzp_live_" + mixed(14),
    ],
    "registry_token": [
        lambda: "npm_" + mixed(36),
        lambda: "pypi-AgEIcHlwaS5vcmc" + mixed(70, URLSAFE),
        lambda: "rubygems_" + pick(HEX, 48),
        lambda: "oy2" + pick(LOWER_DIGITS, 43),
        lambda: "dckr_pat_" + mixed(27, URLSAFE),
        lambda: (
            '"auths": {"ghcr.io": {"auth": "',
            base64.b64encode(f"sam:{password()}".encode()).decode(),
        ),
    ],
    "email_sms_key": [
        lambda: f"SG.{mixed(22, URLSAFE)}.{mixed(43, URLSAFE)}",
        lambda: "key-" + pick(HEX, 32),
        lambda: "SK" + pick(HEX, 32),
        lambda: f"{pick(HEX, 32)}-us{rng.randint(1, 21)}",
        lambda: f"xkeysib-{pick(HEX, 64)}-{mixed(16)}",
    ],
    "infra_token": [
        lambda: "hvs." + mixed(90, URLSAFE),
        lambda: "dop_v1_" + pick(HEX, 64),
        lambda: "HRKU-AA" + mixed(58, URLSAFE),
        lambda: f"{mixed(14)}.atlasv1.{mixed(67, URLSAFE)}",
        lambda: "sntryu_" + pick(HEX, 64),
        lambda: f"v1.0-{pick(HEX, 24)}-{pick(HEX, 146)}",
        lambda: "s." + mixed(24),
        lambda: "hvs." + mixed(rng.randint(24, 30), URLSAFE),
        lambda: (
            f"https://{pick(HEX, 32)}@o{rng.randint(10**5, 10**6)}.ingest.sentry.io/"
            f"{rng.randint(10**6, 10**7)}"
        ),
        lambda: "dapi" + pick(HEX, 32),
        lambda: f"tskey-auth-{mixed(12)}-{mixed(30)}",
        lambda: "pul-" + pick(HEX, 40),
        lambda: ("Terraform Cloud token: ", f"{mixed(14)}.atlasv1.{mixed(67, URLSAFE)}"),
    ],
    "saas_token": [
        lambda: "shpat_" + pick(HEX, 32),
        lambda: "shpss_" + pick(HEX, 32),
        lambda: "shpca_" + pick(HEX, 32),
        lambda: "NRAK-" + mixed(27).upper(),
        lambda: "lin_api_" + mixed(40),
        lambda: f"PMAK-{pick(HEX, 24)}-{pick(HEX, 34)}",
        lambda: f"{rng.randint(10**8, 10**9)}:AA{mixed(33, URLSAFE)}",
    ],
    "jwt": [jwt, jwt],
    "url_password": [
        lambda: f"postgres://app:{mixed(16)}@db.internal:5432/memsync",
        lambda: f"mongodb+srv://admin:{mixed(12)}@cluster0.mongodb.net/test",
        lambda: f"redis://:{mixed(20)}@cache.internal:6379/0",
        lambda: f"amqp://svc:{mixed(14)}@rabbit.local/vhost",
    ],
    "password": [
        lambda: f"DB_PASSWORD={mixed(14, ALNUM + '!#%&')}",
        lambda: f"password: {mixed(12, ALNUM + '@$')}",
        lambda: f'client_secret="{mixed(32)}"',
        lambda: f"DD_API_KEY={pick(HEX, 32)}",
        lambda: f"CLOUDFLARE_API_TOKEN={mixed(40, URLSAFE)}",
        lambda: f"POSTMARK_SERVER_TOKEN={uuid.UUID(int=rng.getrandbits(128))}",
        lambda: f"HEROKU_API_KEY={uuid.UUID(int=rng.getrandbits(128))}",
        lambda: f"TWILIO_AUTH_TOKEN={pick(HEX, 32)}",
        lambda: f"spring.datasource.password={mixed(12)}",
        lambda: f"SENTRY_AUTH_TOKEN={pick(HEX, 64)}",
        lambda: ("the wifi password is ", password()),
        lambda: ("pw: ", password()),
        lambda: f"pwd={password()}",
        lambda: ("wachtwoord: ", password()),
        lambda: ("Passwort: ", password()),
        lambda: ("mot de passe : ", password()),
        lambda: ("contraseña: ", password()),
        lambda: f"db.internal:5432:memsync:app:{password()}",
        lambda: (
            "login sam / pw ",
            rng.choice(["hunter", "summer", "dragon"]) + str(rng.randint(2, 99)),
        ),
        lambda: ("X-Auth-Key: ", pick(HEX, 37)),
        lambda: ("Datadog API key ", pick(HEX, 32)),
        lambda: ("Cloudflare API token: ", mixed(40, URLSAFE)),
        lambda: ("Postmark server token ", str(uuid.UUID(int=rng.getrandbits(128)))),
        lambda: (".npmrc: //npm.pkg.github.com/:_authToken=", mixed(36)),
        lambda: ("ran curl -u deploy:", password() + " https://ci.internal/api"),
        lambda: ("mysql -u root -p", mixed(12) + " orders"),
        lambda: f"PGPASSWORD={mixed(10)}",
        lambda: ("la password del router è ", password()),
        lambda: ("hasło do wifi w biurze: ", password()),
        lambda: ("Das WLAN-Passwort lautet: ", password()),
        lambda: ("mdp : ", password()),
        lambda: ("docker login -u sam -p ", password() + " registry.example.com"),
        lambda: ("psql --password=", password()),
        lambda: ("<password>", password() + "</password>"),
        lambda: ('<add key="ClearTextPassword" value="', password() + '" />'),
        lambda: ('$pw = ConvertTo-SecureString "', password() + '" -AsPlainText -Force'),
        lambda: ("管理画面のパスワード: ", password()),
        lambda: ("数据库密码：", password()),
        lambda: ("sunucu şifre: ", password()),
        lambda: ("пароль от сервера: ", password()),
        lambda: ("Authorization: SSWS ", "00" + mixed(40, URLSAFE)),
        spoken_password,
        spoken_password,
        spoken_password,
        spoken_password,
        spoken_password,
        spoken_password,
        lambda: ("settings.py: SECRET_KEY = '", django_secret_key() + "'"),
        lambda: ('DJANGO_SECRET = "', django_secret_key() + '"'),
        lambda: f"DB_PASSWORD={mixed(6)}({mixed(10)}",
        lambda: f"REDIS_PASS={mixed(5)}){mixed(6)}(",
        lambda: (
            'VAULT_UNSEAL_PASSPHRASE="',
            " ".join(
                rng.choice(["lantern", "falcon", "copper", "meadow", "tundra"]) for _ in "1234"
            )
            + f' {rng.randint(10, 99)}"',
        ),
        lambda: (
            "ssh key passphrase: '",
            " ".join(rng.choice(["Orbit", "velvet", "quarry", "lemon", "Harbor"]) for _ in "123")
            + "'",
        ),
        lambda: ("GITLAB_PAT=", mixed(26, URLSAFE)),
        lambda: ("GITHUB_PAT=", mixed(40)),
        lambda: (
            f"the token for the {rng.choice(['CI', 'deploy', 'metrics'])} service is ",
            mixed(32),
        ),
    ],
    "card_number": [
        lambda: luhn_complete("4", 16),
        lambda: grouped(luhn_complete("52", 16), " "),
        lambda: (lambda n: f"{n[:4]} {n[4:10]} {n[10:]}")(luhn_complete("37", 15)),
        lambda: grouped(luhn_complete("6011", 16), "-"),
    ],
    "iban": [
        lambda: iban("DE", 22),
        lambda: iban("GB", 22),
        lambda: iban("FR", 27),
        lambda: iban("NL", 18).replace(" ", ""),
        lambda: iban("ES", 24),
        lambda: iban("FR", 27).lower(),
    ],
    "national_id": [
        lambda: f"{rng.randint(100, 665)}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)}",
        lambda: f"AB {rng.randint(10, 99)} {rng.randint(10, 99)} {rng.randint(10, 99)} C",
        dni,
        lambda: ("BSN: ", bsn()),
        lambda: ("PESEL ", pesel()),
        cpf,
        lambda: ("CPF ", cpf(written=False)),
        lambda: ("personnummer ", personnummer()),
        lambda: (
            "SIN ",
            (lambda n: f"{n[:3]} {n[3:6]} {n[6:]}")(luhn_complete(rng.choice("1234567"), 9)),
        ),
        hetu,
        lambda: ("SSN ", ssn_digits()),
        lambda: ("fødselsnummer ", fodselsnummer()),
        lambda: ("numéro de sécurité sociale : ", nir()),
        lambda: ("Codice fiscale: ", codice_fiscale()),
        lambda: ("il CF del cliente è ", codice_fiscale()),
        lambda: ("Rijksregisternummer ", belgian_number()),
        lambda: ("NISS ", belgian_number().replace(".", "").replace("-", "")),
    ],
}


def secret_lines() -> list[dict[str, str]]:
    """Each maker gives a secret, or (the words that introduce it, the secret)."""
    out = []
    for kind, makers in MAKERS.items():
        for maker in makers * 2 if len(makers) < 5 else makers:
            made = maker()
            lead, secret = made if isinstance(made, tuple) else ("", made)
            out.append({"kind": kind, "secret": secret, "text": prose(lead + secret)})
    return out


def _sha(n: int) -> str:
    return hashlib.sha256(str(n).encode()).hexdigest()


def _png_data_uri() -> str:
    raw = b"\x89PNG\r\n\x1a\n" + bytes(rng.getrandbits(8) for _ in range(120))
    return "data:image/png;base64," + base64.b64encode(raw).decode()


NOTES = ["hello world, this is memsync", "notes about the deploy window"]

LOOKALIKES: list[Callable[[], str]] = [
    lambda: f"- Merged in commit {_sha(rng.random())[:40]} after review.",
    lambda: f"- Bisected to {_sha(rng.random())[:7]}; reverted in {_sha(rng.random())[:12]}.",
    lambda: f"- Request id {uuid.UUID(int=rng.getrandbits(128))} in the log.",
    lambda: f"- sha256 of the release tarball: {_sha(rng.random())}",
    lambda: f"- md5 {hashlib.md5(str(rng.random()).encode()).hexdigest()}  memsync-0.3.1.tar.gz",
    lambda: f"- Docker image pinned to ghcr.io/example/memsync@sha256:{_sha(rng.random())}",
    lambda: f"- Inline logo: ![logo]({_png_data_uri()})",
    lambda: (
        f"- Bumped to v{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 99)}"
        f"-rc.{rng.randint(1, 9)}"
    ),
    lambda: (
        f"- Node {rng.randint(14, 22)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"
        f", Python 3.{rng.randint(8, 13)}.{rng.randint(0, 9)}"
    ),
    lambda: f"- Ticket reference {bad_luhn()} opened on 2026-04-{rng.randint(10, 28)}",
    lambda: f"- Wire reference {iban('DE', 22, good=False)} was rejected by the bank form.",
    lambda: f"- Order number {rng.randint(10**15, 10**16 - 1)} shipped.",
    lambda: f"- Call me at +1 555-{rng.randint(100, 999)}-{rng.randint(1000, 9999)} after 5.",
    lambda: f"- The password reset flow sends a {rng.randint(4, 8)}-digit code.",
    lambda: f"- Token budget: {rng.randint(1, 900)}k per day; api_key rotation is monthly.",
    lambda: "- password: ${DB_PASSWORD}; api_key: <your key here>; secret: changeme",
    lambda: '- api_key = os.environ["OPENAI_API_KEY"] in the loader.',
    lambda: (
        f"- Connects to postgres://localhost:{rng.randint(5000, 6000)}/memsync without a password."
    ),
    lambda: "- Connection string template: postgres://user:${PGPASSWORD}@db/app",
    lambda: f"- Clone https://github.com/example/repo-{rng.randint(1, 99)}.git and run make.",
    lambda: (
        "- ssh git@github.com:example/memsync.git; key fingerprint SHA256:"
        + base64.b64encode(rng.randbytes(32)).decode().rstrip("=")
    ),
    lambda: f"- Public key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{pick(B64, 43)} sam@laptop",
    lambda: f"- The colour is #{pick(HEX, 6)} and the font {rng.randint(10, 16)}px.",
    lambda: (
        f"- Build {rng.randint(1000, 9999)} took {rng.randint(1, 59)}m{rng.randint(1, 59)}"
        f"s on runner-{pick(LOWER_DIGITS, 8)}."
    ),
    lambda: (
        f"- Ran scikit-learn {rng.randint(0, 1)}.{rng.randint(0, 5)}"
        f" with sk-learn style pipelines; task-{rng.randint(1, 99)} done."
    ),
    lambda: f"- npm_config_cache lives at ~/.npm; npm install left {rng.randint(1, 99)} warnings.",
    lambda: f"- SKU {pick(string.ascii_uppercase, 3)}-{rng.randint(1000, 9999)} is out of stock.",
    lambda: (
        f"- Secret: {rng.choice(['Nobody', 'Everyone', 'Sam'])}"
        f" reads the summary past the first line."
    ),
    lambda: f"- Ran it from pwd: /home/sam/projects/memsync-{rng.randint(1, 9)} and it worked.",
    lambda: "- Encoded text: " + base64.b64encode(rng.choice(NOTES).encode()).decode(),
    lambda: (
        f"- Released on {rng.randint(2020, 2026)}-{rng.randint(1, 12):02d}"
        f"-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z"
    ),
    lambda: (
        f"- Server at 10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
        f":{rng.randint(1000, 9999)}"
    ),
    lambda: f"- Zip code {rng.randint(10000, 99999)}, room {rng.randint(100, 999)}-B.",
    lambda: (
        f"- Cache key-{rng.choice(['value', 'store', 'prefix'])}"
        f" design; see key_{rng.randint(1, 9)}.md"
    ),
    lambda: f"- Coupon code ABCD{rng.randint(10, 99)} EFGH 1234 IJKL expired.",
    lambda: f"- Shipment {dni(good=False)} arrived at the depot.",
    lambda: (
        f"- Use AIzaSy placeholders only in docs; the key lives in the vault (ref {pick(HEX, 8)})."
    ),
    lambda: f"- xoxo from the team, see you on the {rng.randint(1, 28)}th",
    lambda: "- The JWT header eyJhbGciOiJIUzI1NiJ9 decodes to alg HS256.",
    lambda: (
        f"- Go module github.com/example/memsync v0.0.0-{rng.randint(2020, 2026)}"
        f"0101000000-{pick(HEX, 12)}"
    ),
]


def _b64_64_bytes() -> str:
    return base64.b64encode(rng.randbytes(64)).decode()


def _digits(n: int) -> str:
    return str(rng.randint(10 ** (n - 1), 10**n - 1))


TEST_CARDS = [
    "4242 4242 4242 4242", "4000 0566 5566 5556", "5555 5555 5555 4444", "2223 0031 2200 3222",
    "5105 1051 0510 5100", "3782 822463 10005", "3714 496353 98431", "6011 1111 1111 1117",
    "6011 0009 9013 9424", "3056 9300 0902 0004", "3566 0020 2036 0505", "4111 1111 1111 1111",
    "4012 8888 8888 1881", "4000 0000 0000 0002", "4000 0025 0000 3155", "5200 8282 8282 8210",
]  # fmt: skip

# The second set: what documentation, configs and tools put in memory that looks like a secret
# and is not one. Each family is caught by one rule (placeholder marks, published examples, a
# key name without a secret-shaped value, a context word missing), not by an exception per line.
DOC_LOOKALIKES: list[Callable[[], str]] = [
    lambda: "- AWS docs use aws_access_key_id = AKIAIOSFODNN7EXAMPLE in every snippet.",
    lambda: "- aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY (from the docs)",
    lambda: "- export AWS_ACCESS_KEY_ID=AKIAXXXXXXXXXXXXXXXX before running the script",
    lambda: f"- The README shows GITHUB_TOKEN=ghp_{'x' * 36} as the format.",
    lambda: "- SLACK_BOT_TOKEN=xoxb-your-bot-token goes into .env.example",
    lambda: "- Set api_key: <your-token> and secret: ${SECRET} in the template.",
    lambda: "- The chart renders token: {{ token }} and password: {{ .Values.password }}",
    lambda: f"- Default admin password: changeme (rotate on first login, ticket {_digits(4)})",
    lambda: "- The log prints password=******** and token=****",
    lambda: '- password = getpass.getpass("Vault password: ") in the helper script',
    lambda: (
        "- db_password: !vault |\n          $ANSIBLE_VAULT;1.1;AES256\n          " + pick(HEX, 64)
    ),
    lambda: "- A PEM file starts with -----BEGIN PRIVATE KEY----- and ends with the END line.",
    lambda: (
        "- The kubeconfig had certificate-authority-data: "
        + base64.b64encode(b"-----BEGIN CERTIFICATE-----\nMIIB" + rng.randbytes(40)).decode()
    ),
    lambda: f"- Stripe test card {rng.choice(TEST_CARDS)}, any future expiry, any CVC.",
    lambda: (
        "- IBAN examples from the docs: GB82 WEST 1234 5698 7654 32 and DE89 3704 0044 0532 0130 00"
    ),
    lambda: f"- Release signature (ed25519): {_b64_64_bytes()}",
    lambda: (
        "- sha512 digest: " + base64.b64encode(hashlib.sha512(rng.randbytes(8)).digest()).decode()
    ),
    lambda: "- The password reset mail goes out within 5 minutes; pass rate was 98.5%.",
    lambda: f"- Run pwd then ls; it printed /home/sam/build-{rng.randint(1, 99)} as expected.",
    lambda: "- Passwort vergessen? Der Link steht im Wiki, Abschnitt 4.2.",
    lambda: "- Le mot de passe est dans le coffre de l'équipe (pas ici).",
    lambda: f"- Order {_digits(11)} and invoice {_digits(9)} were paid on time.",
    lambda: f"- Build 2026{rng.randint(1, 12):02d}{rng.randint(10, 28)}-{_digits(4)} passed.",
    lambda: f"- pass@k = 0.{rng.randint(10, 99)} for k = {rng.randint(1, 10)} on the eval set.",
    lambda: "- In the BSN field the form wants nine digits; ours was left empty.",
    lambda: f"- sin(x) ~ x for small x, checked with {_digits(9)} samples.",
    lambda: "- Vault path secret/data/memsync/prod holds the DSN; s.toString() prints it.",
    lambda: f"- Tracking number {_digits(3)} {_digits(3)} {_digits(3)} from the courier.",
    lambda: f"- Token count {rng.randint(1000, 99999)}; api key rotation runs monthly.",
    lambda: "- Use hf_hub_download() and HfApi().whoami() to check the login.",
    lambda: f"- Sentry DSN format: https://<key>@o0.ingest.sentry.io/{_digits(7)}",
    lambda: f"- Account {uuid.UUID(int=rng.getrandbits(128))} owns the storage.",
    lambda: f"- Checksum sha1:{pick(HEX, 40)} matches the mirror.",
    lambda: f"- Commit {pick(HEX, 40)} and tag v{rng.randint(1, 9)}.{rng.randint(0, 9)}.0",
    lambda: "- api_key: REPLACE_ME in config.example.yaml; token: TODO; secret: SET_IN_CI",
    lambda: "- Passwort: siehe KeePass-Eintrag 'Router'; mot de passe : voir le coffre",
    lambda: f"- secret_name: db-credentials-v{rng.randint(2, 9)} (the Kubernetes Secret object)",
    lambda: "- Use `pass show work/vpn`; curl -u $USER:$TOKEN in CI, -u user:pass in the docs.",
    lambda: f"- The wifi password is on the fridge; pw reset took {rng.randint(2, 9)} minutes.",
    lambda: f"- mysql -h db -p (prompts); pg_dump -p {rng.randint(5000, 6000)} -U app",
    lambda: f"- fnr field empty; order {_digits(11)} shipped to Oslo.",
    lambda: "- Use --password-stdin with docker login; the mysql -p flag prompts for it.",
    lambda: "- secretKeyRef: name: db-secret, key: password; <password></password> stays empty",
    lambda: (
        "- Stripe test card 4000 0000 0000 9995 declines; IBAN field DE00 0000 0000 0000 0000 00"
    ),
    lambda: "- pgpass format is hostname:port:database:username:password (one per line)",
    lambda: (
        f"- Ticket SEC-{rng.randint(2020, 2026)}-{_digits(4)}: rotate the Stripe key next quarter"
    ),
    lambda: "- Authorization: see the auth section of the runbook; token_type: bearer",
    lambda: f"- INSEE code {_digits(5)}, SIRET {_digits(14)} on the invoice.",
    # prose about passwords with words between the keyword and the verb, in each language
    lambda: f"- The password for the {rng.choice(SYSTEMS)} admin account is stored in the vault.",
    lambda: "- The password policy is strict: 14 characters, rotated yearly.",
    lambda: f"- Das Passwort für den {rng.choice(SYSTEMS)}-Admin steht im Tresor.",
    lambda: "- Le mot de passe du wifi du bureau est affiché à l'accueil.",
    lambda: f"- La contraseña del servidor de {rng.choice(SYSTEMS)} es la misma de siempre.",
    lambda: "- A senha do banco de dados de homologação é trocada todo mês.",
    lambda: f"- The password of the build server is rotated every {rng.randint(30, 90)} days.",
    lambda: "- the token for the session is refreshed every 3600 seconds",
    # code that reads a secret, and pipeline macros, after secret-named keys
    lambda: '- SECRET_KEY = env("DJANGO_SECRET_KEY") in settings.py',
    lambda: "- DB_PASSWORD = os.getenv(DB_PASS) and AZURE_DEVOPS_EXT_PAT=$(System.AccessToken)",
    lambda: f"- The PAT for the release pipeline expires in {rng.randint(30, 90)} days.",
    lambda: '- GPG_PASSPHRASE="see the team vault"; passphrase = "correct horse battery staple"',
    # hex ids and base64 digests next to AWS words
    lambda: f"- The key for the s3 cache bucket is commit {pick(HEX, 40)}.",
    lambda: (
        "- IAM key fingerprint (sha256): "
        + base64.b64encode(hashlib.sha256(rng.randbytes(8)).digest()).decode()
    ),
    lambda: (
        "- bucket key sha1 "
        + base64.b64encode(hashlib.sha1(rng.randbytes(8)).digest()).decode()
        + f", ETag {pick(HEX, 32)}"
    ),
    # documentation examples
    lambda: (
        "- The jwt.io sample eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibm"
        "FtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
    ),
    lambda: "- Stripe's API reference: curl https://api.stripe.com/v1/charges "
    "-u sk_test_4eC39HqLyjWDarjtT1zdp7dc:",
    lambda: "- For the form demo use 078-05-1120 (the Woolworth card) or 123-45-6789.",
    lambda: "- terraform plan: ~ password = (sensitive value); + api_key = (known after apply)",
    # personal numbers failing their checksum, and published examples
    lambda: f"- Codice cliente {codice_fiscale(good=False)} nel gestionale.",
    lambda: f"- Rijksregisternummer {belgian_number(good=False)} was rejected by the form.",
    lambda: "- The codice fiscale example RSSMRA85T10A562S and the Belgian 85.07.30-033.28",
    # memsync's own advice
    lambda: f"- Ran memsync push --allow password note_{rng.randint(1, 99):03d}.md to send it.",
]


def lookalike_lines() -> list[str]:
    return [make() for _ in range(5) for make in LOOKALIKES + DOC_LOOKALIKES]


def main() -> None:
    with (HERE / "secrets.jsonl").open("w", encoding="utf-8") as f:
        for row in secret_lines():
            f.write(json.dumps(row) + "\n")
    with (HERE / "lookalikes.jsonl").open("w", encoding="utf-8") as f:
        for line in lookalike_lines():
            f.write(json.dumps({"text": line}) + "\n")


if __name__ == "__main__":
    main()
