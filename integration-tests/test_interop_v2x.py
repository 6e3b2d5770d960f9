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


def test_writes_into_a_22_table_fail_clearly_and_change_nothing(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    lance.write_dataset(pa.table({"id": pa.array([1, 2, 3], pa.int64())}), path)
    with pytest.raises(Exception) as err:
        spark.sql(f"INSERT INTO {table_name} VALUES (4)")
    assert "2.2" in str(err.value)
    assert lance.dataset(path).version == 1
    assert not os.listdir(os.path.join(path, "data")) or len(os.listdir(os.path.join(path, "data"))) == 1
