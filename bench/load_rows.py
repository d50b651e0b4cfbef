"""CPU time and retained memory of loading recorded Vertex rows (`assay.formats.load`).

Writes N seeded rows (the rows of `bench/score_rows.py`) to a JSONL file once, loads it
several times and prints the fastest and the median CPU time (`time.process_time`, so
other jobs on the machine count less than in wall time) and the memory the loaded eval
set holds (tracemalloc).

    python bench/load_rows.py [--rows 20000] [--repeat 7]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from assay import formats
from score_rows import write_rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "rows.jsonl"
        write_rows(path, args.rows)
        times: list[float] = []
        for _ in range(args.repeat):
            started = time.process_time()
            evalset = formats.load(path)
            times.append(time.process_time() - started)
            del evalset
            gc.collect()
        tracemalloc.start()
        evalset = formats.load(path)
        held, _ = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    per_row = min(times) / len(evalset.cases) * 1e6
    print(
        f"{len(evalset.cases):,} rows: CPU min {min(times) * 1000:.0f} ms,"
        f" median {statistics.median(times) * 1000:.0f} ms ({per_row:.1f} µs/row);"
        f" held {held / 2**20:.1f} MiB"
    )


if __name__ == "__main__":
    main()
