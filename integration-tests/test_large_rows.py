"""Rows of any size in a bounded heap: pylance writes tables of 1 MiB and 64 MiB values (820 MiB and
832 MiB, more than the heap of any JVM of the Spark application), as plain binary and as blob
columns; Spark (768 MiB driver, two 768 MiB executors, see large_rows_child.py) scans them, scans them
without the large column while reading almost none of their bytes, copies them with CTAS (a blob
column stays one) and changes the copy with UPDATE and MERGE; pylance reads every value of the copy
as Spark does. The same holds for values that compress to almost nothing: 850 MiB of them that
pylance stores in a few hundred KB are scanned, updated in place, merged and compacted (which
writes them whole), and pylance reads them back. One Spark application (large_rows_child.py) serves
every table of the module, so the cluster starts once."""
import hashlib
import json
import os
import random
import string
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


CASES = [(820, 1 << 20, False), (820, 1 << 20, True), (13, 64 << 20, False), (13, 64 << 20, True)]
COMPRESSIBLE_ROWS = 800


def _case_table(rows, size, blob):
    return f"lance.db.large_rows_{rows}_of_{size >> 20}mib_{'blob' if blob else 'binary'}"


COMPRESSIBLE_TABLE = "lance.db.large_rows_compressible"


@pytest.fixture(scope="module")
def child(warehouse):
    """Writes every table of the module with pylance, runs the child application once over all of
    them; returns (its results by table, its stderr)."""
    for rows, size, blob in CASES:
        path = table_path(warehouse, _case_table(rows, size, blob))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        _write(path, rows, size, blob)
    _write_compressible(table_path(warehouse, COMPRESSIBLE_TABLE), COMPRESSIBLE_ROWS)
    tables = [_case_table(*c) for c in CASES] + [f"{COMPRESSIBLE_TABLE}:in_place"]
    done = subprocess.run([sys.executable, str(CHILD), str(warehouse), *tables], capture_output=True, text=True, timeout=1800)
    results = {}
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            _, table, out = line.split(" ", 2)
            results[table] = json.loads(out)
    return results, f"exit {done.returncode}: {done.stderr[-4000:]}"


@pytest.mark.parametrize("rows,size,blob", CASES)
def test_large_rows_with_a_small_heap(warehouse, child, rows, size, blob):
    table = _case_table(rows, size, blob)
    path = table_path(warehouse, table)
    results, failure = child
    assert table in results, failure
    out = results[table]
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


def _compressible(rng, rows):
    """Per row, a 16-byte pattern of its 1 MiB `img` and a 16-letter pattern of its 64 KiB `note`."""
    return [(rng.randbytes(16), "".join(rng.choice(string.ascii_letters) for _ in range(16))) for _ in range(rows)]


def _digests(i, img, note):
    return [i, len(img), hashlib.sha1(img).hexdigest(), len(note), hashlib.sha1(note.encode()).hexdigest()]


def _compressible_schema():
    return pa.schema([("id", pa.int64()), ("img", pa.large_binary()), ("note", pa.string())])


def _write_compressible(path, rows):
    patterns = _compressible(random.Random(rows), rows)

    def batches():
        for start in range(0, rows, 50):
            ids = range(start, min(rows, start + 50))
            yield pa.record_batch([pa.array(ids, pa.int64()), pa.array([patterns[i][0] * 65536 for i in ids], pa.large_binary()),
                                   pa.array([patterns[i][1] * 4096 for i in ids])], schema=_compressible_schema())
    os.makedirs(os.path.dirname(path), exist_ok=True)
    lance.write_dataset(pa.RecordBatchReader.from_batches(_compressible_schema(), batches()), path)


def test_compressible_large_values_with_a_small_heap(warehouse, child):
    """800 rows of 1 MiB (a 16-byte pattern repeated) and 64 KiB strings (16 letters repeated), which
    pylance stores compressed value by value, a few hundred bytes a row, in one fragment: batches sized
    by the stored bytes asked for all its rows at once, 850 MiB decoded, in a 768 MiB executor."""
    path, rows = table_path(warehouse, COMPRESSIBLE_TABLE), COMPRESSIBLE_ROWS
    patterns = _compressible(random.Random(rows), rows)
    results, failure = child
    assert COMPRESSIBLE_TABLE in results, failure
    out = results[COMPRESSIBLE_TABLE]
    # The table as pylance wrote it: version 1 (the child changed it since).
    stored = sum(f.stat().st_size for f in lance.dataset(path, version=1).get_fragments()[0].data_files()
                 for f in [Path(path, "data", f.path)])
    assert stored < rows * 1024, stored
    assert out["count"] == rows and out["total_length"] == rows * ((1 << 20) + (64 << 10))
    assert out["sum_id"] == rows * (rows - 1) // 2
    assert out["whole_bytes_read"] >= stored * 0.99
    # The UPDATE rewrites `note` of a tenth of the rows in place, the MERGE moves whole rows.
    updates = [h for h in out["history"] if h[0] == "Update"]
    assert [h[1] for h in updates] == [str(rows // 10), None], out["history"]

    # UPDATE: id % 10 = 3 upper-cases note; MERGE: a row whose id - 1 is 2 mod 100 takes the img of
    # the row before it.
    def expected(i):
        note = patterns[i][1] * 4096
        return _digests(i, patterns[i - 1 if i % 100 == 3 else i][0] * 65536, note.upper() if i % 10 == 3 else note)
    want = [expected(i) for i in range(rows)]
    assert out["copy"] == want
    ds = lance.dataset(path)
    assert len(ds.get_fragments()) == 1, "the compaction rewrote every fragment into one"
    read = [_digests(*r) for b in ds.to_batches(columns=["id", "img", "note"], batch_size=16)
            for r in zip(*(c.to_pylist() for c in b.columns))]
    assert sorted(read) == want
