"""`assay cases ...`: write eval set files (ADK, CES, Vertex) in their own format.

`new FILE`, `list FILE`, `rm FILE CASE`, and `add FILE --from-run RUN | --from-trace
TRACES | --from-ces CONVERSATION`: cases made from what an agent actually did. Other
modules add their commands to `cases_app` (`assay.cli.cases_generate`).

Exit codes: 0 written (or listed); 2 a usage or input error (nothing is written).
"""

from __future__ import annotations

from assay.cli.common import command_app

cases_app = command_app(
    "cases", "Author eval sets: new, list, rm, and add cases from runs, traces, conversations."
)


@cases_app.callback()
def _cases_group() -> None:
    """Author eval sets: new, list, rm, and add cases from runs, traces, conversations."""
