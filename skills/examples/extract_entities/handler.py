"""Regex- and capitalisation-based entity extraction, standard library only."""
import re

TYPES = ("EMAIL", "PHONE", "URL", "DATE", "MONEY", "PERSON", "ORGANIZATION")

_MONTH = (r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
          r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)")
_CAP = r"[A-Z][a-z]+(?:-[A-Z][a-z]+)?"
_ORG_SUFFIX = (r"(?:Inc|Corp|Corporation|Ltd|LLC|GmbH|AG|PLC|Co|Company|Group|Holdings|Bank|"
               r"University|Institute|Foundation|Association|Agency|Laboratories|Labs|Partners)")

# (type, pattern, confidence), most specific first.
_PATTERNS = [
    ("EMAIL", r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b", 0.95),
    ("URL", r"\bhttps?://[^\s<>\"']+", 0.95),
    ("URL", r"\bwww\.[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+(?:/[^\s<>\"']*)?", 0.85),
    ("DATE", r"\b\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])\b", 0.95),
    ("DATE", r"\b" + _MONTH + r"\.? \d{1,2}(?:st|nd|rd|th)?,? \d{4}\b", 0.9),
    ("DATE", r"\b\d{1,2}(?:st|nd|rd|th)? " + _MONTH + r"\.?,? \d{4}\b", 0.9),
    ("DATE", r"\b(?:0?[1-9]|[12]\d|3[01])[/.](?:0?[1-9]|[12]\d|3[01])[/.](?:\d{4}|\d{2})\b", 0.8),
    ("MONEY", r"[$€£¥]\s?\d{1,3}(?:,\d{3})*(?:\.\d+)?(?:\s?(?:thousand|million|billion|trillion|[KMB])\b)?", 0.9),
    ("MONEY", r"\b\d{1,3}(?:,\d{3})*(?:\.\d+)?\s?(?:USD|EUR|GBP|JPY|dollars|euros|pounds)\b", 0.85),
    ("PHONE", r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)[\s.-]?|\d{2,4}[\s.-])\d{3,4}[\s.-]?\d{3,4}(?![\w-])", 0.8),
    ("PERSON", r"\b(?:Mr|Mrs|Ms|Dr|Prof|Sir|Dame)\.? " + _CAP + r"(?: " + _CAP + r")?", 0.85),
    ("ORGANIZATION", r"\b(?:" + _CAP + r"|[A-Z]{2,}|&) (?:(?:" + _CAP + r"|[A-Z]{2,}|&|of|and) )*" + _ORG_SUFFIX + r"\b\.?", 0.8),
    ("ORGANIZATION", r"\b(?:University|Institute|Bank|Ministry|Department|Bureau) of(?: the)? " + _CAP + r"(?: " + _CAP + r")*", 0.8),
    ("PERSON", r"\b" + _CAP + r"(?: [A-Z]\.)? " + _CAP + r"(?: " + _CAP + r")?\b", 0.6),
]
_COMPILED = [(t, re.compile(p), c) for t, p, c in _PATTERNS]

# Capitalised words that make a "Firstname Lastname" match unlikely a name.
_NOT_NAMES = frozenset("""
The A An This That These Those It Its In On At For From To With By Of And Or But If When While
Our We You They He She I My Your Their His Her After Before During Monday Tuesday Wednesday
Thursday Friday Saturday Sunday January February March April May June July August September
October November December Street Road Avenue North South East West New Dear Hello Thanks
Regards Please Contact Call Email Visit See Meeting Report Project Team Office
""".split())


def _clean_url(text):
    return text.rstrip(".,;:!?)]}'\"")


def extract_entities(text, entity_types=None, min_confidence=0.0):
    wanted = set(entity_types) if entity_types else set(TYPES)
    candidates = []
    for typ, rx, conf in _COMPILED:
        for m in rx.finditer(text):
            start, found = m.start(), m.group(0)
            if typ == "URL":
                found = _clean_url(found)
            if typ == "ORGANIZATION" and found.endswith(".") and not found.endswith(("Inc.", "Corp.", "Co.", "Ltd.")):
                found = found[:-1]
            if typ == "PERSON" and conf < 0.85 and any(w in _NOT_NAMES for w in found.split()):
                continue
            candidates.append((typ, start, start + len(found), found, conf))
    # The most confident, then the longest, claims its characters first.
    candidates.sort(key=lambda c: (-c[4], -(c[2] - c[1]), c[1]))
    taken, entities = [], []
    for typ, start, end, found, conf in candidates:
        if any(start < e and s < end for s, e in taken):
            continue
        taken.append((start, end))
        if typ in wanted and conf >= min_confidence:
            entities.append({"text": found, "type": typ, "start": start, "end": end, "confidence": conf})
    entities.sort(key=lambda e: (e["start"], e["end"]))
    counts = {}
    for e in entities:
        counts[e["type"]] = counts.get(e["type"], 0) + 1
    return {"entities": entities, "total_entities": len(entities), "entity_counts": counts}
