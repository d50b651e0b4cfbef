"""Benchmark: a CES CSV import of 60,000 evaluations (about 2 MB) through the service.

    python bench/import_csv.py [--count 60000] [--store sqlite:///path.db]

Starts the service on a loopback port (uvicorn in a thread, auth on), sends one
`ImportEvaluations` with `csv_content` through Google's CES client over REST, and
prints: how long the request took to be answered (a pending long-running operation),
how long the server took to write every evaluation (the operation's create and end
times: batched writes, `ServiceLimits.import_batch` per transaction) with the rate in
evaluations/s, and the time until the client held the finished operation (which lists
every evaluation imported). Not a test: nothing here is asserted about time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent / "tests" / "service"
sys.path[:0] = [str(TESTS), str(TESTS / "wire")]

from google.cloud import ces_v1beta as ces  # noqa: E402
from service_server import create_key, serve  # noqa: E402
from test_ces_rest import PARENT, rest_client  # noqa: E402

from assay.store import Store  # noqa: E402


def csv_content(count: int) -> bytes:
    rows = ["display_name,turn_index,action_type,text"]
    rows += [f"eval{i:05d},1,user_input,Hi there!" for i in range(count)]
    return ("\n".join(rows) + "\n").encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--count", type=int, default=60_000)
    parser.add_argument("--store", default=None, help="store URL (default: a new SQLite file)")
    args = parser.parse_args()
    url = args.store or f"sqlite:///{tempfile.mkdtemp()}/assay.db"
    store = Store.open(url)
    server = serve(store)
    try:
        client = rest_client(server, create_key(store))
        content = csv_content(args.count)
        started = time.perf_counter()
        operation = client.import_evaluations(
            request=ces.ImportEvaluationsRequest(parent=PARENT, csv_content=content)
        )
        answered = time.perf_counter() - started
        response = operation.result(timeout=3600)
        finished = time.perf_counter() - started
        meta = operation.metadata
        written = (meta.end_time - meta.create_time).total_seconds()
        print(f"{args.count} evaluations, {len(content):,} bytes of CSV, store {url}")
        print(f"answered (pending operation) in {answered:.1f} s")
        print(
            f"written by the server in {written:.1f} s: {args.count / written:,.0f} evaluations/s"
        )
        print(f"finished operation at the client after {finished:.1f} s")
        print(f"imported {len(response.evaluations)}, failed {response.import_failure_count}")
    finally:
        server.stop()
        store.close()


if __name__ == "__main__":
    main()
