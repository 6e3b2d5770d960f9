"""Issue 31 item 4: every type pylance 14 writes opens in Spark, and a column of a type sparklance
cannot map locks only itself: statements that neither read nor write it work (see docs/format-types.md)."""
import decimal

import lance
import pyarrow as pa
import pytest

from conftest import table_path

UNMAPPABLE = "decimal:256:50:2"  # Spark's DECIMAL holds at most 38 digits


def _write(path, table, version="2.1", rows_per_file=40):
    return lance.write_dataset(table, path, data_storage_version=version, max_rows_per_file=rows_per_file)


def _refused(spark, sql, column, lance_type):
    with pytest.raises(Exception) as err:
        spark.sql(sql).collect()
    text = str(err.value)
    assert "UnsupportedColumnException" in text or "sparklance cannot read or write" in text, text
    assert f"'{column}'" in text and lance_type in text, text


def test_unmappable_column_locks_only_itself(spark, warehouse, table_name):
    n = 100
    big = [None if i % 7 == 0 else decimal.Decimal(f"{i}123456789012345678901234567890123456789.{i % 100:02d}")
           for i in range(n)]
    original = pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"s{i}" for i in range(n)],
                         "v": pa.array([i * 10 for i in range(n)], pa.int64()),
                         "big": pa.array(big, pa.decimal256(50, 2)),
                         "dict": pa.array([f"d{i % 3}" for i in range(n)]).dictionary_encode()})
    path = table_path(warehouse, table_name)
    _write(path, original)

    described = {r.col_name: r for r in spark.sql(f"DESCRIBE TABLE {table_name}").collect()}
    assert described["big"].data_type == "void"
    assert UNMAPPABLE in described["big"].comment
    assert spark.table(table_name).schema["big"].metadata["lance.unsupported_type"] == UNMAPPABLE
    assert spark.sql(f"SELECT count(id), count(*), sum(v) FROM {table_name}").first() == (n, n, sum(range(n)) * 10)
    assert spark.sql(f"SELECT s FROM {table_name} WHERE id = 3").first().s == "s3"

    _refused(spark, f"SELECT * FROM {table_name}", "big", UNMAPPABLE)
    _refused(spark, f"SELECT id FROM {table_name} WHERE big IS NULL", "big", UNMAPPABLE)
    _refused(spark, f"INSERT INTO {table_name} (id, s, v) VALUES (1000, 'x', 1)", "big", UNMAPPABLE)
    _refused(spark, f"UPDATE {table_name} SET big = NULL WHERE id = 1", "big", UNMAPPABLE)
    _refused(spark, f"UPDATE {table_name} SET s = 'x' WHERE big IS NULL", "big", UNMAPPABLE)
    _refused(spark, f"DELETE FROM {table_name} WHERE big IS NULL", "big", UNMAPPABLE)
    spark.createDataFrame([(1, 5), (1001, 6)], "id BIGINT, v BIGINT").createOrReplaceTempView("types_src")
    _refused(spark, f"""MERGE INTO {table_name} t USING types_src s ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)""",
             "big", UNMAPPABLE)
    assert lance.dataset(path).version == 1  # nothing refused committed anything

    spark.sql(f"DELETE FROM {table_name} WHERE id % 5 = 0")
    spark.sql(f"UPDATE {table_name} SET s = upper(s), v = v + 1 WHERE id < 30")
    spark.createDataFrame([(i, -i) for i in range(50, 70)], "id BIGINT, v BIGINT").createOrReplaceTempView("types_src")
    spark.sql(f"MERGE INTO {table_name} t USING types_src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v")
    spark.sql(f"MERGE INTO {table_name} t USING types_src s ON t.id = s.id WHEN MATCHED AND s.id > 65 THEN DELETE")

    expected = {i: (f"S{i}" if i < 30 else f"s{i}", -i if 50 <= i < 70 else i * 10 + (1 if i < 30 else 0), big[i], f"d{i % 3}")
                for i in range(n) if i % 5 != 0 and not 65 < i < 70}
    assert {r.id: (r.s, r.v) for r in spark.sql(f"SELECT id, s, v FROM {table_name}").collect()} == \
        {i: e[:2] for i, e in expected.items()}
    ds = lance.dataset(path)
    ds.validate()
    got = ds.to_table()
    assert got.schema == original.schema
    assert {r["id"]: (r["s"], r["v"], r["big"], r["dict"]) for r in got.to_pylist()} == expected


@pytest.mark.parametrize("version", ["2.0", "2.1"])
def test_json_column_reads_and_writes_as_string(spark, warehouse, table_name, version):
    texts = [None if i % 9 == 0 else '{"a": %d, "tags": ["x", "é😀"], "n": {"f": %s}}' % (i % 4, i / 8)
             for i in range(60)]
    path = table_path(warehouse, table_name)
    _write(path, pa.table({"id": pa.array(range(60), pa.int64()), "j": pa.array(texts, pa.json_())}), version)
    by_pylance = lambda: {r["id"]: r["j"] for r in lance.dataset(path).to_table().to_pylist()}
    normalized = by_pylance()
    assert normalized[1] == '{"a":1,"n":{"f":0.125},"tags":["x","é😀"]}'

    field = spark.table(table_name).schema["j"]
    assert field.dataType.simpleString() == "string" and field.metadata["ARROW:extension:name"] == "lance.json"
    assert {r.id: r.j for r in spark.table(table_name).collect()} == normalized
    assert spark.sql(f"SELECT count(*) FROM {table_name} WHERE j = '{normalized[1]}'").first()[0] == \
        sum(1 for v in normalized.values() if v == normalized[1])
    assert spark.sql(f"SELECT get_json_object(j, '$.n.f') FROM {table_name} WHERE id = 4").first()[0] == "0.5"

    spark.sql(f"""UPDATE {table_name} SET j = '{{"z": [1, 2.50, null], "a": true}}' WHERE id = 1""")
    spark.sql(f"INSERT INTO {table_name} VALUES (100, '[1, \"two\", {{}}]'), (101, NULL), (102, '-7')")
    spark.createDataFrame([(2, '{"m": "merged"}')], "id BIGINT, j STRING").createOrReplaceTempView("json_src")
    spark.sql(f"MERGE INTO {table_name} t USING json_src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET j = s.j")
    spark.sql(f"DELETE FROM {table_name} WHERE id = 3")
    with pytest.raises(Exception) as err:
        spark.sql(f"INSERT INTO {table_name} VALUES (200, '{{not json')").collect()
    assert "'j'" in str(err.value) and "JSON" in str(err.value)

    expected = dict(normalized)
    expected.update({1: '{"a":true,"z":[1,2.5,null]}', 2: '{"m":"merged"}', 100: '[1,"two",{}]', 101: None, 102: "-7"})
    del expected[3]
    assert by_pylance() == expected
    assert {r.id: r.j for r in spark.table(table_name).collect()} == expected
    ds = lance.dataset(path)
    ds.validate()
    assert str(ds.schema.field("j").type) == "extension<arrow.json>"
    # pylance's JSON functions read the JSONB sparklance wrote as it reads its own
    extracted = ds.to_table(columns=["id"], filter="json_extract(j, '$.a') = 'true'").column("id").to_pylist()
    assert extracted == [1]


def test_time_duration_decimal256_null(spark, warehouse, table_name, version="2.1"):
    import datetime as dt
    n = 50
    micros = lambda i: (i * 3_600_000_123 + 7) * 1000 % 86_400_000_000_000  # time of day in ns, whole microseconds
    original = pa.table({
        "id": pa.array(range(n), pa.int64()),
        "t32": pa.array([None if i % 6 == 0 else i * 1_000_003 % 86_400_000 for i in range(n)], pa.time32("ms")),
        "t64": pa.array([None if i % 7 == 0 else micros(i) for i in range(n)], pa.time64("ns")),
        "d_s": pa.array([None if i % 5 == 0 else (i - 25) * 86_399 for i in range(n)], pa.duration("s")),
        "d_ns": pa.array([(i - 10) * 1_234_567_000 for i in range(n)], pa.duration("ns")),
        "dec": pa.array([None if i % 4 == 0 else decimal.Decimal(f"{i - 20}.{i:02d}") for i in range(n)],
                        pa.decimal256(20, 2)),
        "nul": pa.nulls(n, pa.null())})
    path = table_path(warehouse, table_name)
    _write(path, original, version, rows_per_file=20)
    rows = lambda: {r["id"]: r for r in lance.dataset(path).to_table().to_pylist()}
    before = rows()

    spark.conf.set("spark.sql.timeType.enabled", "false")
    try:
        described = {r.col_name: r.data_type for r in spark.sql(f"DESCRIBE TABLE {table_name}").collect()}
        assert described["t32"] == "void" and described["t64"] == "void"
        assert described["d_s"] == "interval day to second" and described["dec"] == "decimal(20,2)"
        assert described["nul"] == "void"
        _refused(spark, f"SELECT t64 FROM {table_name}", "t64", "time64:ns")
        spark.sql(f"UPDATE {table_name} SET dec = dec + 1 WHERE id = 1")  # in place: the time columns stay as they are
        before[1]["dec"] += 1
    finally:
        spark.conf.set("spark.sql.timeType.enabled", "true")

    got = {r.id: r.asDict() for r in spark.table(table_name).collect()}
    assert set(got) == set(before)
    for i, b in before.items():
        g = got[i]
        assert (g["t32"], g["t64"], g["d_s"], g["d_ns"], g["dec"], g["nul"]) == \
            (b["t32"], b["t64"], b["d_s"], b["d_ns"], b["dec"], None), i
    assert spark.table(table_name).schema["t64"].dataType.simpleString().startswith("time")

    # Whole rows rewritten (every type written by sparklance), and in place
    spark.conf.set("spark.sparklance.rewrite_mode", "rows")
    try:
        spark.sql(f"UPDATE {table_name} SET d_s = d_s + INTERVAL '1' SECOND, dec = dec * 2 WHERE id % 3 = 0")
    finally:
        spark.conf.unset("spark.sparklance.rewrite_mode")
    spark.sql(f"UPDATE {table_name} SET t64 = t32 WHERE id = 2")
    spark.sql(f"DELETE FROM {table_name} WHERE id = 4")
    spark.sql(f"""INSERT INTO {table_name} VALUES (100, CAST(TIME'01:02:03.004' AS TIME(3)), TIME'23:59:59.999999',
        INTERVAL '-1 02:03:04' DAY TO SECOND, INTERVAL '0 00:00:00.000001' DAY TO SECOND, 99999999.99, NULL)""")
    for i, b in before.items():
        if i % 3 == 0:
            b["d_s"] = None if b["d_s"] is None else b["d_s"] + dt.timedelta(seconds=1)
            b["dec"] = None if b["dec"] is None else b["dec"] * 2
    before[2]["t64"] = before[2]["t32"]
    del before[4]
    before[100] = {"id": 100, "t32": dt.time(1, 2, 3, 4000), "t64": dt.time(23, 59, 59, 999999),
                   "d_s": -dt.timedelta(days=1, hours=2, minutes=3, seconds=4), "d_ns": dt.timedelta(microseconds=1),
                   "dec": decimal.Decimal("99999999.99"), "nul": None}
    ds = lance.dataset(path)
    ds.validate()
    assert ds.schema == original.schema
    after = rows()
    assert set(after) == set(before)
    for i, b in before.items():
        a = after[i]
        assert {k: (v.to_pytimedelta() if hasattr(v, "to_pytimedelta") else v) for k, v in a.items()} == b, i


def _dictionary_table(n):
    """pylance's dictionary columns: of strings (int32 indices, nulls), large strings (int8), integers
    (nulls), doubles (int16, a null item among the values)."""
    return pa.table({
        "id": pa.array(range(n), pa.int64()),
        "s": pa.array([None if i % 7 == 0 else f"v{i % 5}" for i in range(n)]).dictionary_encode(),
        "s8": pa.DictionaryArray.from_arrays(pa.array([i % 3 for i in range(n)], pa.int8()),
                                             pa.array(["a", "b", "c"], pa.large_string())),
        "k": pa.array([None if i % 11 == 0 else (i % 4) * 1000 for i in range(n)], pa.int64()).dictionary_encode(),
        "f": pa.DictionaryArray.from_arrays(pa.array([i % 3 for i in range(n)], pa.int16()),
                                            pa.array([1.5, 2.5, None], pa.float64())),
        "v": pa.array(range(n), pa.int64())})


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.2"])
def test_dictionary_columns_read_and_write_as_their_values(spark, warehouse, table_name, version):
    n = 120
    original = _dictionary_table(n)
    path = table_path(warehouse, table_name)
    _write(path, original, version)
    rows = lambda: {r["id"]: (r["s"], r["s8"], r["k"], r["f"], r["v"]) for r in lance.dataset(path).to_table().to_pylist()}
    expected = rows()
    assert expected[7] == (None, "b", 3000, 2.5, 7) and expected[2] == ("v2", "c", 2000, None, 2)

    assert [(f.name, f.dataType.simpleString()) for f in spark.table(table_name).schema] == \
        [("id", "bigint"), ("s", "string"), ("s8", "string"), ("k", "bigint"), ("f", "double"), ("v", "bigint")]
    spark_rows = lambda: {r.id: (r.s, r.s8, r.k, r.f, r.v) for r in spark.table(table_name).collect()}
    assert spark_rows() == expected

    spark.sql(f"DELETE FROM {table_name} WHERE id % 10 = 0")
    spark.sql(f"UPDATE {table_name} SET s = concat(s, '!') WHERE id < 30")  # the dictionary column itself
    spark.sql(f"UPDATE {table_name} SET v = v + 1000 WHERE s8 = 'b' AND k = 3000")  # another column, chosen by two
    src = [(i, f"m{i}", None, 7.5, -i) for i in range(41, 50)] + \
          [(1000 + i, None if i % 9 == 0 else f"n{i}", None if i % 4 == 0 else i, float(i % 2), i) for i in range(150)]
    spark.createDataFrame(src, "id BIGINT, name STRING, k BIGINT, f DOUBLE, v BIGINT").createOrReplaceTempView("dict_src")
    spark.sql(f"""MERGE INTO {table_name} t USING dict_src s ON t.id = s.id
        WHEN MATCHED THEN UPDATE SET s8 = s.name, k = s.k, f = s.f
        WHEN NOT MATCHED THEN INSERT (id, s, s8, k, f, v) VALUES (s.id, s.name, substr(s.name, 1, 2), s.k, s.f, s.v)""")
    if version == "2.1":
        # s8's int8 indices number 128 values in a data file, as pylance reads them: more are refused.
        with pytest.raises(Exception) as err:
            spark.sql(f"INSERT INTO {table_name} (id, s8) SELECT id + 5000, concat('z', id) FROM range(200)").collect()
        assert "'s8'" in str(err.value) and "int8" in str(err.value), str(err.value)
    spark.sql(f"CALL lance.system.compact(table => '{table_name.split('.', 1)[1]}')")

    for i, e in list(expected.items()):
        if i % 10 == 0:
            del expected[i]
            continue
        s, s8, k, f, v = e
        if i < 30 and s is not None:
            s = s + "!"
        if s8 == "b" and k == 3000:
            v += 1000
        if 41 <= i < 50:
            s8, k, f = f"m{i}", None, 7.5
        expected[i] = (s, s8, k, f, v)
    for i in range(150):
        name = None if i % 9 == 0 else f"n{i}"
        expected[1000 + i] = (name, name and name[:2], None if i % 4 == 0 else i, float(i % 2), i)
    assert spark_rows() == expected
    ds = lance.dataset(path)
    ds.validate()
    assert ds.schema == original.schema  # every column still the same Arrow dictionary type
    assert rows() == expected


def test_legacy_dictionary_column_is_read_only(spark, warehouse, table_name):
    """A legacy (V1) dictionary column keeps its items in the manifest: the table reads, and changes are
    refused by name instead of committing a manifest whose column pylance would read as empty strings."""
    path = table_path(warehouse, table_name)
    original = pa.table({"id": pa.array(range(20), pa.int64()), "s": pa.array([f"v{i % 5}" for i in range(20)]).dictionary_encode()})
    _write(path, original, "legacy")
    assert spark.table(table_name).schema["s"].metadata["lance.unsupported_type"] == "dict:string:int32:false"
    assert spark.sql(f"SELECT sum(id) FROM {table_name} WHERE id < 10").first()[0] == 45
    with pytest.raises(Exception) as err:
        spark.sql(f"DELETE FROM {table_name} WHERE id < 5").collect()
    assert "'s'" in str(err.value) and "legacy" in str(err.value), str(err.value)
    ds = lance.dataset(path)
    assert ds.version == 1 and ds.to_table().to_pylist() == original.to_pylist()
