"""What continuing from a state costs: the copy of the old version's checkpoint that a kept
query change makes while the job is down (act/state_copy.py), on a local folder and on S3.

    python -m tests.benchmarks.state_copy_bench [--files 2000] [--kib 64] [--latency-ms 20]

A checkpoint as a state store leaves it: `metadata`, 100 batches of offsets and commits, and
`--files` state files of `--kib` KiB each. Each is copied with one worker (the copy as it was
first written) and with COPY_WORKERS, side by side, on a local folder and on moto's S3 server
(a separate process on 127.0.0.1, every response delayed `--latency-ms`, as a real endpoint's
round trip). Prints a Markdown table: files, MiB, seconds, and the ratio.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from flink_sql_runner.act.state_copy import COPY_WORKERS, copy_state
from flink_sql_runner.stores.storage import FileStorage
from tests.benchmarks.common import machine, markdown_table, moto_server_process, s3_client
from tests.support.scratch import for_a_program


def _checkpoint(storage: FileStorage, root: str, files: int, kib: int) -> int:
    """Writes the checkpoint; its file count."""
    storage.write_bytes(f"{root}/metadata", b'{"id": "bench"}')
    for batch in range(100):
        storage.write_bytes(f"{root}/offsets/{batch}", b'v1\n{}\n{"orders":{"0":1}}')
        storage.write_bytes(f"{root}/commits/{batch}", b'v1\n{"nextBatchWatermarkMs":0}')
    body = os.urandom(kib * 1024)
    for n in range(files):
        storage.write_bytes(f"{root}/state/0/{n % 200}/{n // 200 + 1}.delta", body)
    return 201 + files


def _timed(storage: FileStorage, old: str, new: str, workers: int) -> float:
    began = time.perf_counter()
    copy_state(storage, old, new, lambda: None, time.sleep, workers)
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--kib", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=20)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="fsr-copy-bench-") as scratch:
        local = FileStorage()
        count = _checkpoint(local, f"{scratch}/ckpt/1", args.files, args.kib)
        mib = (args.files * args.kib * 1024) / 2**20
        serial = _timed(local, f"{scratch}/ckpt/1", f"{scratch}/ckpt/2", 1)
        parallel = _timed(local, f"{scratch}/ckpt/1", f"{scratch}/ckpt/3", COPY_WORKERS)
        rows.append(("local folder", count, f"{mib:.0f}", f"{serial:.2f} s",
                     f"{parallel:.2f} s", f"{serial / parallel:.1f}x"))  # fmt: skip
        with moto_server_process(args.latency_ms) as server:
            client = s3_client(server.url, Path(scratch))
            client.create_bucket(Bucket="ckpt")
            s3 = FileStorage(client)
            _checkpoint(s3, "s3://ckpt/jobs/orders/1", args.files, args.kib)
            serial = _timed(s3, "s3://ckpt/jobs/orders/1", "s3://ckpt/jobs/orders/2", 1)
            parallel = _timed(s3, "s3://ckpt/jobs/orders/1", "s3://ckpt/jobs/orders/3",
                              COPY_WORKERS)  # fmt: skip
            rows.append((f"S3 (moto, {args.latency_ms:.0f} ms a request)", count, f"{mib:.0f}",
                         f"{serial:.2f} s", f"{parallel:.2f} s",
                         f"{serial / parallel:.1f}x"))  # fmt: skip
    print(f"{machine()}; load {os.getloadavg()[0]:.1f}")
    headers = ("checkpoint on", "files", "MiB", "1 worker", f"{COPY_WORKERS} workers", "ratio")
    print(markdown_table(headers, rows))


if __name__ == "__main__":
    with for_a_program():
        main()
