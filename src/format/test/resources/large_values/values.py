"""Compressible large values for LargeValueBatchesSuite, written and read by pylance.

values.py write PATH VERSION ROWS PER_FILE
    Writes ROWS rows (id int64; img large_binary of 1 MiB: 16 random bytes repeated; note string of
    64 KiB: 16 random letters repeated) with data_storage_version VERSION, PER_FILE rows a fragment.
    pylance compresses each value on its own (full-zip pages, zstd), so the files hold a few hundred
    bytes a row that decode to more than a megabyte.
values.py write_repeated PATH VERSION ROWS PER_FILE
    The same, but with values of random bytes that repeat: img takes one of 5 values in turn, note
    one of 5 strings a fragment. pylance stores each value once: dictionary pages, and for note
    constant pages in 2.2.
values.py digests PATH
    Reads the table.

Both print one JSON line: every row's id and the sha1 of its two values, in id order.
"""
import hashlib
import json
import os
import random
import string
import sys

import lance
import pyarrow as pa


def row(i, img, note):
    return [i, hashlib.sha1(img).hexdigest(), hashlib.sha1(note.encode()).hexdigest()]


def write(path, version, rows, per_file, repeated=False):
    schema = pa.schema([("id", pa.int64()), ("img", pa.large_binary()), ("note", pa.string())])
    rng = random.Random(rows)
    distinct = [(os.urandom(1 << 20), "".join(rng.choice(string.ascii_letters) for _ in range(64 << 10))) for _ in range(5)]
    out = []

    def batches():
        # Repeated values come a fragment at a time: pylance looks for repeats within what it buffers.
        step = per_file if repeated else 50
        for start in range(0, rows, step):
            ids = list(range(start, min(rows, start + step)))
            if repeated:
                imgs = [distinct[i % 5][0] for i in ids]
                notes = [distinct[i // per_file % 5][1] for i in ids]
            else:
                imgs = [os.urandom(16) * 65536 for _ in ids]
                notes = ["".join(rng.choice(string.ascii_letters) for _ in range(16)) * 4096 for _ in ids]
            out.extend(row(*r) for r in zip(ids, imgs, notes))
            yield pa.record_batch([pa.array(ids, pa.int64()), pa.array(imgs, pa.large_binary()), pa.array(notes, pa.string())],
                                  schema=schema)

    lance.write_dataset(pa.RecordBatchReader.from_batches(schema, batches()), path, data_storage_version=version,
                        max_rows_per_file=per_file)
    return out


def digests(path):
    out = []
    for batch in lance.dataset(path).to_batches(columns=["id", "img", "note"], batch_size=16):
        out.extend(row(*r) for r in zip(*(c.to_pylist() for c in batch.columns)))
    return sorted(out)


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "digests":
        print(json.dumps(digests(args[0])))
    else:
        print(json.dumps(write(args[0], args[1], int(args[2]), int(args[3]), repeated=command == "write_repeated")))
