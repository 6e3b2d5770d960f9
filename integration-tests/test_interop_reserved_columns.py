"""Columns named like sparklance's metadata columns, in tables pylance writes."""
import lance
import pyarrow as pa
import pytest
from pyspark.errors import PySparkException
from py4j.protocol import Py4JJavaError

from conftest import table_path


@pytest.mark.parametrize("name", ["_rowid", "_rowaddr", "_row_created_at_version", "_row_last_updated_at_version"])
def test_pylance_refuses_the_lineage_names(tmp_path, name):
    # Why sparklance only meets `_fragid` in pylance tables: Lance reserves the other names itself.
    with pytest.raises(OSError, match="reserved"):
        lance.write_dataset(pa.table({"a": [1], name: [2]}), str(tmp_path / "t"))


def test_a_pylance_fragid_column_is_refused_clearly_until_renamed(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    lance.write_dataset(pa.table({"a": [1, 2, 3], "_fragid": [10, 20, 30]}), path)
    # Reading it would return fragment ids in place of the column's values.
    with pytest.raises((PySparkException, Py4JJavaError)) as err:
        spark.table(table_name).collect()
    message = str(err.value)
    assert "'_fragid'" in message and "alter_columns" in message and path in message

    lance.dataset(path).alter_columns({"path": "_fragid", "name": "fragment"})
    rows = spark.sql(f"SELECT a, fragment, _fragid FROM {table_name} ORDER BY a").collect()
    assert [tuple(r) for r in rows] == [(1, 10, 0), (2, 20, 0), (3, 30, 0)]
