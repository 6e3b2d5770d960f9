"""Tables that pylance writes with its default file formats 2.1 and 2.2, read and changed by Spark."""
import os

import lance
import pyarrow as pa
import pytest

from conftest import table_path
from test_interop_types import _pylance_nested, _spark_view
from test_interop_foundation import SPARK_VIEW, _pylance_table


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_pylance_v2x_tables_read_by_spark(spark, warehouse, table_name, version):
    for suffix, data in (("flat", _pylance_table(20_000)), ("nested", _pylance_nested(8_000))):
        name = f"{table_name}_{suffix}"
        path = table_path(warehouse, name)
        lance.write_dataset(data, path, data_storage_version=version, max_rows_per_file=7_000)
        lance.dataset(path).delete("id % 9 = 4 OR (id >= 1000 AND id < 1200)")
        ds = lance.dataset(path)
        assert {f"{f.file_major_version}.{f.file_minor_version}" for frag in ds.get_fragments()
                for f in frag.data_files()} == {version}
        got = spark.table(name).toArrow().sort_by("id")
        expected = ds.to_table().sort_by("id")
        assert got.num_rows == expected.num_rows == ds.count_rows()
        assert got.equals(_spark_view(expected, got.schema)), name
    # Nested projection on the structural (2.1+) layout.
    st = spark.sql(f"SELECT id, st.inner.x FROM {table_name}_nested").toArrow().sort_by("id")
    assert st.num_rows == lance.dataset(table_path(warehouse, f"{table_name}_nested")).count_rows()


def test_delete_on_a_pylance_22_table(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    lance.write_dataset(_pylance_table(10_000), path, max_rows_per_file=4_000)  # pylance's default: 2.2
    spark.sql(f"DELETE FROM {table_name} WHERE i8 > 50 OR s LIKE 'gamma%'")
    ds = lance.dataset(path)
    expected = ds.to_table().sort_by("id")
    got = spark.table(table_name).toArrow().sort_by("id")
    assert got.equals(_spark_view(expected, got.schema))
    assert pa.compute.max(expected.column("i8")).as_py() <= 50
    assert ds.count_rows() == got.num_rows


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_spark_dml_on_pylance_v2x_tables(spark, warehouse, table_name, version):
    path = table_path(warehouse, table_name)
    data = _pylance_nested(3_000)
    lance.write_dataset(data, path, data_storage_version=version, max_rows_per_file=1_000)
    spark.sql(f"INSERT INTO {table_name} SELECT * FROM {table_name} WHERE id < 10")
    spark.sql(f"UPDATE {table_name} SET lowcard = 'updated', ll = array(7L) WHERE id % 7 = 0")
    spark.sql(f"DELETE FROM {table_name} WHERE id % 11 = 0")
    spark.sql(f"MERGE INTO {table_name} t USING (SELECT id + 5000 AS id, li, ll, ls, st, lst, v8, v128, lowcard, big, empty,"
              f" allnull, dec FROM {table_name} WHERE id < 20) s ON t.id = s.id"
              f" WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *")
    ds = lance.dataset(path)
    files = {f"{f.file_major_version}.{f.file_minor_version}" for frag in ds.get_fragments() for f in frag.data_files()}
    assert files == {version}
    got = spark.table(table_name).toArrow().sort_by("id")
    expected = ds.to_table().sort_by("id")
    assert got.num_rows == expected.num_rows == ds.count_rows()
    assert got.equals(_spark_view(expected, got.schema))
    assert expected.filter(pa.compute.equal(expected.column("lowcard"), "updated")).num_rows > 0


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_spark_creates_v2x_tables_pylance_reads(spark, warehouse, table_name, version):
    spark.sql(f"""CREATE TABLE {table_name} (id BIGINT NOT NULL, s STRING, d DOUBLE, ts TIMESTAMP, dec DECIMAL(12, 2),
        arr ARRAY<INT>, st STRUCT<a: INT, b: STRING>) TBLPROPERTIES ('data_storage_version' = '{version}')""")
    spark.sql(f"""INSERT INTO {table_name} SELECT id, IF(id % 5 = 0, NULL, repeat('v', CAST(id % 400 AS INT))),
        id / 3, timestamp_micros(id * 1000003), CAST(id / 7 AS DECIMAL(12, 2)),
        IF(id % 6 = 0, NULL, sequence(0, CAST(id % 5 AS INT))),
        IF(id % 9 = 0, NULL, named_struct('a', CAST(id AS INT), 'b', IF(id % 2 = 0, NULL, 'odd'))) FROM range(20000)""")
    path = table_path(warehouse, table_name)
    ds = lance.dataset(path)
    assert ds.data_storage_version == version
    expected = spark.table(table_name).toArrow().sort_by("id")
    got = ds.to_table().sort_by("id")
    assert _spark_view(got, expected.schema).equals(expected)
    assert ds.take([0, 19999]).num_rows == 2


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_pylance_packed_structs_read_by_spark(spark, warehouse, table_name, version):
    """Structs pylance packs into one column (field metadata lance-encoding:packed; pylance 14 packs
    only non-null structs of non-null children, fixed-width ones on 2.1 and 2.2, strings too on
    2.2) read by Spark, whole and child by child; rows of fixed-width packed structs are written
    back packed (test_pylance_blobs_float16_packed.py has more), string ones are refused by name."""
    fixed = pa.struct([pa.field("x", pa.int32(), False), pa.field("y", pa.float64(), False), pa.field("z", pa.int8(), False)])
    fields = [pa.field("id", pa.int64()), pa.field("p", fixed, nullable=False, metadata={"lance-encoding:packed": "true"})]
    rows = 3000
    cols = {"id": list(range(rows)), "p": [{"x": i, "y": i / 4, "z": i % 100} for i in range(rows)]}
    if version == "2.2":
        variable = pa.struct([pa.field("a", pa.int32(), False), pa.field("s", pa.string(), False)])
        fields.append(pa.field("q", variable, nullable=False, metadata={"lance-encoding:packed": "true"}))
        cols["q"] = [{"a": -i, "s": "v" * (i % 7)} for i in range(rows)]
    path = table_path(warehouse, table_name)
    lance.write_dataset(pa.table(cols, schema=pa.schema(fields)), path, data_storage_version=version)
    lance.dataset(path).delete("id % 10 = 3")
    expected = lance.dataset(path).to_table().sort_by("id")
    got = spark.table(table_name).toArrow().sort_by("id")
    assert got.equals(_spark_view(expected, got.schema))
    assert [tuple(r) for r in spark.sql(f"SELECT id, p.y FROM {table_name} WHERE id IN (4, 2999) ORDER BY id").collect()] == \
        [(4, 1.0), (2999, 2999 / 4)]
    if version == "2.2":
        with pytest.raises(Exception, match="lance-encoding:packed"):
            spark.sql(f"UPDATE {table_name} SET id = id + 1 WHERE id = 4")
        assert lance.dataset(path).to_table().sort_by("id").equals(expected)
    else:
        spark.sql(f"UPDATE {table_name} SET id = -4 WHERE id = 4")
        ds = lance.dataset(path)
        assert ds.schema.field("p").metadata == {b"lance-encoding:packed": b"true"}
        assert ds.to_table(filter="id = -4").column("p").to_pylist() == [{"x": 4, "y": 1.0, "z": 4}]
        ds.validate()
