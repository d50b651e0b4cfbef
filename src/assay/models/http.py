"""Reading a model API's HTTP answers the same way for every caller.

Which statuses are worth retrying, how long a server asked us to wait (Retry-After in
seconds, milliseconds or as an HTTP date), and the human message inside an error body.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

#: statuses worth retrying besides 5xx: timeout, conflict, too early, rate limited
RETRYABLE_STATUSES = frozenset({408, 409, 425, 429})
#: sent as the API key to a self-hosted endpoint when none is configured: vLLM, Ollama,
#: llama.cpp server and LM Studio ignore it, but the SDKs refuse to run without one
PLACEHOLDER_API_KEY = "assay-no-key"


def is_retryable_status(status: int) -> bool:
    """Rate limits, timeouts and server errors are retried; other 4xx are not."""
    return status in RETRYABLE_STATUSES or status >= 500


def retry_after_seconds(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or HTTP date)."""
    if not headers:
        return None
    lower = {name.lower(): value for name, value in headers.items()}
    millis = _non_negative(lower.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = lower.get("retry-after")
    if value is None:
        return None
    seconds = _non_negative(value)
    if seconds is not None:
        return seconds
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None  # unparseable header: the retry policy's own back-off applies
    return max(0.0, when.timestamp() - time.time())


def _non_negative(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def error_detail(body: object) -> str:
    """The human message inside an API error body (nested ``error.message`` shapes)."""
    if isinstance(body, Mapping):
        for key in ("error", "message"):
            inner = body.get(key)
            if isinstance(inner, str) and inner:
                return inner
            if isinstance(inner, Mapping):
                return error_detail(inner)
    if isinstance(body, list) and len(body) == 1:
        return error_detail(body[0])
    return "" if body is None else str(body)
