"""Recorded trip rows drawn from a seed, in Vertex's shape (prompt, response, reference
and both trajectories), for the tests that stream, load and score row files: about half
the responses repeat their reference, a third of the predicted trajectories are the
reference's reversed, and every seventh row has no id (the loader gives row-{index})."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

TOOLS = ["search_flights", "book_hotel", "get_weather"]


def trip_rows(n: int, *, seed: int, words: Sequence[str]) -> list[dict[str, Any]]:
    """`n` rows from `seed`, their references `words` drawn at random."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        ref = [
            {"tool_name": rng.choice(TOOLS), "tool_input": {"n": rng.randint(1, 3)}}
            for _ in range(rng.randint(1, 3))
        ]
        pred = ref[::-1] if rng.random() < 0.3 else list(ref)
        reference = " ".join(rng.choice(words) for _ in range(rng.randint(4, 10)))
        row: dict[str, Any] = {
            "prompt": f"trip {i}",
            "response": reference if rng.random() < 0.5 else "something else entirely",
            "reference": reference,
            "predicted_trajectory": pred,
            "reference_trajectory": ref,
        }
        if i % 7:  # the others get the loader's default id, row-{index}
            row["id"] = f"case-{i}"
        rows.append(row)
    return rows
