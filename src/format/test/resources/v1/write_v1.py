"""Writes a legacy (V1, file format 0.2) dataset with pylance 14.0.2 for FileReaderV1Suite.

Usage: write_v1.py DIR. Writes DIR/t.lance (one fragment, batches of 100 rows, the last shorter) and
DIR/expected.tsv: one line per column, its name then one canonical value per row (as FileReaderV1Suite's
Canon renders vectors), from pylance's own read of the dataset.
"""
import decimal, os, sys
import numpy as np
import pyarrow as pa
import lance

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from canon import canon, ints_view  # noqa: E402

N = 1030
rng = np.random.default_rng(7)
ids = np.arange(N)


def maybe(values, every):
    return [None if i % every == 0 else v for i, v in enumerate(values)]


table = pa.table({
    "id": pa.array(ids, pa.int64()),
    "i8": pa.array(rng.integers(-128, 128, N), pa.int8()),
    "u16": pa.array(rng.integers(0, 2 ** 16, N), pa.uint16()),
    "i32": pa.array(rng.integers(-2 ** 31, 2 ** 31, N), pa.int32()),
    "f16": pa.array(rng.standard_normal(N).astype(np.float16)),
    "f32": pa.array(rng.standard_normal(N).astype(np.float32)),
    "f64": pa.array(rng.standard_normal(N)),
    "bool": pa.array(rng.integers(0, 2, N).astype(bool)),
    "date": pa.array((ids % 4000).astype("datetime64[D]"), pa.date32()),
    "ts": pa.array(1_700_000_000_000_000 + rng.integers(0, 10 ** 12, N), pa.timestamp("us")),
    "dec": pa.array([decimal.Decimal(int(x)).scaleb(-2) for x in rng.integers(-10 ** 9, 10 ** 9, N)], pa.decimal128(12, 2)),
    "fsb": pa.array([bytes([i % 256] * 5) for i in ids], pa.binary(5)),
    "s": pa.array(maybe([("v%d" % i) * (i % 5) for i in ids], 7)),
    "ls": pa.array([("w%d" % i) * (i % 3 + 1) for i in ids], pa.large_string()),
    "bin": pa.array(maybe([bytes(rng.integers(0, 256, i % 9, dtype=np.uint8)) for i in ids], 11)),
    "vec": pa.array([[float(i), float(-i), 0.5] for i in ids], pa.list_(pa.float32(), 3)),
    "li": pa.array([list(range(i % 6)) for i in ids], pa.list_(pa.int32())),
    "ll": pa.array([["x%d" % j for j in range(i % 4)] for i in ids], pa.large_list(pa.string())),
    "st": pa.array([{"a": int(i), "b": "b%d" % (i % 13), "c": [float(i)] * (i % 3)} for i in ids],
                   pa.struct([("a", pa.int64()), ("b", pa.string()), ("c", pa.list_(pa.float64()))])),
    "lst": pa.array([[{"p": int(i + j), "q": "q%d" % j} for j in range(i % 3)] for i in ids],
                    pa.list_(pa.struct([("p", pa.int32()), ("q", pa.string())]))),
})


out = sys.argv[1]
path = os.path.join(out, "t.lance")
lance.write_dataset(table, path, data_storage_version="legacy", max_rows_per_group=100)
ds = lance.dataset(path)
assert [(f.file_major_version, f.file_minor_version) for fr in ds.get_fragments() for f in fr.data_files()] == [(0, 2)]
read = ds.to_table()
with open(os.path.join(out, "expected.tsv"), "w") as f:
    for name in read.column_names:
        column = ints_view(read.column(name).combine_chunks())
        f.write("\t".join([name] + [canon(v, column.type) for v in column.to_pylist()]) + "\n")
print(ds.get_fragments()[0].data_files()[0].path)
