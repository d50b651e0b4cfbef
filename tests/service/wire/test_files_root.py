"""The files root holds (issue #31): traps planted under `--files-root`, through Google's
CES client over REST and gRPC against a real server on loopback (the `client` fixture
of test_ces_walk, whose files root is the session's temporary folder).

Before: an export into a folder whose `evaluations.json` was a symlink overwrote the
file outside the root it led to; an import through such a link read the outside file;
a YAML alias bomb took a minute and gigabytes; a symlink loop, a 6,000-character path,
a 300-character component, a NUL in the path or a 10,000-deep JSON document answered
500. Each is now INVALID_ARGUMENT naming the field.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.cloud import ces_v1beta as ces
from test_ces_generate import INVALID
from test_ces_rest import PARENT, golden_evaluation
from test_ces_transfer import OTHER
from test_ces_walk import client, wire

__all__ = ["client", "wire"]

# 469 bytes: nine levels of ten aliases each, a billion strings once expanded.
ALIAS_BOMB = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside the server's files root (the session's temporary folder)."""
    folder = Path(tempfile.mkdtemp(prefix="assay-outside-"))
    yield folder
    shutil.rmtree(folder)


def _import(client: ces.EvaluationServiceClient, uri: str) -> ces.ImportEvaluationsResponse:
    answer = client.import_evaluations(
        request=ces.ImportEvaluationsRequest(parent=OTHER, gcs_uri=uri)
    ).result(timeout=60)
    assert isinstance(answer, ces.ImportEvaluationsResponse)
    return answer


def _export(client: ces.EvaluationServiceClient, name: str, uri: str) -> None:
    client.export_evaluations(
        request=ces.ExportEvaluationsRequest(
            parent=PARENT,
            names=[name],
            include_evaluations=True,
            export_options=ces.ExportOptions(gcs_uri=uri),
        )
    ).result(timeout=60)


def _evaluation(client: ces.EvaluationServiceClient) -> str:
    made = client.create_evaluation(
        parent=PARENT, evaluation=golden_evaluation("weather"), evaluation_id="weather"
    )
    return str(made.name)


def test_an_export_through_a_planted_file_link_is_refused(
    client: ces.EvaluationServiceClient, tmp_path: Path, outside: Path
) -> None:
    name = _evaluation(client)
    victim = outside / "precious.txt"
    victim.write_text("keep me")
    trap = tmp_path / "trap"
    trap.mkdir()
    (trap / "evaluations.json").symlink_to(victim)
    with pytest.raises(INVALID, match=r"export_options\.gcs_uri.*outside the server's files root"):
        _export(client, name, f"file://{trap}")
    assert victim.read_text() == "keep me"
    # A link to a file inside the root is replaced by the export, not written through.
    inside = tmp_path / "inside.json"
    inside.write_text("inside")
    (trap / "evaluations.json").unlink()
    os.link(inside, trap / "evaluations.json")  # a hard link: same file, two names
    _export(client, name, f"file://{trap}")
    assert inside.read_text() == "inside"
    assert json.loads((trap / "evaluations.json").read_text())["evaluations"][0]["name"] == name
    assert [p.name for p in trap.iterdir()] == ["evaluations.json"]  # no partial file left


def test_an_import_through_a_planted_file_link_is_refused(
    client: ces.EvaluationServiceClient, tmp_path: Path, outside: Path
) -> None:
    secret = outside / "evaluations.json"
    secret.write_text(json.dumps({"evaluations": [{"displayName": "outside", "golden": {}}]}))
    trap = tmp_path / "readtrap"
    trap.mkdir()
    (trap / "evaluations.json").symlink_to(secret)
    for uri in (f"file://{trap}", f"file://{trap}/evaluations.json"):
        with pytest.raises(INVALID, match=r"gcs_uri.*outside the server's files root"):
            _import(client, uri)
    assert list(client.list_evaluations(parent=OTHER)) == []


def _loop(tmp_path: Path) -> Path:
    (tmp_path / "loop-a").symlink_to(tmp_path / "loop-b")
    (tmp_path / "loop-b").symlink_to(tmp_path / "loop-a")
    return tmp_path / "loop-a" / "evaluations.json"


@pytest.mark.parametrize(
    ("case", "words"),
    [
        ("loop", "symbolic link loop"),
        ("long path", "the limit is 4096"),
        ("long component", "the limit is 255"),
        ("NUL", "NUL"),
    ],
)
def test_hostile_paths_are_refused_naming_the_field(
    client: ces.EvaluationServiceClient, tmp_path: Path, case: str, words: str
) -> None:
    name = _evaluation(client)
    path = {
        "loop": lambda: str(_loop(tmp_path)),
        "long path": lambda: str(tmp_path) + "/d" * 3000,
        "long component": lambda: f"{tmp_path}/{'x' * 300}",
        "NUL": lambda: f"{tmp_path}/a\x00b",
    }[case]()
    # (REST names the field as its JSON spells it: the NUL is refused with the body.)
    with pytest.raises(INVALID, match=rf"(gcs_uri|gcsUri).*{words}"):
        _import(client, f"file://{path}")
    with pytest.raises(INVALID, match=rf"(export_options\.gcs_uri|exportOptions\.gcsUri).*{words}"):
        _export(client, name, path)
    assert client.get_evaluation(name=name).display_name == "weather"  # still serving


def _peak_rss_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def test_a_yaml_alias_bomb_is_refused_before_it_is_built(
    client: ces.EvaluationServiceClient, tmp_path: Path
) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(ALIAS_BOMB)
    assert len(ALIAS_BOMB.encode()) <= 469
    before = _peak_rss_kib()
    with pytest.raises(INVALID, match=r"gcs_uri.*aliases are expanded"):
        _import(client, f"file://{bomb}")
    # The server runs in this process: its peak memory grew by less than 100 MiB.
    assert _peak_rss_kib() - before < 100 * 1024


def test_yaml_aliases_within_the_limit_are_read(
    client: ces.EvaluationServiceClient, tmp_path: Path
) -> None:
    shared = tmp_path / "shared.yaml"
    shared.write_text(
        "evaluations:\n"
        "- displayName: one\n"
        "  golden: &golden\n"
        "    turns: [{steps: [{userInput: {text: hi}}]}]\n"
        "- displayName: two\n"
        "  golden: *golden\n"
    )
    answer = _import(client, f"file://{shared}")
    assert answer.import_failure_count == 0, answer.error_messages
    assert sorted(e.display_name for e in answer.evaluations) == ["one", "two"]


@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_a_document_nested_10000_deep_is_refused(
    client: ces.EvaluationServiceClient, tmp_path: Path, suffix: str
) -> None:
    deep = tmp_path / f"deep.{suffix}"
    deep.write_text('{"evaluations": ' + "[" * 10_000 + "]" * 10_000 + "}")
    with pytest.raises(INVALID, match=r"gcs_uri.*nested deeper than 100 levels"):
        _import(client, f"file://{deep}")


def test_a_fifo_or_folder_named_as_the_file_is_refused(
    client: ces.EvaluationServiceClient, tmp_path: Path
) -> None:
    os.mkfifo(tmp_path / "evaluations.json")  # reading it would block forever
    with pytest.raises(INVALID, match=r"gcs_uri.*not a regular file"):
        _import(client, f"file://{tmp_path}/evaluations.json")
    folder = tmp_path / "f"
    (folder / "evaluations.json").mkdir(parents=True)
    with pytest.raises(INVALID, match=r"gcs_uri"):
        _import(client, f"file://{folder}")
