"""Text embeddings through the host's embed capability (no model in the sandbox)."""
import math


def embed_text(text, model=None, normalize=True):
    vector = embed([text], model=model)[0]
    if normalize:
        norm = math.sqrt(sum(x * x for x in vector))
        if norm:
            vector = [x / norm for x in vector]
    return {
        "embedding": vector,
        "dimension": len(vector),
        "model_used": model or "default",
        "text_length": len(text),
    }
