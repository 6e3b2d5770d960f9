"""Writes the Lance 2.1/2.2 test files of FileReader21Suite with pylance 14.0.2.

Run from the repository root:  .venv/bin/python src/test/resources/lance21/generate.py
For every corpus C and version V it writes C_V.lance, and C.expected.gz for all versions. The expected file has one
line per column: the column name, then one canonical value per row, tab-separated (see canon()).
The values come from pylance's own reader (LanceFileReader.read_all), not from the input table.
"""
import decimal, gzip, os, struct, sys
import numpy as np
import pyarrow as pa
import lance.file

OUT = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(OUT))
from canon import canon, ints_view  # noqa: E402


def write(name, tbl, versions=("2.1", "2.2"), **kw):
    for v in versions:
        path = os.path.join(OUT, f"{name}_{v}.lance")
        if os.path.exists(path):
            os.remove(path)
        with lance.file.LanceFileWriter(path, tbl.schema, version=v, **kw) as w:
            w.write_batch(tbl)
        back = lance.file.LanceFileReader(path).read_all().to_table()
        assert back.equals(tbl), name
        text = "".join(col + "\t" + "\t".join(canon(x, a.type) for x in a.to_pylist()) + "\n"
                       for col in back.column_names for a in [ints_view(back.column(col).combine_chunks())])
        expected = os.path.join(OUT, f"{name}.expected.gz")
        if v == versions[0]:
            with gzip.open(expected, "wt", compresslevel=9) as f:
                f.write(text)
        else:
            with gzip.open(expected, "rt") as f:
                assert f.read() == text, name


rng = np.random.default_rng(42)


def nulled(a, every=7):
    mask = np.zeros(len(a), bool)
    mask[::every] = True
    return pa.array(a.to_pylist(), type=a.type, mask=mask)


# ---- prim: the primitive matrix (LANCE-FILE-2.1-2.2.md §10) ----
N = 900
cols = {}
def add(name, arr):
    cols[name] = arr
    cols[name + "_n"] = nulled(arr)
for t, b in [(pa.int8(), 8), (pa.int16(), 16), (pa.int32(), 32), (pa.int64(), 64)]:
    lo, hi = -(2 ** (b - 1)), 2 ** (b - 1) - 1
    add(f"i{b}_seq", pa.array((np.arange(N) % min(2 ** (b - 1), 2 ** 40)).astype(np.int64), t))
    add(f"i{b}_small", pa.array(rng.integers(0, 100, N), t))
    add(f"i{b}_full", pa.array(rng.integers(lo, hi, N, endpoint=True), t))
    add(f"i{b}_lowcard", pa.array(rng.choice(np.array([lo, 0, hi, 17, -5]), N), t))
    add(f"i{b}_const", pa.array(np.full(N, 7), t))
add("u32", pa.array(rng.integers(0, 2 ** 32, N, dtype=np.uint64), pa.uint32()))
add("i64_runs", pa.array(np.repeat(np.arange(N // 300), 300) * 1000003, pa.int64()))
add("f16", pa.array(rng.standard_normal(N).astype(np.float16)))
add("f32", pa.array(rng.standard_normal(N).astype(np.float32)))
add("f64", pa.array(rng.standard_normal(N)))
add("f64_lowcard", pa.array(rng.choice([0.5, 1.25, -3.0], N)))
add("bool", pa.array(rng.integers(0, 2, N).astype(bool)))
add("bool_const", pa.array(np.ones(N, bool)))
add("date32", pa.array((np.arange(N) % 3000).astype("datetime64[D]"), pa.date32()))
add("ts_us", pa.array(1_700_000_000_000_000 + rng.integers(0, 10 ** 12, N), pa.timestamp("us")))
add("ts_ms_utc", pa.array(1_700_000_000_000 + rng.integers(0, 10 ** 9, N), pa.timestamp("ms", "UTC")))
add("dec128", pa.array([decimal.Decimal(int(x)) / 100 for x in rng.integers(-10 ** 8, 10 ** 8, N)], pa.decimal128(12, 2)))
add("dec128_lowcard", pa.array([decimal.Decimal(int(x)) / 100 for x in rng.choice([5, -12345, 99], N)], pa.decimal128(12, 2)))
add("str_short", pa.array([f"s{x}_{'ab' * (x % 11)}_{'q' * (x % 9)}" for x in rng.integers(0, 10 ** 6, N)]))
add("str_tiny", pa.array([f"t{x}" for x in rng.integers(0, 10 ** 6, N)]))
add("str_lowcard", pa.array(rng.choice(["red", "green", "blue", "yellow"], N).tolist()))
add("str_const", pa.array(["hello"] * N))
add("large_str", pa.array([f"L{x}_{'xy' * (x % 9)}" for x in rng.integers(0, 10 ** 6, N)], pa.large_string()))
add("binary", pa.array([rng.bytes(int(k)) for k in rng.integers(0, 40, N)], pa.binary()))
cols["allnull_i64"] = pa.array([None] * N, pa.int64())
cols["allnull_str"] = pa.array([None] * N, pa.string())
cols["nulls_at_end"] = pa.array(list(range(N - 100)) + [None] * 100, pa.int32())
write("prim", pa.table(cols))

# ---- nested: lists, structs, fixed-size lists ----
N = 1200
cols = {}
cols["list_i32"] = pa.array([[int(v) for v in rng.integers(0, 1000, int(rng.integers(1, 6)))] for _ in range(N)], pa.list_(pa.int32()))
cols["list_i32_n"] = pa.array([None if i % 11 == 0 else ([] if i % 13 == 0 else
    [None if (i + j) % 9 == 0 else int(v) for j, v in enumerate(rng.integers(0, 1000, int(rng.integers(1, 6))))])
    for i in range(N)], pa.list_(pa.int32()))
cols["list_str"] = pa.array([None if i % 17 == 0 else [f"w{int(v)}" for v in rng.integers(0, 50, int(rng.integers(0, 4)))]
    for i in range(N)], pa.list_(pa.string()))
cols["large_list"] = pa.array([[int(v) for v in rng.integers(-5, 5, int(rng.integers(0, 3)))] for _ in range(N)], pa.large_list(pa.int64()))
sa = pa.array(rng.integers(0, 10 ** 6, N), pa.int32())
sb = pa.array([f"b{x}" for x in rng.integers(0, 10 ** 6, N)])
cols["struct_n"] = pa.StructArray.from_arrays([nulled(sa), sb], names=["a", "b"], mask=pa.array(np.arange(N) % 5 == 0))
inner = pa.StructArray.from_arrays([pa.array(np.arange(N), pa.int64()), nulled(pa.array(rng.standard_normal(N)), 3)], names=["x", "y"],
    mask=pa.array(np.arange(N) % 6 == 1))
cols["nested_struct"] = pa.StructArray.from_arrays([inner, pa.array(rng.integers(0, 2, N).astype(bool))], names=["in", "flag"],
    mask=pa.array(np.arange(N) % 10 == 3))
cols["list_struct"] = pa.array([None if i % 9 == 0 else [None if (i + j) % 4 == 3 else
    {"a": None if (i + j) % 5 == 0 else int(i * 10 + j), "b": f"e{i % 50}" if j % 2 else None} for j in range(i % 4)]
    for i in range(N)], pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())])))
cols["list_list"] = pa.array([None if i % 8 == 0 else [None if (i + j) % 5 == 0 else list(range(i % 3 + j)) for j in range(i % 4)]
    for i in range(N)], pa.list_(pa.list_(pa.int32())))
cols["struct_list"] = pa.array([None if i % 6 == 0 else {"l": None if i % 4 == 0 else [i, i + 1][: i % 3], "k": i}
    for i in range(N)], pa.struct([("l", pa.list_(pa.int16())), ("k", pa.int32())]))
fsl = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(N * 8).astype(np.float32)), 8)
cols["fsl8"] = fsl
cols["fsl8_n"] = nulled(fsl)
cols["allnull_list"] = pa.array([None] * N, pa.list_(pa.int32()))
cols["allnull_struct"] = pa.array([None] * N, pa.struct([("p", pa.int32())]))
cols["const_list"] = pa.array([[1, 2]] * N, pa.list_(pa.int64()))
write("nested", pa.table(cols))

# ---- wide: values of 256 bytes and more (full-zip) ----
N = 32
cols = {}
add("str_long", pa.array(["L" * 300 + str(x) for x in rng.integers(0, 10 ** 9, N)]))
add("str_255", pa.array([("%05d" % i) * 51 for i in range(N)]))
add("str_256", pa.array([("%04d" % i) * 64 for i in range(N)]))
add("bin_huge", pa.array([bytes(rng.integers(0, 4, 40000).astype(np.uint8)) if i % 16 == 0 else b"small" for i in range(N)], pa.binary()))
fsl = pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(N * 128).astype(np.float32)), 128)
add("fsl128", fsl)
cols["fsl63"] = (pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(N * 63).astype(np.float32)), 63))
cols["fsl64"] = (pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(N * 64).astype(np.float32)), 64))
cols["list_long_str"] = pa.array([None if i % 7 == 0 else ([] if i % 5 == 0 else ["M" * 260 + str(i * 10 + j) for j in range(i % 3 + 1)])
    for i in range(N)], pa.list_(pa.string()))
cols["struct_long"] = pa.array([None if i % 4 == 0 else {"s": None if i % 3 == 0 else "S" * 300 + str(i)} for i in range(N)],
    pa.struct([("s", pa.string())]))
write("wide", pa.table(cols))

# ---- comp: field-metadata variants ----
N = 1500
def meta(arr, **md):
    return arr, {("lance-encoding:" + k.replace("_", "-")): str(v) for k, v in md.items()}
specs = {
    "i32_zstd": meta(pa.array(rng.integers(0, 10 ** 6, N), pa.int32()), compression="zstd"),
    "i32_zstd9": meta(pa.array(rng.integers(0, 10 ** 6, N), pa.int32()), compression="zstd", compression_level=9),
    "i32_lz4": meta(pa.array(rng.integers(0, 10 ** 6, N), pa.int32()), compression="lz4"),
    "i32_none": meta(pa.array(np.arange(N) % 100, pa.int32()), compression="none"),
    "str_zstd": meta(pa.array([f"z{x % 1000}_{'k' * (x % 13)}" for x in rng.integers(0, 10 ** 6, N)]), compression="zstd"),
    "str_lz4": meta(pa.array([f"z{x % 1000}_{'k' * (x % 13)}" for x in rng.integers(0, 10 ** 6, N)]), compression="lz4"),
    "f64_zstd": meta(pa.array(rng.standard_normal(N)), compression="zstd"),
    "f32_lz4": meta(pa.array(rng.standard_normal(N).astype(np.float32)), compression="lz4"),
    "i32_fullzip": meta(nulled(pa.array(rng.integers(0, 10 ** 6, N), pa.int32())), structural_encoding="fullzip"),
    "str_fullzip": meta(nulled(pa.array([f"fz{x}" for x in rng.integers(0, 10 ** 6, N)])), structural_encoding="fullzip"),
    "i64_rle0": meta(pa.array(np.repeat(np.arange(N // 30), 30), pa.int64()), rle_threshold=0),
    "str_dict100": meta(pa.array([f"d{x}" for x in rng.integers(0, 200, N)]), dict_divisor=100),
}
fields = [pa.field(k, a.type, metadata=m) for k, (a, m) in specs.items()]
write("comp", pa.Table.from_arrays([a for a, _ in specs.values()], schema=pa.schema(fields)))

# ---- packed: opt-in packed structs ----
N = 500
packed = pa.StructArray.from_arrays([pa.array(np.arange(N), pa.int32()), pa.array(rng.standard_normal(N).astype(np.float32)),
    pa.array(np.arange(N) % 3, pa.int8())], names=["x", "y", "z"])
vps = pa.StructArray.from_arrays([pa.array(np.arange(N), pa.int32()), pa.array([f"v{i}" * (i % 4) for i in range(N)])], names=["n", "s"])
tbl = pa.Table.from_arrays([packed, vps], schema=pa.schema([
    pa.field("packed", packed.type, metadata={"lance-encoding:packed": "true"}),
    pa.field("vpacked", vps.type, metadata={"lance-encoding:packed": "true"})]))
write("vpacked", tbl, versions=("2.2",))
write("packed", pa.table({"packed": tbl.column("packed")}).cast(pa.schema([tbl.schema.field("packed")])), versions=("2.1",))

# ---- pages: several pages per column ----
N = 3000
write("pages", pa.table({
    "i": pa.array(np.arange(N), pa.int64()),
    "s": nulled(pa.array([f"p{i}" for i in range(N)])),
    "l": pa.array([None if i % 10 == 0 else list(range(i % 4)) for i in range(N)], pa.list_(pa.int32())),
}), max_page_bytes=4096)

# ---- tiny: the worked examples of §4.5 ----
write("tiny", pa.table({
    "l": pa.array([[1, 2], None, []], pa.list_(pa.int32())),
    "s": pa.array([{"a": 1, "b": "x"}, None, {"a": 3, "b": None}], pa.struct([("a", pa.int32()), ("b", pa.string())])),
    "ll": pa.array([[[1, 2], [], None], None, [[3]]], pa.list_(pa.list_(pa.int32()))),
}))

# ---- fsst: enough string data (>= 32 KiB per page) for FSST, in mini-block and full-zip ----
N = 3000
words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "theta"]
cols = {}
add("fsst_short", pa.array([" ".join(words[(i * k) % 7] for k in range(1, 2 + i % 5)) + str(i) for i in range(N)]))
cols["fsst_large"] = pa.array([words[i % 7] * (1 + i % 6) + str(i) for i in range(N)], pa.large_string())
cols["fsst_long"] = pa.array([None if i % 9 == 0 else (words[i % 7] + " ") * 50 + str(i) for i in range(N // 10)] + [None] * (N - N // 10))
cols["fsst_list"] = pa.array([None if i % 8 == 0 else [words[(i + j) % 7] * 3 + str(j) for j in range(i % 4)] for i in range(N)],
    pa.list_(pa.string()))
write("fsst", pa.table(cols))
