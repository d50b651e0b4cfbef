"""`RowFile.chunks`: a JSON-lines file read as bytes chunks (what the reading process
sends to the workers) gives exactly the rows, line numbers and batch starts that
`RowFile.batches` gives, whatever its blank lines, line ends and line lengths."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

import assay.formats.stream as stream
from assay.formats.stream import LineChunk, RowFile


def _file(rng: random.Random, path: Path) -> Path:
    lines = []
    for i in range(rng.randint(0, 40)):
        kind = rng.random()
        if kind < 0.1:
            lines.append(b"\n")
        elif kind < 0.15:
            lines.append(b"  \t\r\n")  # blank: skipped, but it has a line number
        elif kind < 0.2:
            lines.append(b' {"id": "x%d"}\r\n' % i)  # a row that does not start with {
        else:
            lines.append(b'{"id": "%s"}\n' % (b"y" * rng.randint(0, 3000)))
    data = b"".join(lines)
    if rng.random() < 0.3:
        data = data.rstrip(b"\n")  # the last line without a line end
    if rng.random() < 0.1:
        data += b"   "
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("seed", range(8))
def test_chunks_give_the_rows_batches_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    for trial in range(40):
        # Reads smaller than a line make the reader keep what is left and read on.
        monkeypatch.setattr(stream, "_READ_BYTES", rng.choice([1, 7, 100, 1 << 20]))
        row_file = RowFile(_file(rng, tmp_path / f"r{trial}.jsonl"), "jsonl")
        size = rng.randint(1, 7)
        batches = list(row_file.batches(size))
        chunks = list(row_file.chunks(size))
        assert all(isinstance(c, LineChunk) for c in chunks)
        made = [c.batch() for c in chunks if isinstance(c, LineChunk)]
        assert made == batches
        assert [c.rows for c in chunks if isinstance(c, LineChunk)] == [
            len(b.rows) for b in batches
        ]
        assert sum(c.rows for c in chunks if isinstance(c, LineChunk)) == row_file.count_rows()


def test_other_files_are_read_in_batches(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("prompt,response\na,b\nc,d\n", encoding="utf-8")
    row_file = RowFile(path, "csv")
    assert list(row_file.chunks(1)) == list(row_file.batches(1))
