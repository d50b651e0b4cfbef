"""assay's pytest plugin: eval files are tests, each eval case one test item.

Registered through the `pytest11` entry point, so installing assay is enough. pytest
then collects, besides Python tests, the eval files ADK users keep beside their tests
(`test_*.evalset.json` and `*.test.json`, or the globs of the `assay_eval_files` ini
option), reads the `test_config.json` beside each for its criteria (ADK's defaults
without one), and makes every eval case one item. An item runs its case on the agent
named by, first found:

1. an `@pytest.mark.assay_agent(AGENT)` marker on the item (set it from a conftest's
   `pytest_collection_modifyitems`);
2. an `assay_agent` fixture (a conftest's: it returns "module:attr", an agent folder,
   an URL, or an agent object);
3. the `assay_agent` ini option;
4. the ADK layout: the eval file's folder (or its parent) when it is an agent folder
   (`agent.py` beside it), as `adk eval` and `AgentEvaluator` use it.

Without any, the case's recorded turns are scored as they are. A failing item's message
names each failed metric with its score and threshold and shows the expected and actual
tool calls and responses (see `assay.testing.assertions`); `--junitxml` carries it.
`assay_collect = false` (or `-p no:assay`) turns collection off.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from assay.testing.assertions import EvalFailure, check_result

if TYPE_CHECKING:
    from assay.config import EvalConfig
    from assay.core.cases import EvalSet

DEFAULT_PATTERNS = ("test_*.evalset.json", "*.test.json")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "assay_collect",
        "collect eval files (test_*.evalset.json, *.test.json) as tests",
        type="bool",
        default=True,
    )
    parser.addini(
        "assay_eval_files",
        "file name globs of eval files collected as tests",
        type="linelist",
        default=list(DEFAULT_PATTERNS),
    )
    parser.addini("assay_agent", "the agent eval files run on (module:attr, folder or URL)")
    parser.addini("assay_runs", "runs of every eval case (default 1)", default="1")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "assay_agent(agent): the agent an eval file's cases run on")


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> EvalFile | None:
    config = parent.config
    if not config.getini("assay_collect"):
        return None
    patterns: list[str] = config.getini("assay_eval_files")
    if not any(fnmatch.fnmatch(file_path.name, p) for p in patterns):
        return None
    file: EvalFile = EvalFile.from_parent(parent, path=file_path)
    return file


class EvalFile(pytest.File):
    """One eval file: its cases, each a test item."""

    def collect(self) -> Iterator[pytest.Item]:
        from assay import formats
        from assay.config import find_config_beside, load_config
        from assay.errors import AssayError

        try:
            evalset = formats.load(self.path)
            found = find_config_beside(self.path)
            config = load_config(found) if found is not None else None
        except AssayError as exc:
            # One failing item, not a collection error: pytest would stop the whole
            # session on that, and every other eval file and test would be lost.
            yield UnreadableEvalFile.from_parent(self, name="(unreadable)", message=str(exc))
            return
        for case in evalset.cases:
            single = evalset.model_copy(update={"cases": [case]})

            def run_case(request: pytest.FixtureRequest, _set: EvalSet = single) -> None:
                _run(request, _set, config, self.path)

            yield EvalCaseItem.from_parent(self, name=case.id, callobj=run_case)


class EvalFileError(Exception):
    """An eval file pytest collected could not be read (the message says where and why)."""


class UnreadableEvalFile(pytest.Item):
    """Stands for an eval file that could not be read: it fails with the reason."""

    def __init__(self, *, message: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message

    def runtest(self) -> None:
        raise EvalFileError(self.message)

    def repr_failure(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: object = None
    ) -> str:
        return f"cannot read this eval file: {excinfo.value}"

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, "unreadable eval file"


class EvalCaseItem(pytest.Function):
    """One eval case; its failure report is assay's message, not a traceback."""

    def repr_failure(  # type: ignore[override]  # pytest's Function drops `style`
        self, excinfo: pytest.ExceptionInfo[BaseException]
    ) -> Any:
        if isinstance(excinfo.value, EvalFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"eval case {self.name}"


def _agent_for(request: pytest.FixtureRequest, eval_file: Path) -> Any:
    marker = request.node.get_closest_marker("assay_agent")
    if marker is not None and marker.args:
        return marker.args[0]
    try:
        return request.getfixturevalue("assay_agent")
    except pytest.FixtureLookupError:
        pass
    configured: str = request.config.getini("assay_agent")
    if configured:
        return configured
    for folder in (eval_file.parent, eval_file.parent.parent):
        if (folder / "agent.py").is_file():
            return str(folder)
    return None


def _run(
    request: pytest.FixtureRequest, evalset: EvalSet, config: EvalConfig | None, eval_file: Path
) -> None:
    __tracebackhide__ = True
    from assay.api import evaluate

    runs = int(request.config.getini("assay_runs") or 1)
    result = evaluate(
        evalset, config=config, agent=_agent_for(request, eval_file), runs=runs, store=False
    )
    check_result(result, count=False)
