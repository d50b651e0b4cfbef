"""Query strings out of the server's logs (issue #31): no key sent as `?key=` is logged.

uvicorn logs each request's target with its query string (the access log, and the
websocket lines of its error log); `QueryRedaction` masks every query value in them.
"""

from __future__ import annotations

import logging

from assay.redact import redact_query

LOGGERS = ("uvicorn.access", "uvicorn.error")


class QueryRedaction(logging.Filter):
    """Masks the query values of request targets among a log record's arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and any(_is_target(a) for a in args):
            record.args = tuple(
                redact_query(a) if isinstance(a, str) and _is_target(a) else a for a in args
            )
        return True


def _is_target(value: object) -> bool:
    return isinstance(value, str) and value.startswith("/") and "?" in value


def install_log_redaction() -> None:
    """Add the filter to uvicorn's loggers (once; logging configuration keeps filters)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, QueryRedaction) for f in logger.filters):
            logger.addFilter(QueryRedaction())
