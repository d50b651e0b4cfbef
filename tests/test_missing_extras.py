"""A missing optional dependency is one line naming it and `pip install -e '.[EXTRA]'`:
exit 2, no traceback — for every extra, and for an `--agent module:attr` whose module
imports one (named as the missing extra, not blamed on the import path).

Each command runs in a subprocess where the extra's modules are hidden the way Python
sees an uninstalled package (`sys.modules[name] = None`: imports fail, `find_spec` finds
nothing).
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from assay.errors import OPTIONAL_IMPORTS

REPO = Path(__file__).resolve().parents[1]
ROWS = "examples/recorded/home_rows.jsonl"
WEATHER = "examples/adk_weather/weather.evalset.json"

HIDE_AND_RUN = """
import sys
for name in sys.argv[1].split(","):
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[loaded]
    sys.modules[name] = None
sys.argv = ["assay", *sys.argv[2:]]
from assay.cli import main
main()
"""

CASES = [
    ("adk", "google.adk", ["eval", WEATHER, "--agent", "examples/adk_weather", "--no-store"]),
    ("adk", "google.adk",
     ["eval", WEATHER, "--agent", "examples.adk_weather.agent:root_agent", "--no-store"]),
    ("adk", "google",
     ["eval", WEATHER, "--agent", "examples.adk_weather.agent:root_agent", "--no-store"]),
    ("openai", "openai", ["eval", ROWS, "--no-store", "--judge", "openai:judge"]),
    ("gemini", "google.genai", ["eval", ROWS, "--no-store", "--judge", "gemini-2.5-flash"]),
    ("anthropic", "anthropic", ["eval", ROWS, "--no-store", "--judge", "anthropic:claude"]),
    ("local", "xllamacpp", ["eval", ROWS, "--no-store", "--judge", "local:/m/judge.gguf"]),
    ("service", "fastapi", ["serve", "--no-auth", "--port", "0"]),
    ("service", "uvicorn", ["serve", "--no-auth", "--port", "0"]),
    ("service", "mcp", ["serve", "--no-auth", "--port", "0"]),
    ("ces", "google.cloud.ces_v1beta", ["serve", "--no-auth", "--port", "0", "--grpc-port", "0"]),
    ("mlflow", "mlflow", ["eval", ROWS, "--no-store", "--mlflow", "file:./mlruns-never"]),
    ("postgres", "psycopg", ["eval", ROWS, "--store", "postgresql://u@127.0.0.1:9/none"]),
    ("ray", "ray", ["eval", ROWS, "--no-store", "--executor", "ray"]),
]  # fmt: skip


def _run(hidden: str, args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    store = tmp_path / "s.db"
    if args[:1] == ["serve"]:
        args = [*args, "--store", f"sqlite:///{store}"]
    return subprocess.run(
        [sys.executable, "-c", HIDE_AND_RUN, hidden, *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(("extra", "hidden", "args"), CASES, ids=lambda v: str(v)[:40])
def test_a_missing_extra_is_one_line_with_the_install_command(
    extra: str, hidden: str, args: list[str], tmp_path: Path
) -> None:
    done = _run(hidden, args, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ") and f"pip install -e '.[{extra}]'" in lines[0], lines


def test_module_attr_names_the_missing_extra_not_the_path(tmp_path: Path) -> None:
    args = ["eval", WEATHER, "--agent", "examples.adk_weather.agent:root_agent", "--no-store"]
    line = _run("google.adk", args, tmp_path).stderr
    assert "run from the folder" not in line and "cannot import module" not in line, line
    assert "module 'examples.adk_weather.agent' needs 'google.adk" in line, line


def test_a_wrong_module_path_is_still_blamed_on_the_path(tmp_path: Path) -> None:
    args = ["eval", WEATHER, "--agent", "examples.no_such_agent:root_agent", "--no-store"]
    done = _run("nothing_hidden", args, tmp_path)
    assert done.returncode == 2
    assert "cannot import module 'examples.no_such_agent'" in done.stderr
    assert "run from the folder that contains it" in done.stderr


def test_pandas_missing_names_its_extra_in_python(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['pandas'] = None\n"
        "from assay import evaluate\n"
        "from assay.errors import AssayError\n"
        f"result = evaluate({ROWS!r})\n"
        "try:\n    result.to_pandas()\nexcept AssayError as exc:\n    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert "pip install -e '.[pandas]'" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("flags", [[], ["--html", "r.html"]], ids=["streamed", "loaded"])
def test_a_parquet_file_without_pyarrow_is_one_line(tmp_path: Path, flags: list[str]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "rows.parquet"
    pq.write_table(
        pa.Table.from_pylist([{"prompt": "hi", "response": "a", "reference": "a"}]), data
    )
    args = ["eval", str(data), "--metric", "response_match_score", "--no-store",
            *[str(tmp_path / f) if f.endswith(".html") else f for f in flags]]  # fmt: skip
    done = _run("pyarrow", args, tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "pip install -e '.[parquet]'" in lines[0], lines


def test_every_feature_extra_is_known_by_its_imports() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    features = set(project["optional-dependencies"]) - {"all", "dev", "ui-test"}
    assert {extra for _, extra in OPTIONAL_IMPORTS.values()} == features
    assert {extra for extra, _, _ in CASES} | {"pandas", "parquet"} == features
