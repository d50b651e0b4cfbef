"""CES over REST exactly as `google-cloud-ces` speaks it: HTTP rules -> request messages.

The HTTP rules are read from the client library itself (its REST transport's
`_get_http_options()`), so every path, verb and custom method (`:runEvaluation`) is the
one the client sends. A request is transcoded as Google's front end does it: path
variables, then the body (the whole request or one field of it), then query
parameters, each checked against the request message's descriptor; the method runs in
a worker thread; the answer is the response message in proto3 JSON (integer enums when
the client asks for `$alt=json;enum-encoding=int`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from assay.service._storable import check_storable
from assay.service.context import ServiceContext
from assay.service.documents import load_json
from assay.service.errors import InvalidArgument, NotFound, from_exception
from assay.service.settings import ServiceLimits
from assay.service.wire import _proto
from assay.service.wire.ces_methods import METHODS, Handler, call
from assay.service.wire.ces_operations import Unimplemented
from assay.service.wire.descriptors import Rpc, rpcs

PREFIX = "/v1beta"
# System parameters every Google REST API accepts; they are not request fields.
_SYSTEM_PARAMS = frozenset(
    {"$alt", "alt", "key", "fields", "$fields", "prettyPrint", "$prettyPrint", "quotaUser"}
)
# `*` is one path segment (ids never hold ':', which starts a custom verb), `**` the rest.
_SEGMENTS = {"*": r"[^/:]+", "**": r".+"}
_VARIABLE = re.compile(r"\{([a-z_.]+)(?:=([^}]*))?\}")


@dataclass(frozen=True)
class Rule:
    """One HTTP rule: which method, its path pattern, what the body binds."""

    rpc: Rpc
    verb: str
    pattern: re.Pattern[str]
    variables: tuple[str, ...]
    body: str | None
    handler: Handler | None


def _pattern(uri: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    variables: list[str] = []
    out, last = [], 0
    for match in _VARIABLE.finditer(uri):
        out.append(re.escape(uri[last : match.start()]))
        template = match[2] or "*"
        parts = [
            r"[^/:]+" if p == "*" else (".+" if p == "**" else re.escape(p))
            for p in template.split("/")
        ]
        out.append(f"(?P<v{len(variables)}>{'/'.join(parts)})")
        variables.append(match[1])
        last = match.end()
    out.append(re.escape(uri[last:]))
    return re.compile("".join(out)), tuple(variables)


def _rules() -> list[Rule]:
    rules = []
    for rpc in rpcs():
        for option in rpc.http:
            pattern, variables = _pattern(option["uri"])
            verb, body = option["method"].upper(), option.get("body")
            rules.append(Rule(rpc, verb, pattern, variables, body, METHODS.get(rpc.name)))
    return rules


RULES = _rules()


def _set_path(request: Message, path: str, value: str) -> None:
    *parents, leaf = path.split(".")
    target = request
    for part in parents:
        target = getattr(target, part)
    setattr(target, leaf, value)


def _bound_fields(rule: Rule) -> set[str]:
    return {v.split(".")[0] for v in rule.variables} | (
        {rule.body} if rule.body and rule.body != "*" else set()
    )


def _query_value(field: Any, raw: str, name: str) -> Any:
    if field.type == FieldDescriptor.TYPE_BOOL:
        if raw not in ("true", "false", "1", "0"):
            raise _proto.invalid_value(name, "TYPE_BOOL", raw)
        return raw in ("true", "1")
    if field.enum_type is not None and raw.lstrip("-").isdigit():
        return int(raw)
    return raw


def _query(request: Message, params: list[tuple[str, str]], bound: set[str]) -> None:
    values: dict[str, Any] = {}
    descriptor = request.DESCRIPTOR
    for key, raw in params:
        if key in _SYSTEM_PARAMS:
            continue
        field = None
        target_desc, target = descriptor, values
        parts = key.split(".")
        for i, part in enumerate(parts):
            field = next((f for f in target_desc.fields if part in (f.json_name, f.name)), None)
            if field is None or (i == 0 and field.name in bound):
                raise InvalidArgument(
                    f'Invalid JSON payload received. Unknown name "{key}": Cannot bind query '
                    f"parameter. Field '{key}' could not be found in request message."
                )
            if i < len(parts) - 1:
                if field.message_type is None:
                    raise InvalidArgument(f"Invalid query parameter {key!r}: {part} has no fields")
                target_desc = field.message_type
                target = target.setdefault(field.json_name, {})
        assert field is not None
        value = _query_value(field, raw, key)
        if field.is_repeated:
            target.setdefault(field.json_name, []).append(value)
        else:
            target[field.json_name] = value
    if values:
        request.MergeFrom(_proto.parse(type(request), values))


async def _transcode(
    rule: Rule, match: re.Match[str], request: Request, limits: ServiceLimits
) -> Message:
    message = rule.rpc.request()
    if rule.body is not None:
        raw = await request.body()
        field = rule.body if rule.body != "*" else "body"
        body = load_json(raw, field, limits) if raw.strip() else {}
        # Values neither the store nor proto3 JSON holds (1e400, integers past int64,
        # lone surrogates, NUL), named by their JSON path.
        check_storable(body, rule.body if rule.body != "*" else "", limits.max_depth)
        if rule.body == "*":
            message.MergeFrom(_proto.parse(type(message), body))
        else:
            _proto.merge(getattr(message, rule.body), body, rule.body)
    for index, path in enumerate(rule.variables):
        _set_path(message, path, match[f"v{index}"])
    _query(message, list(request.query_params.multi_items()), _bound_fields(rule))
    return message


def _find(verb: str, path: str) -> tuple[Rule, re.Match[str]]:
    for rule in RULES:
        if rule.verb == verb:
            match = rule.pattern.fullmatch(path)
            if match is not None:
                return rule, match
    raise NotFound(f"no CES method answers {verb} {path}")


async def _endpoint(request: Request) -> Response:
    ctx: ServiceContext = request.app.state.ctx
    int_enums = "enum-encoding=int" in request.query_params.get("$alt", "")
    try:
        rule, match = _find(request.method, request.url.path)
        if rule.handler is None:
            raise Unimplemented(
                f"assay does not implement {rule.rpc.full_name} (yet); the methods it "
                f"serves are {', '.join(sorted(METHODS))}"
            )
        message = await _transcode(rule, match, request, ctx.limits)
        answer = await anyio.to_thread.run_sync(call, rule.handler, ctx, message)
    except Exception as exc:  # every failure is answered in the status shape
        return from_exception(exc).response()
    return Response(_proto.render(answer, int_enums=int_enums), media_type="application/json")


def routes() -> list[Route]:
    """The catch-all route under /v1beta that dispatches by the client's HTTP rules."""
    methods = sorted({r.verb for r in RULES})
    return [Route(PREFIX + "/{path:path}", _endpoint, methods=methods, include_in_schema=False)]


def served() -> Mapping[str, bool]:
    """Each EvaluationService / Operations method the client has: served by assay?"""
    return {r.rpc.full_name: r.handler is not None for r in RULES}
