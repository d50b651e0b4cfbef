"""Authoring eval sets: cases written from runs, traces and conversations.

`assay.cases.add_from_run(file, run)` turns stored case runs into cases of an ADK, CES
or Vertex eval set file, in that file's own format (`assay cases add FILE --from-run`).
The file is edited in place: untouched cases keep their bytes, key order and unknown
fields, and every write is checked with the format's own reader before it is renamed
over the file.
"""

from __future__ import annotations

from assay._lazy import lazy_exports

_EXPORTS = {
    "add_from_run": "assay.cases.api",
    "add_from_trace": "assay.cases.api",
    "add_from_ces": "assay.cases.api",
    "new_file": "assay.cases.api",
    "list_cases": "assay.cases.api",
    "remove_case": "assay.cases.api",
    "write_cases": "assay.cases.api",
    "WriteResult": "assay.cases.api",
    "generate": "assay.cases.generate_cases",
    "agenerate": "assay.cases.generate_cases",
    "GenerationResult": "assay.cases.generate_cases",
    "read_definition": "assay.cases.generate_definition",
    "write_generated": "assay.cases.generate_write",
}

__all__ = list(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
