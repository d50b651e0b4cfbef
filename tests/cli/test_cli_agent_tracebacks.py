"""An agent that raises: its traceback (its own frames, none of assay's) is kept with the
case — in the store, `--out`, the HTML case page and `assay runs show RUN --case ID` —
and `assay eval -v` prints it as it happens. Every kind of agent: Python callables
(sync and async), an ADK agent folder, an HTTP agent (the error body it answered) and
the streamed path over row files. An agent module that raises on import names the file
and line that raised.
"""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from assay.cli import app
from assay.store import Store

runner = CliRunner()
REPO = Path(__file__).resolve().parents[2]
HOME = REPO / "examples" / "home_automation" / "home.evalset.json"

BOOM = """
def _backend(prompt):
    raise RuntimeError("backend exploded")


def answer(prompt):
    return _backend(prompt)


async def async_answer(prompt):
    return _backend(prompt)
"""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        if name.startswith(("tb_", "boom_weather")):
            del sys.modules[name]


def _write_agent(folder: Path, name: str) -> Path:
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(BOOM), encoding="utf-8")
    return path


def _eval(folder: Path, data: Path, agent: str, *extra: str) -> tuple[Any, dict[str, Any]]:
    out = folder / "out.json"
    args = ["eval", str(data), "--agent", agent, "--store", f"sqlite:///{folder / 's.db'}",
            "--out", str(out), "--fresh", "--no-adk-history", *extra]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code in (0, 1), result.output
    return result, json.loads(out.read_text(encoding="utf-8"))


def _show(folder: Path, case: str) -> Any:
    return runner.invoke(
        app, ["runs", "show", "latest", "--store", f"sqlite:///{folder / 's.db'}", "--case", case]
    )


def _assert_agents_frames(text: str, file: Path, *functions: str) -> None:
    assert f'File "{file}"' in text, text
    for function in functions:
        assert f"in {function}\n" in text, text
    assert "RuntimeError: backend exploded" in text, text
    # assay's own plumbing is left out
    assert "/assay/engine/" not in text and "/assay/agents/" not in text, text
    assert "asyncio" not in text, text


@pytest.mark.parametrize("function", ["answer", "async_answer"])
def test_a_callable_that_raises_keeps_its_traceback_everywhere(
    workdir: Path, function: str
) -> None:
    name = f"tb_{function}"
    path = _write_agent(workdir, name)
    result, report = _eval(workdir, HOME, f"{name}:{function}", "-v", "--case", "energy_today")
    (case,) = report["cases"]
    assert case["error"] == "agent raised RuntimeError: backend exploded"
    _assert_agents_frames(case["traceback"], path, function, "_backend")
    # -v printed it live, naming the case
    assert "case home_automation/energy_today (run 1): agent raised" in result.output
    _assert_agents_frames(result.output, path, function, "_backend")
    # the store keeps it with the case
    with Store.open(f"sqlite:///{workdir / 's.db'}") as db:
        (stored,) = db.case_results(db.list_runs()[0].id)
    assert stored["traceback"] == case["traceback"]
    # runs show --case prints it, by id or SET/ID
    for ref in ("energy_today", "home_automation/energy_today"):
        shown = _show(workdir, ref)
        assert shown.exit_code == 0, shown.output
        assert "case energy_today" in shown.output and "RUNTIME_FAILURE" in shown.output
        _assert_agents_frames(shown.output, path, function, "_backend")


def test_without_verbose_no_traceback_is_printed(workdir: Path) -> None:
    _write_agent(workdir, "tb_quiet")
    result, report = _eval(workdir, HOME, "tb_quiet:answer", "--case", "energy_today")
    assert report["cases"][0]["traceback"]
    assert "Traceback (most recent call last)" not in result.output
    # but it says where the traceback is
    with Store.open(f"sqlite:///{workdir / 's.db'}") as db:
        run_id = db.list_runs()[0].id
    assert (
        f"the agent raised in 1 case run(s): `assay runs show {run_id} --case energy_today`"
        " prints its traceback; -v prints each as it happens"
    ) in result.output


def test_a_case_that_passed_has_no_traceback_key(workdir: Path) -> None:
    (workdir / "tb_fine.py").write_text("def answer(prompt):\n    return 'ok'\n", "utf-8")
    _, report = _eval(workdir, HOME, "tb_fine:answer", "--case", "energy_today")
    (case,) = report["cases"]
    assert case["error"] is None and "traceback" not in case
    shown = _show(workdir, "energy_today")
    assert shown.exit_code == 0 and "traceback" not in shown.output


def test_runs_show_case_names_the_closest_id_when_none_matches(workdir: Path) -> None:
    _write_agent(workdir, "tb_missing")
    _eval(workdir, HOME, "tb_missing:answer")
    shown = _show(workdir, "energy_todya")
    assert shown.exit_code == 2
    assert "no such case in this run (did you mean 'energy_today'?)" in shown.output
    assert "\n  kitchen_light_status\n" in shown.output  # one id a line


def test_an_adk_agent_whose_tool_raises(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = workdir / "boom_weather"
    shutil.copytree(REPO / "examples" / "adk_weather", folder)
    tools = folder / "tools.py"
    source = tools.read_text(encoding="utf-8")
    first_line = "    found = _WEATHER.get(city.strip().lower())\n"
    broken = source.replace(first_line, '    raise RuntimeError("backend exploded")\n', 1)
    assert broken != source
    tools.write_text(broken, encoding="utf-8")
    monkeypatch.setenv("ASSAY_EXAMPLE_MODEL", "scripted-weather")
    _, report = _eval(
        workdir, folder / "weather.evalset.json", str(folder), "--case", "weather_paris"
    )
    (case,) = report["cases"]
    assert "backend exploded" in case["error"], case["error"]
    text = case["traceback"]
    assert f'File "{tools}"' in text and "in get_weather\n" in text, text
    assert "/assay/agents/" not in text, text
    shown = _show(workdir, "weather_paris")
    assert f'File "{tools}"' in shown.output and "in get_weather" in shown.output


class _Failing(BaseHTTPRequestHandler):
    BODY = (
        "Traceback (most recent call last):\n"
        '  File "/srv/agent/server.py", line 41, in handle_turn\n'
        "    rows = db.query(sql)\n"
        "ConnectionError: database is down\n"
    )

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = self.BODY.encode()
        self.send_response(500)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def failing_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Failing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/agent"
    server.shutdown()
    server.server_close()


def test_an_http_agent_keeps_the_error_body_it_answered(workdir: Path, failing_server: str) -> None:
    _, report = _eval(workdir, HOME, failing_server, "--case", "energy_today")
    (case,) = report["cases"]
    assert case["error"].startswith(f"agent raised AgentError: HTTP agent {failing_server}")
    text = case["traceback"]
    assert "the agent's reply:\n" in text
    assert 'File "/srv/agent/server.py", line 41, in handle_turn' in text
    assert text.rstrip().endswith("ConnectionError: database is down")
    shown = _show(workdir, "energy_today")
    assert "in handle_turn" in shown.output and "database is down" in shown.output


def test_the_streamed_path_over_row_files_keeps_it(workdir: Path) -> None:
    path = _write_agent(workdir, "tb_stream")
    rows = workdir / "rows.jsonl"
    lines = [json.dumps({"id": f"r{i}", "prompt": f"q{i}", "reference": "x"}) for i in range(3)]
    rows.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result, report = _eval(
        workdir, rows, "tb_stream:async_answer", "--metric", "response_match_score", "-v"
    )
    assert len(report["cases"]) == 3
    for case in report["cases"]:
        _assert_agents_frames(case["traceback"], path, "async_answer", "_backend")
    assert result.output.count("Traceback (most recent call last)") == 3
    assert "the agent raised in" not in result.output  # -v printed them already
    quiet_about_it, _ = _eval(workdir, rows, "tb_stream:async_answer", "-m", "exact_match")
    assert "Traceback (most recent call last)" not in quiet_about_it.output
    assert "the agent raised in 3 case run(s): `assay runs show " in quiet_about_it.output
    shown = _show(workdir, "r1")
    _assert_agents_frames(shown.output, path, "async_answer", "_backend")


def test_the_html_case_page_holds_the_traceback(workdir: Path) -> None:
    path = _write_agent(workdir, "tb_html")
    html = workdir / "report.html"
    _eval(workdir, HOME, "tb_html:answer", "--case", "energy_today", "--html", str(html))
    page = html.read_text(encoding="utf-8")
    # the page's data holds it (tests/report/test_html_traceback.py renders it in Chromium)
    assert '"traceback":' in page and "in _backend" in page and str(path) in page


@pytest.mark.parametrize("form", ["module", "adk_folder"])
def test_an_import_error_names_the_file_and_line(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    monkeypatch.delenv("MY_SERVICE_API_KEY", raising=False)
    source = 'import os\n\nAPI_KEY = os.environ["MY_SERVICE_API_KEY"]\n'
    if form == "module":
        raising = workdir / "tb_keyed.py"
        raising.write_text(source + "\ndef answer(prompt):\n    return 'hi'\n", "utf-8")
        spec = "tb_keyed:answer"
    else:
        folder = workdir / "tb_keyed_adk"
        folder.mkdir()
        (folder / "__init__.py").write_text("from . import agent\n", "utf-8")
        raising = folder / "agent.py"
        raising.write_text(source, "utf-8")
        spec = str(folder)
    result = runner.invoke(app, ["eval", str(HOME), "--agent", spec, "--no-store"])
    assert result.exit_code == 2, result.output
    assert "raised KeyError: 'MY_SERVICE_API_KEY'" in result.output
    assert f'at {raising}, line 3 (API_KEY = os.environ["MY_SERVICE_API_KEY"])' in result.output


def test_an_import_error_in_a_module_the_agent_imports_names_that_module(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MY_SERVICE_API_KEY", raising=False)
    settings = workdir / "tb_settings.py"
    settings.write_text('import os\nKEY = os.environ["MY_SERVICE_API_KEY"]\n', "utf-8")
    (workdir / "tb_uses_settings.py").write_text(
        "import tb_settings\n\ndef answer(prompt):\n    return 'hi'\n", "utf-8"
    )
    result = runner.invoke(
        app, ["eval", str(HOME), "--agent", "tb_uses_settings:answer", "--no-store"]
    )
    assert result.exit_code == 2, result.output
    assert "importing 'tb_uses_settings' raised KeyError: 'MY_SERVICE_API_KEY'" in result.output
    assert f"at {settings}, line 2 (KEY = " in result.output


def test_runs_show_case_prints_every_run_of_the_case(workdir: Path) -> None:
    _write_agent(workdir, "tb_repeat")
    _eval(workdir, HOME, "tb_repeat:answer", "--case", "energy_today", "--runs", "2")
    shown = _show(workdir, "energy_today")
    assert shown.exit_code == 0, shown.output
    assert shown.output.count("case energy_today") == 2
    assert "  run 1  " in shown.output and "  run 2  " in shown.output
    assert shown.output.count("traceback (the agent's frames):") == 2
