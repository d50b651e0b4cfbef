"""Where CES imports read and exports write: local files, never Google Cloud Storage.

The requests name a `gcs_uri`. assay reads and writes the server's own file system
instead: `file:///abs/path` or an absolute path. A `gs://` URI is INVALID_ARGUMENT
naming the field (assay has no Cloud Storage client or credentials), as is anything
relative or of another scheme. Exports write one file into the folder given
(`evaluations.json`, `evaluationRuns.yaml`, ...); imports read such a file, or the
folder an export wrote.

Only under the server's files root (`assay serve --files-root DIR`), which plays the
part of the bucket: a path outside it (after symlinks are resolved) is INVALID_ARGUMENT,
and a server started without one touches no files for a client (FAILED_PRECONDITION).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import yaml

from assay.service.errors import FailedPrecondition, InvalidArgument

# An import file larger than this is refused before it is read.
MAX_IMPORT_BYTES = 64 * 1024 * 1024
SUFFIXES = {"JSON": "json", "YAML": "yaml"}


def local_path(uri: str, field: str, root: Path | None) -> Path:
    """The local path a `file://` URI or absolute path names, inside `root`."""
    if uri.startswith("gs://"):
        raise InvalidArgument.field(
            field,
            f"{uri!r}: assay does not reach Google Cloud Storage; give a folder on the "
            "server's machine as file:///path (or /path), or leave it unset",
        )
    if uri.startswith("file:"):
        parsed = urlparse(uri)
        if parsed.netloc not in ("", "localhost"):
            raise InvalidArgument.field(field, f"{uri!r}: a file URI must be file:///path")
        path = Path(unquote(parsed.path))
    else:
        path = Path(uri)
    if not path.is_absolute():
        raise InvalidArgument.field(
            field, f"{uri!r} is not a file:///path URI or an absolute path on the server"
        )
    if root is None:
        raise FailedPrecondition(
            f"{field}: this server reads and writes no files for its clients; start it with"
            " `assay serve --files-root DIR` to allow file:// imports and exports under DIR"
            " (or leave the field unset: exports then come back inline)"
        )
    # Resolved (symlinks and `..` followed) before the check, so neither leads out.
    resolved = path.resolve()
    if not resolved.is_relative_to(root):
        raise InvalidArgument.field(field, f"{uri!r} is outside the server's files root {root}")
    return resolved


def render(document: dict[str, Any], export_format: str) -> bytes:
    """The document as JSON (the default) or YAML bytes."""
    if export_format == "YAML":
        return yaml.safe_dump(document, sort_keys=False, allow_unicode=True).encode()
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def write(
    uri: str, field: str, stem: str, content: bytes, export_format: str, root: Path | None
) -> str:
    """Write `content` as `{stem}.{json|yaml}` into the folder `uri`; returns the URI."""
    folder = local_path(uri, field, root)
    if folder.exists() and not folder.is_dir():
        raise InvalidArgument.field(field, f"{uri!r} is a file; give the folder to write into")
    target = folder / f"{stem}.{SUFFIXES.get(export_format, 'json')}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    except OSError as exc:
        raise FailedPrecondition(f"cannot write {target}: {exc.strerror or exc}") from None
    return uri


def read(uri: str, field: str, stem: str, root: Path | None) -> tuple[Path, Any]:
    """The parsed JSON or YAML of the file `uri` (or of `{stem}.json|yaml` in a folder)."""
    path = local_path(uri, field, root)
    if path.is_dir():
        found = [
            path / f"{stem}.{s}"
            for s in ("json", "yaml", "yml")
            if (path / f"{stem}.{s}").is_file()
        ]
        if not found:
            raise InvalidArgument.field(
                field, f"{uri!r} is a folder without {stem}.json or {stem}.yaml"
            )
        path = found[0]
    if not path.is_file():
        raise InvalidArgument.field(field, f"{uri!r}: no such file on the server")
    if path.suffix.lower() not in (".json", ".yaml", ".yml"):
        # Only what an export writes: the service is no reader of arbitrary server files.
        raise InvalidArgument.field(field, f"{uri!r}: expected a .json or .yaml file")
    if path.stat().st_size > MAX_IMPORT_BYTES:
        raise InvalidArgument.field(
            field, f"{path} is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MB"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FailedPrecondition(f"cannot read {path}: {exc}") from None
    try:
        # YAML is a superset of JSON: one parser reads both formats an export writes.
        return path, yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise InvalidArgument.field(field, f"{path} is not JSON or YAML{where}") from None
