"""Issue 2 bad input: typed, named errors, and nothing written."""
import os

import lance
import pyarrow as pa
import pytest
from pyspark.errors import PySparkException
from py4j.protocol import Py4JJavaError

from conftest import table_path


def _versions(path):
    return sorted(os.listdir(os.path.join(path, "_versions")))


def test_corrupt_manifest_is_named(spark, warehouse, table_name):
    spark.sql(f"CREATE TABLE {table_name} AS SELECT id FROM range(10)")
    path = table_path(warehouse, table_name)
    latest = sorted(f for f in _versions(path) if f.endswith(".manifest"))[0]
    with open(os.path.join(path, "_versions", latest), "r+b") as f:
        f.truncate(12)
    with pytest.raises((PySparkException, Py4JJavaError)) as err:
        spark.table(table_name).count()
    assert "Corrupt Lance file" in str(err.value) and latest in str(err.value)


def test_unknown_feature_flag_is_refused(spark, warehouse, table_name):
    # pylance's own datasets never set bit 6 without overlays; we forge it to check the refusal.
    path = table_path(warehouse, table_name)
    lance.write_dataset(pa.table({"a": [1, 2]}), path, data_storage_version="2.0")
    from sparklance_testing import set_reader_flags
    set_reader_flags(path, 64)
    with pytest.raises((PySparkException, Py4JJavaError)) as err:
        spark.table(table_name).collect()
    assert "64" in str(err.value) and "feature flag" in str(err.value)


def test_unsupported_type_writes_nothing(spark, warehouse):
    with pytest.raises(Exception) as err:
        spark.sql("CREATE TABLE lance.db.badtype (i INTERVAL YEAR)")
    assert "INTERVAL" in str(err.value)
    assert not os.path.exists(os.path.join(warehouse, "db", "badtype.lance"))
