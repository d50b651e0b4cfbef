"""ADK eval history: a run's results written where `adk web` and ADK's results manager look.

ADK keeps one `EvalSetResult` per evaluated eval set under
`<agents dir>/<app name>/.adk/eval_history/<app>_<eval set>_<timestamp>.evalset_result.json`
(see google-adk's `LocalEvalSetResultsManager`). assay writes the same file, in ADK's
snake_case shape, for every eval set of a run whose agent is an ADK agent folder (or a
`module:root_agent` living in one), so the run shows in `adk web`'s eval tab beside
ADK's own runs. Only ADK's keys are written: ADK validates some of these objects
strictly, and the file must stay loadable by every reader ADK has.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.core.results import CaseResult, EvalResult
from assay.errors import AssayError, ConfigError
from assay.report.json_report import case_to_adk

HISTORY_DIR = Path(".adk") / "eval_history"
FILE_SUFFIX = ".evalset_result.json"

# The keys of ADK's `EvalCaseResult` that assay fills (ADK's deprecated ones left out).
_CASE_KEYS = (
    "eval_set_id",
    "eval_id",
    "final_eval_status",
    "overall_eval_metric_results",
    "eval_metric_result_per_invocation",
    "session_id",
)


@dataclass(frozen=True, slots=True)
class AdkApp:
    """Where ADK keeps an app's files: `agents_dir / app_name` is the agent folder."""

    agents_dir: Path
    app_name: str

    @property
    def history_dir(self) -> Path:
        return self.agents_dir / self.app_name / HISTORY_DIR


def app_for_agent_spec(spec: str | None) -> AdkApp | None:
    """The ADK app folder an `--agent` spec names, or None when it names none.

    An agent folder is its own app; `pkg.app_folder.agent:root_agent` (or
    `pkg.app_folder:root_agent`) lives in the folder that holds that module, named as
    `adk web` would name it when pointed at the folder's parent.
    """
    if not spec or spec.startswith(("http://", "https://")):
        return None
    as_path = Path(spec)
    if as_path.is_dir():
        folder = as_path.resolve()
        return AdkApp(folder.parent, folder.name)
    module_name = spec.partition(":")[0]
    try:
        found = importlib.util.find_spec(module_name)
    except (ImportError, ValueError):
        return None
    if found is None or found.origin is None:
        return None
    folder = Path(found.origin).resolve().parent
    return AdkApp(folder.parent, folder.name)


def app_for_agent(agent: object) -> AdkApp | None:
    """The ADK app folder of an ADK agent object: the folder of the module that defines
    it as `root_agent` (or `app`), which is how `adk web` finds it, looked up in reverse
    among the imported modules. None when no imported module holds it; an error when
    modules of several folders do (a re-export), since the right one cannot be told."""
    source = getattr(agent, "source", None)
    if source is None:
        return None
    folders: dict[Path, None] = {}
    for module in list(sys.modules.values()):
        if any(getattr(module, name, None) is source for name in ("root_agent", "app")):
            origin = getattr(module, "__file__", None)
            if origin:
                folders[Path(origin).resolve().parent] = None
    if len(folders) > 1:
        listed = ", ".join(str(f) for f in folders)
        raise ConfigError(
            f"ADK eval history: agent {getattr(agent, 'name', '?')!r} is the root_agent of "
            f"modules in several folders ({listed}); pass the agent folder itself "
            "(adk_history='path/to/agent_folder')"
        )
    for folder in folders:
        return AdkApp(folder.parent, folder.name)
    return None


def app_for_folder(folder: str | Path) -> AdkApp:
    """The ADK app whose agent folder is `folder` (it must exist)."""
    path = Path(folder).expanduser().resolve()
    if not path.is_dir():
        raise ConfigError(f"ADK eval history: {folder} is not an agent folder (no such folder)")
    return AdkApp(path.parent, path.name)


def _safe_segment(value: str) -> str:
    # ADK refuses ids with path separators; its own writer turns "/" into "_" in names.
    return value.replace("/", "_").replace("\\", "_").replace("\x00", "_")


def eval_set_result(
    app_name: str,
    eval_set_id: str,
    cases: Iterable[CaseResult],
    *,
    run_id: str | None = None,
    timestamp: float | None = None,
) -> dict[str, Any]:
    """One ADK `EvalSetResult` document (snake_case, as ADK writes it)."""
    stamp = time.time() if timestamp is None else timestamp
    result_id = f"{app_name}_{eval_set_id}_{stamp}"
    return {
        "eval_set_result_id": result_id,
        "eval_set_result_name": _safe_segment(result_id),
        "eval_set_id": eval_set_id,
        "eval_case_results": [adk_case_result(c, run_id=run_id) for c in cases],
        "creation_timestamp": stamp,
    }


def adk_case_result(case: CaseResult, *, run_id: str | None = None) -> dict[str, object]:
    """One case run as exactly ADK's `EvalCaseResult` keys (assay's extras dropped)."""
    doc = case_to_adk(case, run_id=run_id)
    return {key: doc[key] for key in _CASE_KEYS}


def write_history(result: EvalResult, app: AdkApp) -> list[Path]:
    """Write one ADK eval-history file per eval set of `result`; returns the files."""
    by_set: dict[str, list[CaseResult]] = {}
    for case in result.cases:
        by_set.setdefault(case.eval_set_id or result.eval_set_id or "eval_set", []).append(case)
    target = app.history_dir
    written: list[Path] = []
    try:
        target.mkdir(parents=True, exist_ok=True)
        for eval_set_id, cases in by_set.items():
            doc = eval_set_result(app.app_name, eval_set_id, cases, run_id=result.run_id)
            path = target / (doc["eval_set_result_name"] + FILE_SUFFIX)
            text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False)
            path.write_text(text, encoding="utf-8")
            written.append(path)
    except OSError as exc:
        raise AssayError(
            f"cannot write ADK eval history under {target}: {exc.strerror or exc}"
            " (--no-adk-history skips it)"
        ) from None
    return written
