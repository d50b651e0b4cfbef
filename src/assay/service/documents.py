"""JSON and YAML from clients, parsed within the service's limits (`ServiceLimits`).

- JSON bodies and documents: Python's parser recurses, so a body nested thousands
  deep raised RecursionError (a 500); here that is INVALID_ARGUMENT, and so is any value
  nested deeper than `max_depth` (checked without recursion).
- YAML documents: composed by a loader that counts its depth as it goes (refusing past
  `max_depth`) and, before anything is built, counts the values the document stands
  for with its aliases expanded: a few hundred bytes of nested aliases (an "alias
  bomb") stand for billions of values, and are refused once that count passes
  `max_document_nodes`. Only YAML's safe types are built.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from assay.service._storable import JsonPath, json_path
from assay.service.errors import InvalidArgument
from assay.service.settings import DEFAULT_LIMITS, ServiceLimits


def too_deep(field: str, limit: int) -> InvalidArgument:
    return InvalidArgument.field(
        field, f"nested deeper than {limit} levels of objects and arrays (max_depth)"
    )


def deeper_than(value: object, limit: int) -> tuple[bool, JsonPath]:
    """(True, path of the first list or dict past `limit` levels) or (False, None);
    walked without recursion."""
    stack: list[tuple[Any, int, JsonPath]] = [(value, 0, None)]
    while stack:
        item, depth, path = stack.pop()
        if isinstance(item, dict):
            members: Any = item.items()
        elif isinstance(item, list | tuple):
            members = enumerate(item)
        else:
            continue
        if depth >= limit:
            return True, path
        stack.extend((member, depth + 1, (path, key)) for key, member in members)
    return False, None


def check_depth(value: object, field: str, limits: ServiceLimits = DEFAULT_LIMITS) -> None:
    """INVALID_ARGUMENT naming the JSON path where `value` nests deeper than the limit."""
    deep, path = deeper_than(value, limits.max_depth)
    if deep:
        raise too_deep(json_path(field, path), limits.max_depth)


def load_json(raw: bytes | str, field: str, limits: ServiceLimits = DEFAULT_LIMITS) -> Any:
    """A JSON text as Python values; INVALID_ARGUMENT naming `field` for what the
    service cannot take (bad JSON, nesting past the limit)."""
    try:
        value = json.loads(raw)
    except RecursionError:
        raise too_deep(field, limits.max_depth) from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidArgument.field(
            field, f"Invalid JSON payload received: not valid JSON ({exc})"
        ) from None
    check_depth(value, field, limits)
    return value


class _TooDeep(Exception):
    pass


class _LimitedLoader(yaml.SafeLoader):
    """A safe loader that stops composing past `max_depth` levels."""

    max_depth = DEFAULT_LIMITS.max_depth
    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > self.max_depth:
                raise _TooDeep
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def expanded_size(root: yaml.Node, limit: int) -> int:
    """The number of values `root` stands for with every alias expanded (capped just
    past `limit`). Aliases share their anchor's node, so sizes are memoised by node."""
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if id(node) in sizes:
            continue
        children = _children(node)
        if not children_done:
            stack.append((node, True))
            stack.extend((c, False) for c in children if id(c) not in sizes)
            continue
        sizes[id(node)] = min(limit + 1, 1 + sum(sizes[id(c)] for c in children))
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def load_yaml(text: str, field: str, shown: str, limits: ServiceLimits = DEFAULT_LIMITS) -> Any:
    """A YAML (or JSON) document within the limits; INVALID_ARGUMENT naming `field`."""
    loader = _LimitedLoader(text)
    loader.max_depth = limits.max_depth
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        size = expanded_size(node, limits.max_document_nodes)
        if size > limits.max_document_nodes:
            raise InvalidArgument.field(
                field,
                f"{shown} stands for more than {limits.max_document_nodes} values once its "
                "YAML aliases are expanded (max_document_nodes)",
            )
        return loader.construct_document(node)
    except _TooDeep:
        raise too_deep(field, limits.max_depth) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise InvalidArgument.field(field, f"{shown} is not JSON or YAML{where}") from None
    finally:
        loader.dispose()


def load_document(
    content: bytes, field: str, shown: str, limits: ServiceLimits = DEFAULT_LIMITS
) -> Any:
    """An imported document (JSON or YAML, UTF-8) within the limits."""
    if len(content) > limits.max_document_bytes:
        raise InvalidArgument.field(
            field,
            f"{shown} is larger than the limit of {limits.max_document_bytes} bytes "
            "(max_document_bytes)",
        )
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidArgument.field(field, f"{shown} is not UTF-8 text") from None
    if text.lstrip()[:1] in ("{", "["):
        try:
            value = json.loads(text)
        except RecursionError:
            raise too_deep(field, limits.max_depth) from None
        except ValueError:
            pass  # YAML's flow style starts the same way: read it as YAML below
        else:
            check_depth(value, field, limits)
            return value
    return load_yaml(text, field, shown, limits)
