"""The checksums of personal numbers the scanner's table names: payment cards (Luhn), IBANs
(mod 97), and national ids whose number carries a check digit or letter. Each check takes the
matched text and says whether it is a valid number of its kind that is not a published example.
"""

from __future__ import annotations

import re

_DOUBLED = {str(d): (d * 2 - 9 if d > 4 else d * 2) for d in range(10)}


def luhn(digits: str) -> bool:
    odd = sum(map(int, digits[-1::-2]))
    even = sum(map(_DOUBLED.__getitem__, digits[-2::-2]))
    return (odd + even) % 10 == 0


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Published test numbers of card processors (Stripe, Braintree, Adyen, PayPal) that the
# low-variety rule of documented_card does not already cover.
TEST_CARDS = _words(
    """
    378282246310005 371449635398431 378734493671000 5105105105105100 5200828282828210
    2223003122003222 6011000990139424 6011981111111113 3056930009020004 30569309025904
    38520000023237 36227206271667 3566002020360505 3530111333300000 6200000000000047
    4012888888881881 4000002500003155 4000002760003184 4000000760000002 4000001240000000
    5019717010103742 4917610000000000 4988438843884305 4035501000000008 2222400070000005
    """
)


def documented_card(digits: str) -> bool:
    """A published test card: on a processor's list, or with an account part (between the
    issuer prefix and the check digit) of at most two different digits (4242 4242 4242 4242,
    4111 1111 1111 1111, 5555 5555 5555 4444); random account numbers almost never are."""
    return digits in TEST_CARDS or len(set(digits[6:-1])) <= 2


# words that label a bare number as something other than a card ("Order number 5466…")
OTHER_NUMBER = re.compile(
    r"(?i)\b(?:order|invoice|tracking|ticket|reference|ref|shipment|transaction|request|build"
    r"|parcel|account|customer)\b[^\n\d]{0,15}$"
)


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

# The example IBANs of the ISO 13616 registry, the European Banking Resources and Wikipedia
# pages that documentation copies.
EXAMPLE_IBANS = _words(
    """
    GB82WEST12345698765432 DE89370400440532013000 GB29NWBK60161331926819 FR1420041010050500013M02606
    NL91ABNA0417164300 ES9121000418450200051332 IT60X0542811101000000123456 BE68539007547034
    AT611904300234573201 CH9300762011623852957 DK5000400440116243 FI2112345600000785
    IE29AIBK93115212345678 LU280019400644750000 NO9386011117947 PL61109010140000071219812874
    PT50000201231234567890154 SE4550000000058398257466 GR1601101250000000012300695
    CZ6508000000192000145399 HU42117730161111101800000000 SA0380000000608010167519
    """
)


def iban_valid(value: str) -> bool:
    """An IBAN of its country's length whose mod-97 check digits hold, not a published
    example."""
    iban = value.replace(" ", "").upper()
    if _IBAN_LENGTHS.get(iban[:2]) != len(iban) or iban in EXAMPLE_IBANS:
        return False
    moved = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _digits(value: str) -> str:
    return "".join(c for c in value if c.isdigit())


def dni(value: str) -> bool:
    """A Spanish DNI or NIE: its letter is the number mod 23 (an NIE's X/Y/Z counts 0/1/2)."""
    value = value.replace("-", "")
    number = "XYZ".index(value[0]) if value[0] in "XYZ" else ""
    digits = f"{number}{value[1:-1] if number != '' else value[:-1]}"
    return len(digits) == 8 and "TRWAGMYFPDXBNJZSQVHLCKE"[int(digits) % 23] == value[-1]


def _valid_date(year: int, month: int, day: int) -> bool:
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    days = (31, 29 if leap else 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
    return 1 <= month <= 12 and 1 <= day <= days[month - 1]


# numbers the Social Security Administration voided after they were printed as examples
# (078-05-1120 on a wallet insert) or that stand in every form's example (123-45-6789)
PUBLISHED_SSNS = frozenset({"078051120", "123456789", "219099999", "457555462"})


def ssn(value: str) -> bool:
    """A US SSN's area, group and serial ranges (no 000, 666, 9xx areas; no 00 group), and
    not one of the published examples."""
    d = _digits(value)
    if d in PUBLISHED_SSNS:
        return False
    return d[:3] not in ("000", "666") and d[0] != "9" and d[3:5] != "00" and d[5:] != "0000"


def bsn(value: str) -> bool:
    """A Dutch BSN: the 11-proof (weights 9..2, the last digit -1) holds."""
    d = _digits(value)
    total = sum(int(c) * w for c, w in zip(d[:8], range(9, 1, -1), strict=True)) - int(d[8])
    return len(set(d)) > 1 and total % 11 == 0


def pesel(value: str) -> bool:
    """A Polish PESEL: a birth date (month + 20 per century) and its weighted check digit."""
    d = [int(c) for c in value]
    weights = (1, 3, 7, 9, 1, 3, 7, 9, 1, 3)
    check = (10 - sum(x * w for x, w in zip(d[:10], weights, strict=True)) % 10) % 10
    month, century = d[2] * 10 + d[3], 1900
    for offset, base in ((80, 1800), (60, 2200), (40, 2100), (20, 2000)):
        if month > offset:
            month, century = month - offset, base
            break
    return check == d[10] and _valid_date(century + d[0] * 10 + d[1], month, d[4] * 10 + d[5])


def cpf(value: str) -> bool:
    """A Brazilian CPF: two mod-11 check digits, not one digit repeated."""
    d = [int(c) for c in _digits(value)]
    if len(set(d)) == 1:
        return False
    for n in (9, 10):
        total = sum(x * w for x, w in zip(d[:n], range(n + 1, 1, -1), strict=True))
        if (total * 10 % 11) % 10 != d[n]:
            return False
    return True


def personnummer(value: str) -> bool:
    """A Swedish personnummer (or samordningsnummer, day + 60): a date and Luhn over the ten
    digits YYMMDDNNNC."""
    d = _digits(value)[-10:]
    day = int(d[4:6])
    return luhn(d) and _valid_date(2000 + int(d[:2]), int(d[2:4]), day - 60 if day > 60 else day)


def sin_valid(value: str) -> bool:
    """A Canadian SIN: Luhn over nine digits, not starting with 0 or 8."""
    d = _digits(value)
    return d[0] not in "08" and luhn(d)


def nir(value: str) -> bool:
    """A French NIR: sex, birth year and month, place, order, and the key 97 - number mod 97
    (Corsica's 2A / 2B count as 19 / 18)."""
    v = value.replace(" ", "")
    number = v[:13].replace("2A", "19", 1) if v[5:7] == "2A" else v[:13]
    number = number.replace("2B", "18", 1) if v[5:7] == "2B" else number
    month = int(v[3:5])
    return (1 <= month <= 12 or month >= 20) and 97 - int(number) % 97 == int(v[13:])


def fnr(value: str) -> bool:
    """A Norwegian fødselsnummer: a date (day + 40 for a D-number) and two mod-11 digits."""
    d = [int(c) for c in _digits(value)]
    for n, weights in ((9, (3, 7, 6, 1, 8, 9, 4, 5, 2)), (10, (5, 4, 3, 2, 7, 6, 5, 4, 3, 2))):
        check = (11 - sum(x * w for x, w in zip(d, weights, strict=False)) % 11) % 11
        if check != d[n]:
            return False
    day = d[0] * 10 + d[1]
    return _valid_date(2000, d[2] * 10 + d[3], day - 40 if day > 40 else day)


def hetu(value: str) -> bool:
    """A Finnish HETU: DDMMYY, century sign, serial, and the mod-31 check character."""
    century = 1800 if value[6] == "+" else 1900 if value[6] in "-YXWVU" else 2000
    if not _valid_date(century + int(value[4:6]), int(value[2:4]), int(value[:2])):
        return False
    return "0123456789ABCDEFHJKLMNPRSTUVWXY"[int(value[:6] + value[7:10]) % 31] == value[10]


# the odd-position values of the codice fiscale's check character, for A..Z (a digit counts as
# the letter at its place: 0 as A, 1 as B, …)
_CF_ODD = [1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8, 12, 14, 16, 10, 22, 25]
_CF_ODD += [24, 23]
_CF_OMOCODE = str.maketrans("LMNPQRSTUV", "0123456789")  # digits replaced in homonym codes
EXAMPLE_CODICI = frozenset({"RSSMRA85T10A562S", "RSSMRA80A01H501U", "MRARSS80A01H501T"})


def _cf_value(c: str) -> int:
    return int(c) if c.isdigit() else ord(c) - ord("A")


def codice_fiscale(value: str) -> bool:
    """An Italian codice fiscale: a valid day of birth (women + 40) and the check character
    (odd positions by their table, even ones by their value, the sum mod 26); not a published
    example."""
    v = value.upper()
    day = int(v[9:11].translate(_CF_OMOCODE))
    if v in EXAMPLE_CODICI or not (1 <= day <= 31 or 41 <= day <= 71):
        return False
    odd = sum(_CF_ODD[_cf_value(c)] for c in v[0:15:2])
    even = sum(_cf_value(c) for c in v[1:15:2])
    return chr(ord("A") + (odd + even) % 26) == v[15]


EXAMPLE_BELGIAN = frozenset({"85073003328", "17073003384", "93051822361"})


def belgian_number(value: str) -> bool:
    """A Belgian national number (rijksregisternummer, NISS): YYMMDD and a serial, and the check
    97 - the first nine digits mod 97 (with a 2 in front for those born from 2000); the month
    may be 0 or raised by 20 or 40 (a bis number), the day 0; not a published example."""
    d = _digits(value)
    month, day = int(d[2:4]) % 20, int(d[4:6])
    if len(d) != 11 or d in EXAMPLE_BELGIAN or month > 12 or day > 31 or d[6:9] in ("000", "999"):
        return False
    check = int(d[9:])
    return check in (97 - int(d[:9]) % 97, 97 - int("2" + d[:9]) % 97)
