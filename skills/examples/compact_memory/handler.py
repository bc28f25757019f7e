"""Memory compaction with the standard library only: deterministic, no model."""
import json
import math
import re

_BOUNDARY = re.compile(r"(?<=[.!?])\s+")
_ELLIPSIS = "\u2026"


def _tokens(value):
    """Tokens, estimated as a quarter of the characters of compact JSON."""
    return math.ceil(len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)) / 4)


def _key(artifact):
    return json.dumps(artifact, sort_keys=True, separators=(",", ":"))


def _shorten(text, chars):
    """text cut to at most chars: whole leading sentences if any fit, else
    words, with an ellipsis when something was cut."""
    if len(text) <= chars:
        return text
    if chars <= 1:
        return ""
    out = ""
    for sentence in _BOUNDARY.split(text.strip()):
        joined = (out + " " + sentence).strip()
        if len(joined) > chars - 1:
            break
        out = joined
    if not out:
        out = text[: chars - 1].rsplit(" ", 1)[0] if " " in text[: chars - 1] else text[: chars - 1]
    return out.rstrip() + _ELLIPSIS


def _texts(artifact, preserve):
    return [k for k, v in artifact.items() if k not in preserve and isinstance(v, str)]


def _scaled(artifacts, preserve, budget):
    """Every artifact kept, its texts (the fields not preserved) cut in the
    same proportion so the whole fits budget, if it can."""
    total = sum(_tokens(a) for a in artifacts)
    if total <= budget:
        return artifacts
    text_chars = sum(len(a[k]) for a in artifacts for k in _texts(a, preserve))
    fixed = total * 4 - text_chars
    ratio = max(0.0, (budget * 4 - fixed) / text_chars) if text_chars else 0.0
    out = []
    for a in artifacts:
        b = dict(a)
        for k in _texts(a, preserve):
            b[k] = _shorten(a[k], math.floor(len(a[k]) * ratio))
        out.append(b)
    return out


def _dedupe(artifacts):
    seen, out = set(), []
    for a in artifacts:
        k = _key(a)
        if k not in seen:
            seen.add(k)
            out.append(a)
    return out


def _truncate(artifacts, preserve, budget):
    kept, used = [], 0
    for a in reversed(artifacts):
        t = _tokens(a)
        if used + t <= budget:
            kept.append(a)
            used += t
            continue
        cut = _scaled([a], preserve, budget - used)[0]
        if _tokens(cut) <= budget - used and any(cut.get(k) for k in _texts(cut, preserve)):
            kept.append(cut)
        break
    return kept[::-1]


def _merge(artifacts, preserve):
    out = []
    for a in _dedupe(artifacts):
        prev = out[-1] if out else None
        if prev is not None and "type" in a and a.get("type") == prev.get("type"):
            for k in _texts(a, preserve):
                if isinstance(prev.get(k), str):
                    if a[k] not in prev[k]:
                        prev[k] = prev[k] + "\n" + a[k]
                elif k not in prev:
                    prev[k] = a[k]
            prev["merged_count"] = prev.get("merged_count", 1) + 1
            continue
        out.append(dict(a))
    return out


def _importance(a):
    for k in ("importance", "priority"):
        v = a.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return max(0.0, min(1.0, float(v) if v <= 1 else v / 10))
    return 0.5


def _intelligent(artifacts, preserve, budget):
    kept = _dedupe(artifacts)
    if sum(_tokens(a) for a in kept) <= budget:
        return kept
    lead = []
    for a in kept:
        b = dict(a)
        for k in _texts(a, preserve):
            sentences = _BOUNDARY.split(a[k].strip())
            if len(sentences) > 2:
                b[k] = " ".join(sentences[:2]) + _ELLIPSIS
        lead.append(b)
    n = len(lead)
    order = sorted(range(n), key=lambda i: (0.6 * _importance(lead[i]) + 0.4 * (i + 1) / n, i))
    dropped = set()
    used = sum(_tokens(a) for a in lead)
    for i in order:
        if used <= budget:
            break
        dropped.add(i)
        used -= _tokens(lead[i])
    return [a for i, a in enumerate(lead) if i not in dropped]


def compact(artifacts, strategy="intelligent", max_tokens=2000, preserve_fields=("id", "type", "timestamp")):
    preserve = set(preserve_fields)
    if strategy == "truncate":
        out = _truncate(artifacts, preserve, max_tokens)
    elif strategy == "summarize":
        out = _scaled(artifacts, preserve, max_tokens)
    elif strategy == "merge":
        out = _scaled(_merge(artifacts, preserve), preserve, max_tokens)
    else:
        out = _intelligent(artifacts, preserve, max_tokens)
    before = sum(_tokens(a) for a in artifacts)
    after = sum(_tokens(a) for a in out)
    return {
        "compacted_artifacts": out,
        "compression_ratio": round(after / before, 4) if before else 1.0,
        "original_count": len(artifacts),
        "compacted_count": len(out),
        "original_tokens": before,
        "compacted_tokens": after,
        "strategy_used": strategy,
    }
