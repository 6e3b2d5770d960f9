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
                         "big": pa.array(big, pa.decimal256(50, 2))})
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

    expected = {i: (f"S{i}" if i < 30 else f"s{i}", -i if 50 <= i < 70 else i * 10 + (1 if i < 30 else 0), big[i])
                for i in range(n) if i % 5 != 0 and not 65 < i < 70}
    assert {r.id: (r.s, r.v) for r in spark.sql(f"SELECT id, s, v FROM {table_name}").collect()} == \
        {i: e[:2] for i, e in expected.items()}
    ds = lance.dataset(path)
    ds.validate()
    got = ds.to_table()
    assert got.schema == original.schema
    assert {r["id"]: (r["s"], r["v"], r["big"]) for r in got.to_pylist()} == expected


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
