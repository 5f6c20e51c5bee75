"""Random Fleet Engine IDs, legal and illegal, for the ID tests (issue 47), and the gateway's reading of a query.

Fleet Engine's rule for an ID: valid UTF-8 in Unicode NFC, at most 64 characters, none of `/ : ? , #`. Spaces, `+`,
`%`, `&`, `=`, accented letters and emoji are legal. A "character" here is a Unicode code point; the generator draws
only code points that are each a grapheme of their own (no combining marks, joiners, variation selectors or emoji
modifiers), so counting graphemes gives the same lengths. Two legal characters are left out: `*` (a token claim of
`*` means every trip, and the gateway refuses it as an ID) and `\\` (Fleet Engine's older documentation forbids it).

The draw is seeded: TOKENGATE_ID_SEED, default 47; the run prints the seed it used.
"""

import os
import random
import string
import unicodedata
import urllib.parse

SEED = int(os.environ.get("TOKENGATE_ID_SEED", "47"))
MAX_LENGTH = 64
FORBIDDEN = "/:?,#"

# Pools of code points, one grapheme each and NFC on their own, whatever their neighbours.
ASCII = string.ascii_letters + string.digits
PUNCTUATION = " +%&=-_.~@!$'()[];<>\"{}|^`"
LATIN = "àáâãäåçèéêëìíîïñòóôõöùúûüýÿÀÉÑÖÜßøæœ"
SCRIPTS = "αβγδεζηθλμπσωΩΣабвгдежзийклмнопрстуфхцчшщыэюяЖЯ中文字車旅程東京北京あいうえおかきくけこ가나다라마바사"
SYMBOLS = "€£¥©®°±µ¶§★♥✓"
ASTRAL = "😀😁😂🤣😃😄😅😉😊😍🚕🚗🚚📦🛵𝒜𝒞𝒟𝔸𝔹"
POOLS = [ASCII, ASCII, PUNCTUATION, LATIN, SCRIPTS, SYMBOLS, ASTRAL]

# Fixed legal IDs at the edges: text that looks percent-encoded, leading and trailing spaces, `+` and `=` and `&`.
EDGES = ["100%", "%41", "%2F%3A%23", "a+b", "+", " ", " lead", "trail ", "a  b", "=&=", "a=b&c=d", "é", "😀" * 64,
         "x" * 64]

# Not NFC: a decomposed é, a decomposed Å, the Ohm and Angstrom signs (NFC makes them Ω and Å), Hangul jamo.
NOT_NFC = ["e\u0301", "A\u030a", "\u2126", "\u212b", "\u1100\u1161"]


def _character(rng):
    return rng.choice(rng.choice(POOLS))


def _legal(rng, length):
    text = "".join(_character(rng) for _ in range(length))
    assert unicodedata.is_normalized("NFC", text) and not set(text) & set(FORBIDDEN + "*\\")
    return text


def legal_ids(count, seed=SEED):
    """`count` legal IDs: the edges, then random ones, a fifth of them exactly 64 characters."""
    rng = random.Random(seed)
    ids = list(EDGES)
    while len(ids) < count:
        ids.append(_legal(rng, MAX_LENGTH if rng.random() < 0.2 else rng.randint(1, MAX_LENGTH)))
    return ids[:count]


def illegal_ids(seed=SEED):
    """(id, why) pairs: each forbidden character in a random legal ID, 65 characters, and NFC's counterexamples."""
    rng = random.Random(seed + 1)
    cases = []
    for forbidden in FORBIDDEN:
        for _ in range(6):
            text = _legal(rng, rng.randint(0, MAX_LENGTH - 1))
            at = rng.randint(0, len(text))
            cases.append((text[:at] + forbidden + text[at:], "contains %r" % forbidden))
    for _ in range(6):
        cases.append((_legal(rng, MAX_LENGTH + 1), "65 characters"))
    for decomposed in NOT_NFC:
        text = _legal(rng, rng.randint(0, MAX_LENGTH - 2))
        at = rng.randint(0, len(text))
        cases.append((text[:at] + decomposed + text[at:], "not NFC (%s)" % decomposed.encode("unicode_escape").decode()))
    return cases


def gateway_reading(query):
    """A query string's parameters as the gateway reads them once issue 47 lands (as browsers and URLSearchParams
    encode): split on `&`, the name before the first `=`, the value with `+` read as a space and `%XX` decoded as
    UTF-8 (a malformed sequence or invalid UTF-8 raises)."""
    parameters = {}
    for part in query.split("&"):
        name, _, value = part.partition("=")
        parameters[name] = urllib.parse.unquote_plus(value, encoding="utf-8", errors="strict")
    return parameters
