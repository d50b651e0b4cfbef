"""The judge counters of a run: the model layer's `CallStats` with the `judge/...` keys
of a run summary and the line the CLI prints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from assay.models.stats import COUNTERS, CallStats
from assay.models.stats import CallCounts as JudgeCounts

__all__ = ["COUNTERS", "JudgeCounts", "JudgeStats", "cost_line"]


class JudgeStats(CallStats):
    """Totals over every judge backend, plus the same counters per backend name."""

    def summary(self) -> dict[str, Any]:
        """`judge/...` keys for the run summary.

        Totals always; with more than one backend, also `judge/{backend}/{counter}`.
        """
        out: dict[str, Any] = {f"judge/{name}": getattr(self, name) for name in COUNTERS}
        if self.cache_write_errors:
            out["judge/cache_write_errors"] = self.cache_write_errors
        if len(self.per_backend) > 1:
            for backend, counts in sorted(self.per_backend.items()):
                for name, value in counts.as_dict().items():
                    out[f"judge/{backend}/{name}"] = value
        return out

    @classmethod
    def from_summary(cls, summary: Mapping[str, Any]) -> JudgeStats:
        """The totals back from a run summary's `judge/...` keys."""
        stats = cls()
        for name in (*COUNTERS, "cache_write_errors"):
            setattr(stats, name, int(summary.get(f"judge/{name}") or 0))
        return stats

    def describe(self) -> str:
        """One line for people, e.g. `judge: 12 calls, 3 cache hits, ...`."""
        cached = f" ({self.cached_tokens:,} cached)" if self.cached_tokens else ""
        tokens = f"{self.input_tokens:,} input{cached} + {self.output_tokens:,} output tokens"
        line = (
            f"judge: {self.calls:,} calls, {self.cache_hits:,} cache hits, "
            f"{self.retries:,} retries, {self.errors:,} errors, {tokens}"
        )
        if self.cache_write_errors:
            line += f"; {self.cache_write_errors:,} replies could not be cached"
        return line


def cost_line(summary: Mapping[str, Any]) -> str | None:
    """`judge cost: $0.0123 (estimated $0.0150)...` from a run summary; None without one."""
    usd = summary.get("judge/usd")
    if usd is None:
        return None
    estimated = float(summary.get("judge/usd_estimated") or 0)
    line = f"judge cost: ${float(usd):.4f} (estimated ${estimated:.4f})"
    batched = int(summary.get("judge/batched_calls") or 0)
    if batched:
        line += f"; {batched:,} calls batched, at batch prices"
    refused = int(summary.get("judge/refused") or 0)
    if refused:
        line += f"; {refused:,} judge calls not made: judge budget reached"
    unpriced = summary.get("judge/unpriced_models")
    if unpriced:
        line += "; no price for " + ", ".join(map(str, unpriced)) + " (--prices FILE)"
    return line
