"""A deterministic OpenAI-style `/v1/embeddings` for the stand-in server.

Each text becomes a hashed bag of words: every lower-cased word adds ±1 to one of
`DIMENSIONS` coordinates chosen by its SHA-256, and the vector is normalised to length
1. Equal texts get equal vectors, texts sharing words point the same way, texts sharing
none are near orthogonal — enough to test a similarity metric end to end, with numbers
a test can compute itself (`embed`).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from typing import Any

DIMENSIONS = 64
_WORD = re.compile(r"\w+")


def embed(text: str) -> list[float]:
    """The stand-in's embedding of `text` (unit length; all zeros for no words)."""
    vector = [0.0] * DIMENSIONS
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode("utf-8")).digest()
        index = int.from_bytes(digest[:4], "big") % DIMENSIONS
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(math.fsum(v * v for v in vector))
    return [v / norm for v in vector] if norm else vector


def embeddings_reply(body: object) -> tuple[int, dict[str, Any]]:
    """(status, JSON body) answering an OpenAI embeddings request."""
    if not isinstance(body, Mapping):
        return 400, {"error": {"message": "the request body must be a JSON object"}}
    texts = body.get("input")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        return 400, {"error": {"message": "input must be a string or a list of strings"}}
    model = body.get("model")
    if not isinstance(model, str) or not model:
        return 400, {"error": {"message": "model is required"}}
    tokens = sum(len(_WORD.findall(t)) for t in texts)
    return 200, {
        "object": "list",
        "model": model,
        "data": [
            {"object": "embedding", "index": i, "embedding": embed(t)} for i, t in enumerate(texts)
        ],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
