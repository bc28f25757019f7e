"""Extractive summarisation with the standard library only."""
import math
import re
from collections import Counter

_STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each either few for
from further had has have having he her here hers herself him himself his how i if in into is
it its itself just may me might more most must my myself no nor not now of off on once only or
other our ours ourselves out over own same shall she should so some such than that the their
theirs them themselves then there these they this those through to too under until up upon us
very was we were what when where which while who whom why will with would yet you your yours
yourself yourselves
""".split())

_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?")
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]*[A-Z0-9])")

# The share of the sentences each style keeps, before max_sentences caps it.
_SHARE = {"concise": 0.25, "detailed": 0.5, "bullet-points": 0.25}


def _sentences(text):
    out = []
    for para in re.split(r"\n\s*\n", text):
        para = " ".join(para.split())
        out.extend(s.strip() for s in _BOUNDARY.split(para) if s.strip())
    return out


def summarize(text, max_sentences=5, style="concise"):
    sentences = _sentences(text)
    words = [w.lower() for w in _WORD.findall(text)]
    freq = Counter(w for w in words if w not in _STOPWORDS and len(w) > 1)
    top = max(freq.values()) if freq else 1

    def score(i, sentence):
        tokens = [w.lower() for w in _WORD.findall(sentence)]
        if not tokens:
            return 0.0
        weight = sum(freq[t] / top for t in tokens if t in freq)
        # Favour dense sentences without rewarding sheer length, and the
        # opening sentence, which usually states the subject.
        return weight / math.sqrt(len(tokens)) + (0.1 if i == 0 else 0.0)

    keep = max(1, min(max_sentences, round(len(sentences) * _SHARE[style]) or 1))
    ranked = sorted(range(len(sentences)), key=lambda i: (-score(i, sentences[i]), i))
    chosen = [sentences[i] for i in sorted(ranked[:keep])]
    if style == "bullet-points":
        summary = "\n".join("- " + s for s in chosen)
    else:
        summary = " ".join(chosen)
    original = len(text)
    return {
        "summary": summary,
        "compression_ratio": round(len(summary) / original, 4) if original else 0.0,
        "original_length": original,
        "summary_length": len(summary),
    }
