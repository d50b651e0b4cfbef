"""Where CES imports read and exports write: local files, never Google Cloud Storage.

The requests name a `gcs_uri`. assay reads and writes the server's own file system
instead: `file:///abs/path` or an absolute path. A `gs://` URI is INVALID_ARGUMENT
naming the field (assay has no Cloud Storage client or credentials), as is anything
relative or of another scheme. Exports write one file into the folder given
(`evaluations.json`, `evaluationRuns.yaml`, ...); imports read such a file, or the
folder an export wrote.

Only under the server's files root (`assay serve --files-root DIR`), which plays the
part of the bucket: a path outside it (after symlinks are resolved, the file's own name
included) is INVALID_ARGUMENT, and a server started without one touches no files for a
client (FAILED_PRECONDITION). Every file is opened through `assay.service.safe_files`
(walked from the root without following a link) and parsed through
`assay.service.documents` (size, depth and YAML alias limits).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import yaml

from assay.service.documents import load_document
from assay.service.errors import FailedPrecondition, InvalidArgument
from assay.service.safe_files import FilesRoot
from assay.service.settings import DEFAULT_LIMITS, ServiceLimits

SUFFIXES = {"JSON": "json", "YAML": "yaml"}


def _path_text(uri: str, field: str) -> str:
    """The local path a `file://` URI or absolute path names (not yet checked)."""
    if uri.startswith("gs://"):
        raise InvalidArgument.field(
            field,
            f"{uri[:200]!r}: assay does not reach Google Cloud Storage; give a folder on the "
            "server's machine as file:///path (or /path), or leave it unset",
        )
    if uri.startswith("file:"):
        parsed = urlparse(uri)
        if parsed.netloc not in ("", "localhost"):
            raise InvalidArgument.field(field, f"{uri[:200]!r}: a file URI must be file:///path")
        return unquote(parsed.path)
    return uri


def _root(field: str, root: Path | None, limits: ServiceLimits) -> FilesRoot:
    if root is None:
        raise FailedPrecondition(
            f"{field}: this server reads and writes no files for its clients; start it with"
            " `assay serve --files-root DIR` to allow file:// imports and exports under DIR"
            " (or leave the field unset: exports then come back inline)"
        )
    return FilesRoot(root, limits)


def local_path(
    uri: str, field: str, root: Path | None, limits: ServiceLimits = DEFAULT_LIMITS
) -> Path:
    """The real local path a `file://` URI or absolute path names, inside `root`."""
    text = _path_text(uri, field)
    files = FilesRoot(root, limits) if root is not None else None
    if files is not None:
        files.check_text(text, field)
    if not text.startswith("/"):
        raise InvalidArgument.field(
            field, f"{uri[:200]!r} is not a file:///path URI or an absolute path on the server"
        )
    return _root(field, root, limits).resolve(text, field, uri[:200])


def render(document: dict[str, Any], export_format: str) -> bytes:
    """The document as JSON (the default) or YAML bytes."""
    if export_format == "YAML":
        return yaml.safe_dump(document, sort_keys=False, allow_unicode=True).encode()
    return (json.dumps(document, indent=2, ensure_ascii=False) + "\n").encode()


def write(
    uri: str,
    field: str,
    stem: str,
    content: bytes,
    export_format: str,
    root: Path | None,
    limits: ServiceLimits = DEFAULT_LIMITS,
) -> str:
    """Write `content` as `{stem}.{json|yaml}` into the folder `uri`; returns the URI.

    The file is checked like the folder (resolved, inside the root): a symlink planted
    at its name that leads out is refused, one inside is replaced, never written through.
    """
    shown = uri[:200]
    folder = local_path(uri, field, root, limits)
    files = _root(field, root, limits)
    if files.kind(folder, field, shown) not in ("dir", "missing"):
        raise InvalidArgument.field(field, f"{shown!r} is a file; give the folder to write into")
    name = f"{stem}.{SUFFIXES.get(export_format, 'json')}"
    target = files.resolve(str(folder / name), field, shown)
    files.write_bytes(target.parent, target.name, content, field, shown)
    return uri


def read(
    uri: str, field: str, stem: str, root: Path | None, limits: ServiceLimits = DEFAULT_LIMITS
) -> tuple[Path, Any]:
    """The parsed JSON or YAML of the file `uri` (or of `{stem}.json|yaml` in a folder)."""
    shown = uri[:200]
    path = local_path(uri, field, root, limits)
    files = _root(field, root, limits)
    kind = files.kind(path, field, shown)
    if kind == "dir":
        for suffix in ("json", "yaml", "yml"):
            candidate = files.resolve(str(path / f"{stem}.{suffix}"), field, shown)
            if files.kind(candidate, field, shown) == "file":
                path, kind = candidate, "file"
                break
        else:
            raise InvalidArgument.field(
                field, f"{shown!r} is a folder without {stem}.json or {stem}.yaml"
            )
    if kind == "missing":
        raise InvalidArgument.field(field, f"{shown!r}: no such file on the server")
    if kind != "file":
        raise InvalidArgument.field(field, f"{shown!r} is not a regular file")
    if path.suffix.lower() not in (".json", ".yaml", ".yml"):
        # Only what an export writes: the service is no reader of arbitrary server files.
        raise InvalidArgument.field(field, f"{shown!r}: expected a .json or .yaml file")
    content = files.read_bytes(path, field, shown)
    # YAML is a superset of JSON: one loader reads both formats an export writes.
    return path, load_document(content, field, str(path), limits)
