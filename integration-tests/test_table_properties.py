"""Table properties mean what they say: unknown names refused with the nearest known one, values
checked by kind at CREATE, CTAS, writeTo().create() and ALTER, dotted keys kept (issue 32 item 4)."""
import re
from pathlib import Path

import lance
import pytest
from pyspark.errors import AnalysisException

from conftest import table_path

DOCS = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"


def _props(spark, table):
    return {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {table}").collect()}


def _refused(call, *says):
    with pytest.raises(AnalysisException) as err:
        call()
    for s in says:
        assert s in str(err.value), str(err.value)
    return err.value


def test_a_typo_is_refused_with_the_nearest_name_at_create_ctas_and_create(spark, warehouse, table_name):
    _refused(lambda: spark.sql(f"CREATE TABLE {table_name} (id BIGINT) TBLPROPERTIES ('enable_stable_rowids' = 'true')"),
             "'enable_stable_rowids'", table_name, "did you mean 'enable_stable_row_ids'?")
    _refused(lambda: spark.sql(f"CREATE TABLE {table_name} TBLPROPERTIES ('optimise_write' = 'false') AS SELECT 1 AS id"),
             "did you mean 'optimize_write'?")
    _refused(lambda: spark.range(3).writeTo(table_name).tableProperty("max_rows_per_fil", "2").create(),
             "did you mean 'max_rows_per_file'?")
    assert not Path(table_path(warehouse, table_name)).exists()


@pytest.mark.parametrize("key,value,says", [
    ("enable_stable_row_ids", "yes", "true or false"),
    ("max_rows_per_file", "1m", "an integer from 1 to 4294967295"),
    ("rewrite_mode", "cells", "one of auto, rows, columns"),
], ids=["boolean", "size", "enum"])
def test_a_bad_value_is_refused_at_create_and_alter(spark, table_name, key, value, says):
    _refused(lambda: spark.sql(f"CREATE TABLE {table_name} (id BIGINT) TBLPROPERTIES ('{key}' = '{value}')"),
             f"'{key}'", f"'{value}'", says)
    if key != "enable_stable_row_ids":  # fixed at creation: its ALTER is tested below
        spark.sql(f"CREATE TABLE {table_name} (id BIGINT)")
        _refused(lambda: spark.sql(f"ALTER TABLE {table_name} SET TBLPROPERTIES ('{key}' = '{value}')"),
                 f"'{key}'", f"'{value}'", says)
        assert key not in _props(spark, table_name)


def test_alter_refuses_typos_keeps_dotted_keys_and_unsets(spark, warehouse, table_name):
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT) TBLPROPERTIES ('owner.team' = 'search', 'lance.note' = 'x')")
    _refused(lambda: spark.sql(f"ALTER TABLE {table_name} SET TBLPROPERTIES ('auto_compat' = 'true')"),
             "did you mean 'auto_compact'?")
    _refused(lambda: spark.sql(f"ALTER TABLE {table_name} UNSET TBLPROPERTIES ('optimize_writes')"),
             "did you mean 'optimize_write'?")
    spark.sql(f"ALTER TABLE {table_name} SET TBLPROPERTIES ('optimize_write' = 'FALSE', 'my.key' = 'v')")
    spark.sql(f"COMMENT ON TABLE {table_name} IS 'c'")
    props = _props(spark, table_name)
    assert props["optimize_write"] == "false" and props["my.key"] == "v" and props["owner.team"] == "search"
    ds = lance.dataset(table_path(warehouse, table_name))
    assert ds.config()["lance.note"] == "x" and ds.config()["sparklance.optimize_write"] == "false"
    assert {k: ds.metadata[k] for k in ("owner.team", "my.key", "comment")} == {"owner.team": "search", "my.key": "v",
                                                                                "comment": "c"}
    spark.sql(f"ALTER TABLE {table_name} UNSET TBLPROPERTIES ('optimize_write', 'owner.team')")
    props = _props(spark, table_name)
    assert "optimize_write" not in props and "owner.team" not in props and props["my.key"] == "v"


def test_stable_row_ids_on_end_to_end_and_fixed_afterwards(spark, warehouse, table_name):
    spark.sql(f"CREATE TABLE {table_name} TBLPROPERTIES ('enable_stable_row_ids' = 'TRUE') AS SELECT id FROM range(4)")
    assert lance.dataset(table_path(warehouse, table_name)).has_stable_row_ids
    # The value the table has is no change; the other value says how to copy the table.
    spark.sql(f"ALTER TABLE {table_name} SET TBLPROPERTIES ('enable_stable_row_ids' = 'true')")
    plain = table_name + "_plain"
    spark.sql(f"CREATE TABLE {plain} (id BIGINT)")
    _refused(lambda: spark.sql(f"ALTER TABLE {plain} SET TBLPROPERTIES ('enable_stable_row_ids' = 'true')"),
             "'enable_stable_row_ids'", "CREATE TABLE", f"AS SELECT * FROM {plain}")
    _refused(lambda: spark.sql(f"ALTER TABLE {plain} SET TBLPROPERTIES ('data_storage_version' = '2.1')"),
             "'data_storage_version'", "chosen at creation")
    assert not lance.dataset(table_path(warehouse, plain)).has_stable_row_ids


def test_the_docs_examples_run(spark):
    blocks = re.findall(r"```python\n(.*?)```", DOCS.read_text(), re.S)
    assert blocks
    for block in blocks:
        exec(block, {"spark": spark})
    props = _props(spark, "lance.db.conf_events")
    assert props["optimize_write"] == "false" and "rewrite_mode" not in props and "owner.team" not in props
    assert _props(spark, "lance.db.conf_copy")["max_rows_per_file"] == "2"


def test_create_options_are_checked_as_properties(spark, table_name):
    _refused(lambda: spark.sql(f"CREATE TABLE {table_name} (id BIGINT) USING lance OPTIONS ('optimise_write' = 'false')"),
             "did you mean 'optimize_write'?")
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT) USING lance OPTIONS ('optimize_write' = 'false')")
    assert _props(spark, table_name)["optimize_write"] == "false"
