"""Rows of any size in a bounded heap: pylance writes tables of 1 MiB and 64 MiB values (2 GiB and
1.25 GiB, more than the heap of any JVM of the Spark application), as plain binary and as blob
columns; Spark (1 GiB driver, two 1 GiB executors, see large_rows_child.py) scans them, scans them
without the large column while reading almost none of their bytes, copies them with CTAS (a blob
column stays one) and changes the copy with UPDATE and MERGE; pylance reads every value of the copy
as Spark does."""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import lance
import numpy as np
import pyarrow as pa
import pytest

from conftest import table_path

CHILD = Path(__file__).with_name("large_rows_child.py")


def _schema(blob):
    metadata = {"lance-encoding:blob": "true"} if blob else None
    return pa.schema([pa.field("id", pa.int64()), pa.field("img", pa.large_binary(), metadata=metadata)])


def _write(path, rows, size, blob):
    """`rows` rows of id and `size` random bytes, written by pylance in batches of about 32 MiB."""
    rng = np.random.default_rng(rows)
    per_batch = max(1, (32 << 20) // size)

    def batches():
        for start in range(0, rows, per_batch):
            ids = list(range(start, min(rows, start + per_batch)))
            yield pa.record_batch([pa.array(ids, pa.int64()), pa.array([rng.bytes(size) for _ in ids], pa.large_binary())],
                                  schema=_schema(blob))
    lance.write_dataset(pa.RecordBatchReader.from_batches(_schema(blob), batches()), path)


def _values(path):
    """(id, value) of every row, as pylance reads them, a batch at a time (blobs with take_blobs)."""
    ds = lance.dataset(path)
    if "blob" in str(ds.schema.field("img").type):
        for batch in ds.to_batches(columns=["id"], with_row_address=True, batch_size=16):
            blobs = ds.take_blobs("img", addresses=batch.column("_rowaddr").to_pylist())
            yield from zip(batch.column("id").to_pylist(), (b.read() for b in blobs))
        return
    for batch in ds.to_batches(columns=["id", "img"], batch_size=16):
        yield from zip(batch.column(0).to_pylist(), (v.as_py() for v in batch.column(1)))


def _summary(rows):
    return [[i, len(v), hashlib.sha1(v).hexdigest()] for i, v in rows]


def _expected_copy(path):
    """The copy's rows after the child's UPDATE (id % 7 = 1 keeps its first 1000 bytes) and MERGE
    (a row whose id - 1 is 2 mod 5 takes the value of the row before it), from the original's rows
    in id order, holding one value at a time."""
    before = None
    for i, v in _values(path):
        changed = before if i >= 1 and (i - 1) % 5 == 2 else (v[:1000] if i % 7 == 1 else v)
        yield i, changed
        before = v


@pytest.mark.parametrize("blob", [False, True])
@pytest.mark.parametrize("rows,size", [(2000, 1 << 20), (20, 64 << 20)])
def test_large_rows_with_a_small_heap(warehouse, table_name, rows, size, blob):
    table = table_name
    path = table_path(warehouse, table)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    _write(path, rows, size, blob)

    done = subprocess.run([sys.executable, str(CHILD), str(warehouse), table], capture_output=True, text=True, timeout=900)
    result = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and result, done.stderr[-4000:]
    out = json.loads(result[0][len("RESULT "):])
    assert out["count"] == rows and out["total_length"] == rows * size
    assert out["sum_id"] == rows * (rows - 1) // 2
    table_bytes = sum(f.stat().st_size for f in Path(path, "data").rglob("*") if f.is_file())
    assert out["whole_bytes_read"] >= table_bytes * 0.99
    # The scan of `id` alone reads the small column's pages and the footers, not the large values.
    assert out["ids_bytes_read"] < max(table_bytes // 1000, 1 << 20), (out["ids_bytes_read"], table_bytes)

    # pylance wrote the rows in id order and reads them so.
    want = _summary(_expected_copy(path))
    assert [r[0] for r in want] == list(range(rows))
    assert out["copy"] == want
    copy_path = table_path(warehouse, f"{table}_copy")
    assert ("blob" in str(lance.dataset(copy_path).schema.field("img").type)) == blob
    assert sorted(_summary(_values(copy_path))) == want
