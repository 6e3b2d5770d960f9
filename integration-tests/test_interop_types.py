"""Issue 3 interop: every supported type, nested ones included, between Spark and pylance (2.0 files),
plus randomized schemas in both directions and corrupted data files."""
import json
import math
import os
import random

import lance
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql.types import ArrayType, FloatType, LongType, StringType, StructField, StructType

from conftest import table_path


def _spark_view(tbl: pa.Table, spark_schema: pa.Schema) -> pa.Table:
    """pylance's table cast to the Arrow types Spark returns (vectors and large lists are lists,
    nanoseconds are truncated to microseconds as Spark does)."""
    return tbl.select(spark_schema.names).cast(spark_schema, safe=False)


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_spark_nested_and_vectors_read_by_pylance(spark, warehouse, table_name, version):
    spark.sql(f"""CREATE TABLE {table_name} (id BIGINT NOT NULL, ints ARRAY<INT>, strs ARRAY<STRING>,
        st STRUCT<a: INT, b: STRING, deep: STRUCT<x: DOUBLE, tags: ARRAY<STRING>>>,
        pts ARRAY<STRUCT<x: INT, label: STRING>>, dec DECIMAL(20, 6))
        TBLPROPERTIES ('data_storage_version' = '{version}')""")
    spark.sql(f"""INSERT INTO {table_name} SELECT id,
        IF(id % 9 = 0, NULL, transform(sequence(0, CAST(id % 4 AS INT)), k -> IF(k = 2, NULL, CAST(id + k AS INT)))),
        IF(id % 11 = 0, NULL, array(CAST(id AS STRING), IF(id % 3 = 0, NULL, ''), repeat('s', CAST(id % 300 AS INT)))),
        named_struct('a', IF(id % 5 = 0, NULL, CAST(id AS INT)), 'b', CAST(id * 2 AS STRING),
                     'deep', named_struct('x', id / 8, 'tags', IF(id % 7 = 0, NULL, array('t', CAST(id AS STRING))))),
        IF(id % 13 = 0, NULL, array(named_struct('x', CAST(id AS INT), 'label', IF(id % 2 = 0, NULL, 'odd')))),
        IF(id % 6 = 0, NULL, CAST(id * 1.000001 - 12345 AS DECIMAL(20, 6)))
        FROM range(20000)""")
    vec_schema = StructType([StructField("id", spark.table(table_name).schema["id"].dataType, False),
                             StructField("v8", ArrayType(FloatType(), False), True, {"lance.vector_dim": 8}),
                             StructField("v128", ArrayType(FloatType(), False), True, {"lance.vector_dim": 128})])
    vectors = table_name + "_vec"
    spark.createDataFrame([(i, None if i % 10 == 0 else [i + k / 8 for k in range(8)],
                            [float(i % 50)] * 128) for i in range(3000)], vec_schema).writeTo(vectors) \
        .tableProperty("data_storage_version", version).create()

    for name in (table_name, vectors):
        expected = spark.table(name).toArrow().sort_by("id")
        got = lance.dataset(table_path(warehouse, name)).to_table().sort_by("id")
        assert got.num_rows == expected.num_rows
        assert _spark_view(got, expected.schema).equals(expected), name
    lance_schema = lance.dataset(table_path(warehouse, vectors)).schema
    assert lance_schema.field("v8").type == pa.list_(pa.field("item", pa.float32()), 8)
    assert lance_schema.field("v128").type.list_size == 128


def _pylance_nested(n, seed=3):
    rng = np.random.default_rng(seed)
    ids = np.arange(n, dtype=np.int64)
    null = lambda p: rng.random(n) < p

    def nulled(arr, p=0.1):
        return pc.if_else(pa.array(null(p)), pa.scalar(None, arr.type), arr)

    lists = [None if i % 9 == 0 else [None if (i + k) % 5 == 0 else int(i + k) for k in range(i % 4)] for i in range(n)]
    return pa.table({
        "id": pa.array(ids),
        "li": pa.array(lists, pa.list_(pa.int32())),
        "ll": pa.array([[int(i)] * (i % 3) for i in range(n)], pa.large_list(pa.int64())),
        "ls": pa.array([None if i % 7 == 0 else [f"s{i}", None, ""][: i % 4] for i in range(n)], pa.list_(pa.string())),
        "st": pa.StructArray.from_arrays(
            [nulled(pa.array(ids.astype(np.int32))), nulled(pa.array([f"b{i % 17}" for i in range(n)])),
             pa.StructArray.from_arrays([nulled(pa.array(ids * 0.5))], names=["x"])], names=["a", "b", "inner"]),
        "lst": pa.array([None if i % 6 == 0 else [{"x": int(i), "y": None if i % 2 else "e"}] * (i % 3)
                         for i in range(n)], pa.list_(pa.struct([("x", pa.int32()), ("y", pa.string())]))),
        "v8": nulled(pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 8).astype(np.float32)), 8)),
        "v128": pa.FixedSizeListArray.from_arrays(pa.array(rng.standard_normal(n * 128).astype(np.float32)), 128),
        "lowcard": nulled(pa.array(np.array(["red", "green", "blue"])[rng.integers(0, 3, n)])),
        "big": pa.array(["x" * (1000 + i % 300) if i % 50 == 0 else "small" for i in range(n)]),
        "empty": pa.array([""] * n),
        "allnull": pa.array([None] * n, pa.int32()),
        "dec": nulled(pa.array([int(i) * 13 for i in range(n)], pa.int64()).cast(pa.decimal128(22, 3))),
    })


@pytest.mark.parametrize("version,deleted", [
    ("2.0", "id % 10 = 3 OR (id >= 6000 AND id < 6500)"),  # most rows live: ranges read whole, deleted rows dropped
    ("2.0", "id % 10 != 3"),                               # most rows deleted: the live ones picked
    ("2.1", "id % 10 != 3"),
    ("2.2", "id % 10 = 3 OR id % 97 = 0"),
], ids=["2.0-few-deleted", "2.0-most-deleted", "2.1-most-deleted", "2.2-few-deleted"])
def test_pylance_nested_with_deletions_read_by_spark(spark, warehouse, table_name, version, deleted):
    path = table_path(warehouse, table_name)
    data = _pylance_nested(12_000)
    # A large list inside a list: Arrow Java's copy value by value refuses it.
    data = data.append_column("lll", pa.array([None if i % 8 == 0 else [[i, None][: i % 3], None, []][: i % 4]
                                               for i in range(data.num_rows)], pa.list_(pa.large_list(pa.int64()))))
    # Small pages: many pages per column, list items spread over pages.
    lance.write_dataset(data, path, data_storage_version=version, max_rows_per_file=5000, max_page_bytes=64 * 1024)
    lance.dataset(path).delete(deleted)
    ds = lance.dataset(path)
    got = spark.table(table_name).toArrow().sort_by("id")
    expected = ds.to_table().sort_by("id")
    assert got.num_rows == expected.num_rows == ds.count_rows()
    assert got.equals(_spark_view(expected, got.schema))
    # Nested pruning gives the same values as the full read.
    pruned = spark.sql(f"SELECT id, st.inner.x AS x, lst.y AS y FROM {table_name}").toArrow().sort_by("id")
    assert pruned.column("x").to_pylist() == [None if s is None or s["inner"] is None else s["inner"]["x"]
                                               for s in expected.column("st").to_pylist()]


# ---- randomized round trips ----

LEAF_TYPES = {
    "BOOLEAN": pa.bool_(), "TINYINT": pa.int8(), "SMALLINT": pa.int16(), "INT": pa.int32(), "BIGINT": pa.int64(),
    "FLOAT": pa.float32(), "DOUBLE": pa.float64(), "STRING": pa.string(), "BINARY": pa.binary(),
    "DATE": pa.date32(), "TIMESTAMP": pa.timestamp("us", tz="UTC"), "TIMESTAMP_NTZ": pa.timestamp("us"),
    "DECIMAL(10, 2)": pa.decimal128(10, 2), "INTERVAL DAY TO SECOND": pa.duration("us"),
}


MAP_KEY_TYPES = ["INT", "BIGINT", "STRING"]


def _random_type(r, depth=0):
    kind = r.random()
    if depth < 2 and kind < 0.15:
        return f"ARRAY<{_random_type(r, depth + 1)}>"
    if depth < 2 and kind < 0.25:
        fields = ", ".join(f"f{k}: {_random_type(r, depth + 1)}" for k in range(r.randint(1, 3)))
        return f"STRUCT<{fields}>"
    if depth < 2 and kind < 0.35:  # maps: 2.2 tables (the default) store them
        return f"MAP<{r.choice(MAP_KEY_TYPES)}, {_random_type(r, depth + 1)}>"
    return r.choice(sorted(LEAF_TYPES))


def _random_value_sql(r, t, null_rate):
    if r.random() < null_rate and not t.startswith("STRUCT"):
        return f"CAST(NULL AS {t})"
    if t.startswith("ARRAY<"):
        inner = t[6:-1]
        return f"array({', '.join(_random_value_sql(r, inner, null_rate) for _ in range(r.randint(0, 3)))})" \
            if r.random() < 0.9 else f"CAST(array() AS {t})"
    if t.startswith("MAP<"):
        key, value = _split_types(t[4:-1])
        keys = r.sample(range(-50, 50), r.randint(0, 3))
        if not keys:
            return f"CAST(map() AS {t})"
        key_sql = [f"'k{k}'" if key == "STRING" else f"CAST({k} AS {key})" for k in keys]
        return (f"map_from_arrays(array({', '.join(key_sql)}), "
                f"array({', '.join(_random_value_sql(r, value, null_rate) for _ in keys)}))")
    if t.startswith("STRUCT<"):
        parts = _split_fields(t[7:-1])
        return "named_struct(" + ", ".join(f"'{n}', {_random_value_sql(r, ft, null_rate)}" for n, ft in parts) + ")"
    v = r.randint(-100, 100)
    return {
        "BOOLEAN": f"{'true' if v % 2 else 'false'}", "STRING": f"'{'ü' * (v % 5)}s{v}'", "BINARY": f"X'{abs(v):04x}'",
        "DATE": f"date_add(DATE'2000-01-01', {v})", "TIMESTAMP": f"timestamp_micros({v * 1234567891})",
        "TIMESTAMP_NTZ": f"CAST(timestamp_micros({v * 987654321}) AS TIMESTAMP_NTZ)",
        "INTERVAL DAY TO SECOND": f"make_dt_interval({v}, 0, 0, {v * 7}.125)",
    }.get(t, f"CAST({v / 4 if t in ('FLOAT', 'DOUBLE') or t.startswith('DECIMAL') else v} AS {t})")


def _split_types(body):
    """The two types of a MAP<K, V>'s body."""
    depth = 0
    for i, ch in enumerate(body):
        depth += (ch == "<") - (ch == ">")
        if ch == "," and depth == 0:
            return body[:i].strip(), body[i + 1:].strip()
    raise ValueError(body)


def _split_fields(body):
    out, depth, cur = [], 0, ""
    for ch in body + ",":
        if ch == "," and depth == 0:
            name, t = cur.strip().split(": ", 1)
            out.append((name, t))
            cur = ""
            continue
        depth += ch == "<"
        depth -= ch == ">"
        cur += ch
    return out


# Seeds 5, 9 and 12 draw map columns (with rows).
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 5, 9, 12])
def test_random_schemas_spark_to_pylance_and_back(spark, warehouse, table_name, seed):
    r = random.Random(seed)
    cols = [(f"c{k}", _random_type(r)) for k in range(r.randint(1, 6))]
    rows = r.choice([0, 1, 2, 37, 1000])
    null_rate = r.choice([0.0, 0.3, 1.0])
    spark.sql(f"CREATE TABLE {table_name} (id INT NOT NULL, {', '.join(f'{n} {t}' for n, t in cols)})")
    if rows:
        values = ", ".join("(" + ", ".join([str(i)] + [_random_value_sql(r, t, null_rate) for _, t in cols]) + ")"
                           for i in range(rows))
        spark.sql(f"INSERT INTO {table_name} VALUES {values}")
    expected = spark.table(table_name).toArrow().sort_by("id")
    path = table_path(warehouse, table_name)
    got = lance.dataset(path).to_table().sort_by("id")
    assert got.num_rows == rows
    assert _spark_view(got, expected.schema).equals(expected)
    # And back: pylance appends its own copy of the rows; Spark reads both halves identically.
    shifted = got.set_column(0, "id", pc.add(got.column("id"), rows).cast(pa.int32()))
    lance.write_dataset(shifted, path, mode="append")
    again = spark.table(table_name).toArrow().sort_by("id")
    assert again.num_rows == 2 * rows
    assert again.slice(rows).drop(["id"]).equals(expected.drop(["id"]))


# ---- JSON columns (lance.json, JSONB) ----

JSON_STRINGS = ["", "plain", "ünïcødé", "日本語", "emoji 😀🎉", 'quote " and \\ back', "tab\tnew\nline\r",
                "ctl \u0001\u001f", "slash /", "\u2028 sep", "null", "1"]
JSON_NUMBERS = [0, 1, -1, 127, 128, 255, 256, -128, -129, 65535, 65536, -32769, 2**31, -2**31 - 1, 2**32,
                2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, -2**63, 2**64, -2**63 - 1, 10**30, -(10**25),
                0.5, -0.0, 1.0, 0.1, 1e300, -2.5e-310, 5e-324, 1e16, 1e15, 123456.789, 1e-5, 1e-7, 3.141592653589793]
# Spellings json.dumps never writes: beyond a double's range (infinities, which read back as null;
# zeros), exponents, escapes that need not be escaped, surrogate pairs, nesting with no space.
JSON_ODD_TEXTS = ["1e400", "[-1E+400, 1e-400, -1e-400]", '{"n": -0, "e": 1E+2, "f": 123.456e-2}', '"\\/ \\ud83d\\ude00"',
                  '[[[[[]]]],{"":{"":{}}}]', " \t\r\n null \n"]


def _random_json(r, depth=0):
    """A random JSON value: nested objects and arrays (empty ones too), numbers across JSONB's
    integer widths, integers beyond 64 bits and doubles, unicode and escaped strings, nulls."""
    k = r.random()
    if depth < 3 and k < 0.25:
        keys = r.sample(JSON_STRINGS + [f"k{n}" for n in range(8)], r.randint(0, 4))
        return {key: _random_json(r, depth + 1) for key in keys}
    if depth < 3 and k < 0.4:
        return [_random_json(r, depth + 1) for _ in range(r.randint(0, 4))]
    return r.choice([None, True, False, r.choice(JSON_STRINGS), r.choice(JSON_NUMBERS), r.choice(JSON_NUMBERS),
                     r.randint(-2**70, 2**70), r.uniform(-1e6, 1e6)])


def _json_text(r, value):
    """`value` as JSON text, spelled one of several ways (white space, escapes, key order)."""
    return json.dumps(value, ensure_ascii=r.random() < 0.5, indent=r.choice([None, None, 2]),
                      separators=r.choice([None, (",", ":"), (" , ", " : ")]), sort_keys=r.random() < 0.5)


def _as_jsonb_holds(value):
    """`value` as a JSON column gives it back: integers beyond 64 bits become doubles."""
    if isinstance(value, dict):
        return {k: _as_jsonb_holds(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_jsonb_holds(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and not -2**63 <= value < 2**64:
        return float(value)
    if isinstance(value, float) and math.isinf(value):
        return None
    return value


def _random_json_column(r, n, null_rate):
    """The texts of n random JSON documents, None for a NULL row (some rows hold the JSON value null)."""
    values = [None if r.random() < null_rate else _random_json(r) for _ in range(n)]
    return [None if v is None and r.random() < 0.7 else r.choice(JSON_ODD_TEXTS) if r.random() < 0.05
            else _json_text(r, v) for v in values]


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
@pytest.mark.parametrize("rows", [0, 1, 1023, 1024, 1025, 4097])
def test_random_pylance_tables_read_by_spark(spark, warehouse, table_name, rows, version):
    r = random.Random(f"{rows}-{version}")
    rng = np.random.default_rng(rows)
    cols = {"id": pa.array(np.arange(rows, dtype=np.int64))}
    for k in range(8):
        t = r.choice([pa.int16(), pa.uint32(), pa.float64(), pa.string(), pa.large_binary(), pa.bool_(),
                      pa.list_(pa.int64()), pa.list_(pa.float32(), 3), pa.list_(pa.float32(), 768),
                      pa.timestamp("ns"), pa.date32(), pa.duration("ms"), pa.decimal256(24, 3), pa.json_(),
                      pa.dictionary(pa.int16(), pa.string())] + ([pa.map_(pa.string(), pa.int64())] if version == "2.2" else []))
        base = pa.array(rng.integers(0, 1000, rows)).cast(pa.int64())
        null_rate = r.choice([0.0, 0.2, 1.0])
        if t == pa.json_():  # random documents, NULL rows among them
            cols[f"c{k}"] = pa.array(_random_json_column(r, rows, null_rate), t)
            continue
        if pa.types.is_map(t):
            arr = pa.array([[(f"k{j}", None if (x + j) % 7 == 0 else x * j) for j in range(x % 4)] for x in base.to_pylist()], t)
        elif pa.types.is_list(t) or pa.types.is_fixed_size_list(t):
            size = t.list_size if pa.types.is_fixed_size_list(t) else None
            vals = [[float(x)] * (size or int(x % 4)) for x in base.to_pylist()]
            arr = pa.array(vals, t if size else pa.list_(pa.float64())).cast(t)
        elif pa.types.is_dictionary(t):
            arr = pa.array([f"d{x % 37}" for x in base.to_pylist()], pa.string()).dictionary_encode().cast(t)
        elif t in (pa.string(), pa.large_binary()):
            arr = pa.array([str(x) * (x % 5) for x in base.to_pylist()]).cast(t)
        elif t == pa.bool_():
            arr = pc.equal(pc.bit_wise_and(base, pa.scalar(1, pa.int64())), pa.scalar(1, pa.int64()))
        elif t == pa.date32():
            arr = base.cast(pa.int32()).cast(t)
        else:
            arr = base.cast(t)
        mask = rng.random(rows) < null_rate
        cols[f"c{k}"] = pc.if_else(pa.array(mask, pa.bool_()), pa.scalar(None, t), arr) if rows else arr
    path = table_path(warehouse, table_name)
    lance.write_dataset(pa.table(cols), path, data_storage_version=version, max_page_bytes=4096)
    got = spark.table(table_name).toArrow().sort_by("id")
    expected = lance.dataset(path).to_table().sort_by("id")
    assert got.num_rows == rows
    assert got.equals(_spark_view(expected, got.schema))


JSON_COLUMN = {"ARROW:extension:name": "lance.json"}  # a Spark STRING column with it is a JSON column


def _pylance_json_texts(tmp_path, texts):
    """The texts pylance reads back after writing `texts` to a JSON column of its own: the oracle
    for what sparklance's JSONB must read as, in pylance and in Spark."""
    oracle = str(tmp_path / f"oracle-{len(os.listdir(tmp_path))}")
    lance.write_dataset(pa.table({"j": pa.array(texts, pa.json_())}), oracle)
    return lance.dataset(oracle).to_table().column("j").to_pylist()


def _sql_string(text):
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


@pytest.mark.parametrize("writer,version,seed", [("pylance", "2.0", 0), ("spark", "2.1", 1), ("spark", "2.2", 2)])
def test_random_json_documents_both_ways_with_dml(spark, warehouse, table_name, tmp_path, writer, version, seed):
    """Random JSON documents written by pylance or by Spark (a STRING column marked lance.json, also
    as a struct's field), read by the other, then UPDATE (of the JSON columns and of another one),
    MERGE and DELETE from Spark; pylance reads what its own JSONB of the same texts reads as, and
    Spark reads the same text."""
    r = random.Random(f"json-{seed}")
    n = r.choice([24, 60])
    texts, inner = _random_json_column(r, n, 0.15), _random_json_column(r, n, 0.15)
    path = table_path(warehouse, table_name)
    if writer == "pylance":
        st = pa.StructArray.from_arrays([pa.array(inner, pa.json_()), pa.array(range(n), pa.int64())], names=["j", "x"])
        lance.write_dataset(pa.table({"id": pa.array(range(n), pa.int64()), "n": pa.array([0] * n, pa.int64()),
                                      "j": pa.array(texts, pa.json_()), "st": st}), path, data_storage_version=version,
                            max_rows_per_file=n // 2)
    else:
        schema = StructType([StructField("id", LongType(), False), StructField("n", LongType()),
                             StructField("j", StringType(), True, JSON_COLUMN),
                             StructField("st", StructType([StructField("j", StringType(), True, JSON_COLUMN),
                                                           StructField("x", LongType())]))])
        spark.createDataFrame([(i, 0, t, (u, i)) for i, (t, u) in enumerate(zip(texts, inner))], schema) \
            .repartition(2).writeTo(table_name).tableProperty("data_storage_version", version).create()
    want = {i: (t, u) for i, (t, u) in enumerate(zip(texts, inner))}  # id: (j, st.j)

    def check(step):
        ds = lance.dataset(path)
        assert str(ds.schema.field("j").type) == str(ds.schema.field("st").type.field("j").type) == \
            "extension<arrow.json>", step
        ids = sorted(want)
        oracle = dict(zip(ids, zip(_pylance_json_texts(tmp_path, [want[i][0] for i in ids]),
                                   _pylance_json_texts(tmp_path, [want[i][1] for i in ids]))))
        got = {row["id"]: (row["j"], row["st"]["j"]) for row in ds.to_table(columns=["id", "j", "st"]).to_pylist()}
        assert got == oracle, step
        parsed = lambda texts, holds: tuple(None if t is None else holds(json.loads(t)) for t in texts)
        assert {i: parsed(t, lambda v: v) for i, t in got.items()} == \
            {i: parsed(t, _as_jsonb_holds) for i, t in want.items()}, step
        assert {row.id: (row.j, row.sj) for row in spark.sql(f"SELECT id, j, st.j AS sj FROM {table_name}").collect()} \
            == oracle, step
        ds.validate()

    check("written")

    picked = r.sample(range(n), 5)
    new = [(_json_text(r, _random_json(r)), _json_text(r, _random_json(r))) for _ in picked]
    case = lambda k: " ".join(f"WHEN {i} THEN {_sql_string(t[k])}" for i, t in zip(picked, new))
    spark.sql(f"UPDATE {table_name} SET j = CASE id {case(0)} END, st = named_struct('j', CASE id {case(1)} END, "
              f"'x', id) WHERE id IN ({', '.join(map(str, picked))})")
    want.update(zip(picked, new))
    spark.sql(f"UPDATE {table_name} SET n = n + 1 WHERE id % 3 = 0")  # the JSON columns carried along
    check("updated")

    merged = r.sample(range(n), 4) + [n, n + 1]
    src = [(i, -1, None if k == 1 else _json_text(r, _random_json(r)), (_json_text(r, _random_json(r)), i))
           for k, i in enumerate(merged)]
    spark.createDataFrame(src, "id BIGINT, n BIGINT, j STRING, st STRUCT<j: STRING, x: BIGINT>") \
        .createOrReplaceTempView("json_merge_src")
    spark.sql(f"MERGE INTO {table_name} t USING json_merge_src s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    want.update({i: (t, u) for i, _, t, (u, _) in src})
    spark.sql(f"DELETE FROM {table_name} WHERE id % 7 = 2")
    want = {i: t for i, t in want.items() if i % 7 != 2}
    check("merged and deleted")


def test_corrupt_data_file_is_named(spark, warehouse, table_name):
    spark.sql(f"CREATE TABLE {table_name} AS SELECT id, CAST(id AS STRING) AS s FROM range(1000)")
    data_dir = os.path.join(table_path(warehouse, table_name), "data")
    victim = sorted(os.listdir(data_dir))[0]
    with open(os.path.join(data_dir, victim), "r+b") as f:
        f.seek(-4, os.SEEK_END)
        f.write(b"XXXX")
    with pytest.raises((PySparkException, Py4JJavaError)) as err:
        spark.table(table_name).collect()
    assert victim in str(err.value)


def test_values_larger_than_a_page_both_ways(spark, warehouse, table_name):
    # pylance: 64 KiB pages and 100-300 KB values, so each value is a page of its own.
    path = table_path(warehouse, table_name)
    big = pa.table({"id": pa.array(range(40), pa.int64()),
                    "s": pa.array([("v%d-" % i) * (100_000 + 5_000 * i) for i in range(40)]),
                    "b": pa.array([bytes([i]) * (150_000 + i) if i % 3 else None for i in range(40)], pa.large_binary())})
    lance.write_dataset(big, path, data_storage_version="2.0", max_page_bytes=64 * 1024)
    got = spark.table(table_name).toArrow().sort_by("id")
    assert got.equals(_spark_view(big, got.schema))
    # Spark: values far beyond the 8 MiB page target still land in one page each.
    other = table_name + "_spark"
    spark.sql(f"CREATE TABLE {other} AS SELECT id, repeat(CAST(id AS STRING), 4500000) AS s FROM range(3)")
    back = lance.dataset(table_path(warehouse, other)).to_table().sort_by("id")
    assert [len(x) for x in back.column("s").to_pylist()] == [4_500_000, 4_500_000, 4_500_000]
