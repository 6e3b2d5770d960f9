"""Writes a legacy (V1, file format 0.2) dataset with pylance 14.0.2 for FileReaderV1Suite.

Usage: write_v1.py DIR. Writes DIR/t.lance (one fragment, batches of 100 rows, the last shorter) and
DIR/expected.tsv: one line per column, its name then one canonical value per row (as FileReaderV1Suite's
Canon renders vectors), from pylance's own read of the dataset.
"""
import decimal, os, struct, sys
import numpy as np
import pyarrow as pa
import lance

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


def canon(v, t):
    if v is None:
        return "null"
    if pa.types.is_boolean(t):
        return "true" if v else "false"
    if pa.types.is_floating(t):
        fmt = {16: ("h:%04x", None), 32: ("f:%08x", "<f"), 64: ("d:%016x", "<d")}[t.bit_width]
        if t.bit_width == 16:
            return fmt[0] % np.array([v], np.float16).view(np.uint16)[0]
        return fmt[0] % int.from_bytes(struct.pack(fmt[1], v), "little")
    if pa.types.is_decimal(t):
        return str(int(v.scaleb(t.scale)))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "x:" + v.encode("utf-8").hex()
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "x:" + v.hex()
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return "[" + ",".join(canon(x, t.value_type) for x in v) + "]"
    if pa.types.is_struct(t):
        return "{" + ",".join(f.name + "=" + canon(v[f.name], f.type) for f in t) + "}"
    return str(int(v))


def as_ints(column):
    t = column.type
    if pa.types.is_date32(t):
        return column.cast(pa.int32())
    if pa.types.is_timestamp(t):
        return column.cast(pa.int64())
    return column


out = sys.argv[1]
path = os.path.join(out, "t.lance")
lance.write_dataset(table, path, data_storage_version="legacy", max_rows_per_group=100)
ds = lance.dataset(path)
assert [(f.file_major_version, f.file_minor_version) for fr in ds.get_fragments() for f in fr.data_files()] == [(0, 2)]
read = ds.to_table()
with open(os.path.join(out, "expected.tsv"), "w") as f:
    for name in read.column_names:
        column = as_ints(read.column(name))
        f.write("\t".join([name] + [canon(v, column.type) for v in column.to_pylist()]) + "\n")
print(ds.get_fragments()[0].data_files()[0].path)
