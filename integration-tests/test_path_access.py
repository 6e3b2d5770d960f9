"""Tables by location (issue 32 item 2): spark.read / df.write with format("lance"), SQL and DML on
lance.`<path>`, every save mode, time travel options, and USING <other format> refused. pylance reads
what Spark wrote and Spark reads what pylance wrote."""
import datetime
import re
import time
from pathlib import Path

import lance
import pyarrow as pa
import pytest
from pyspark.errors import AnalysisException

from conftest import table_path



@pytest.fixture
def path(tmp_path):
    return str(tmp_path / "t.lance")


def rows(df):
    return sorted(tuple(r) for r in df.collect())


def pylance_rows(path, *columns):
    t = lance.dataset(path).to_table(columns=list(columns)).to_pylist()
    return sorted(tuple(r[c] for c in columns) for r in t)


def test_save_modes_create_append_overwrite_ignore_error(spark, path):
    df = spark.createDataFrame([(1, "a"), (2, "b")], "id BIGINT, s STRING")
    df.write.format("lance").save(path)  # errorifexists, the default, on a new path creates
    assert pylance_rows(path, "id", "s") == [(1, "a"), (2, "b")]
    assert lance.dataset(path).version == 1  # one atomic create, no empty version before the rows

    with pytest.raises(AnalysisException) as e:
        df.write.format("lance").mode("errorifexists").save(path)
    assert e.value.getCondition() == "PATH_ALREADY_EXISTS"
    spark.createDataFrame([(9, "z")], "id BIGINT, s STRING").write.format("lance").mode("ignore").save(path)
    assert lance.dataset(path).version == 1

    spark.createDataFrame([(3, "c")], "id BIGINT, s STRING").write.format("lance").mode("append").save(path)
    assert pylance_rows(path, "id", "s") == [(1, "a"), (2, "b"), (3, "c")]

    spark.createDataFrame([(7, "x")], "id BIGINT, s STRING").write.format("lance").mode("overwrite").save(path)
    assert pylance_rows(path, "id", "s") == [(7, "x")]
    # A schema the table does not have needs overwriteSchema, as in Delta.
    other = spark.createDataFrame([(1.5,)], "f DOUBLE")
    with pytest.raises(AnalysisException):
        other.write.format("lance").mode("overwrite").save(path)
    other.write.format("lance").mode("overwrite").option("overwriteSchema", "true").save(path)
    assert pylance_rows(path, "f") == [(1.5,)]
    assert lance.dataset(path).schema.names == ["f"]
    lance.dataset(path).validate()


def test_append_and_overwrite_create_a_missing_table_with_properties(spark, tmp_path):
    appended, overwritten = str(tmp_path / "a.lance"), str(tmp_path / "o.lance")
    df = spark.createDataFrame([(1, "a")], "id BIGINT, s STRING")
    df.write.format("lance").mode("append").option("enable_stable_row_ids", "true").save(appended)
    df.write.format("lance").mode("overwrite").option("max_rows_per_file", "10").save(overwritten)
    assert pylance_rows(appended, "id", "s") == pylance_rows(overwritten, "id", "s") == [(1, "a")]
    props = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES lance.`{appended}`").collect()}
    assert props["enable_stable_row_ids"] == "true"
    props = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES lance.`{overwritten}`").collect()}
    assert props["max_rows_per_file"] == "10"


def test_read_with_time_travel_options(spark, path):
    spark.createDataFrame([(1,)], "id BIGINT").write.format("lance").save(path)
    first = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
    time.sleep(0.01)  # commit times are in milliseconds: the next version is strictly later
    spark.createDataFrame([(2,)], "id BIGINT").write.format("lance").mode("append").save(path)
    spark.sql(f"CALL lance.system.create_tag(table => '`{path}`', tag => 'first', version => 1)")

    read = spark.read.format("lance")
    assert rows(read.load(path)) == [(1,), (2,)]
    assert rows(read.option("versionAsOf", 1).load(path)) == [(1,)]
    assert rows(spark.read.format("lance").option("tag", "first").load(path)) == [(1,)]
    assert rows(spark.read.format("lance").option("versionAsOf", "first").load(path)) == [(1,)]
    assert rows(spark.read.format("lance").option("timestampAsOf", first.isoformat(sep=" ")).load(path)) == [(1,)]
    with pytest.raises(Exception, match="give one version only"):
        spark.read.format("lance").option("versionAsOf", 1).option("tag", "first").load(path).collect()


def test_missing_path_is_an_analysis_error(spark, tmp_path):
    with pytest.raises(AnalysisException) as e:
        spark.read.format("lance").load(str(tmp_path / "nothing.lance"))
    assert e.value.getCondition() == "PATH_NOT_FOUND"
    with pytest.raises(AnalysisException):
        spark.sql(f"SELECT * FROM lance.`{tmp_path / 'nothing.lance'}`").collect()


def test_sql_and_dml_on_a_table_pylance_wrote(spark, path):
    lance.write_dataset(pa.table({"id": pa.array(range(10), pa.int64()), "v": pa.array([f"v{i}" for i in range(10)])}),
                        path)
    t = f"lance.`{path}`"
    assert spark.sql(f"SELECT count(*) FROM {t}").first()[0] == 10
    spark.sql(f"DELETE FROM {t} WHERE id < 3")
    spark.sql(f"UPDATE {t} SET v = 'up' WHERE id = 5")
    spark.createDataFrame([(5, "m"), (42, "new")], "id BIGINT, v STRING").createOrReplaceTempView("src")
    spark.sql(f"""MERGE INTO {t} USING src ON {t}.id = src.id
                  WHEN MATCHED THEN UPDATE SET v = src.v WHEN NOT MATCHED THEN INSERT *""")
    expected = [(i, f"v{i}") for i in range(3, 10) if i != 5] + [(5, "m"), (42, "new")]
    assert pylance_rows(path, "id", "v") == sorted(expected)
    assert rows(spark.sql(f"SELECT id, v FROM {t}")) == sorted(expected)
    lance.dataset(path).validate()
    # The table's metadata tables and procedures take the location too.
    assert spark.sql(f"SELECT count(*) FROM lance.`{path}`.history").first()[0] == lance.dataset(path).version
    spark.sql(f"CALL lance.system.compact(table => '`{path}`')")
    assert pylance_rows(path, "id", "v") == sorted(expected)


def test_create_table_by_location_in_sql_and_refused_statements(spark, tmp_path):
    path = str(tmp_path / "sql.lance")
    spark.sql(f"CREATE TABLE lance.`{path}` (id BIGINT, s STRING) USING lance")
    spark.sql(f"INSERT INTO lance.`{path}` VALUES (1, 'a')")
    assert pylance_rows(path, "id", "s") == [(1, "a")]
    with pytest.raises(Exception, match="delete or move its directory"):
        spark.sql(f"DROP TABLE lance.`{path}`")
    assert pylance_rows(path, "id", "s") == [(1, "a")]
    copy = str(tmp_path / "copy.lance")
    spark.sql(f"""CREATE TABLE lance.`{copy}` TBLPROPERTIES ('enable_stable_row_ids' = 'true')
                  AS SELECT * FROM lance.`{path}`""")
    spark.sql(f"ALTER TABLE lance.`{copy}` ADD COLUMN n INT")
    spark.sql(f"INSERT INTO lance.`{copy}` VALUES (2, 'b', 20)")
    assert lance.dataset(copy).schema.names == ["id", "s", "n"]
    assert pylance_rows(copy, "id", "n") == [(1, None), (2, 20)]
    changes = spark.sql(f"SELECT id, _change_type FROM lance.`{copy}` CHANGES FROM VERSION 3 TO VERSION 3").collect()
    assert [(r.id, r._change_type) for r in changes] == [(2, "insert")]


@pytest.mark.parametrize("provider", ["delta", "csv"])
def test_using_another_format_is_refused(spark, provider):
    name = f"lance.db.using_{provider}"
    with pytest.raises(Exception, match=f"USING {provider}"):
        spark.sql(f"CREATE TABLE {name} (id INT) USING {provider}")
    assert not spark.catalog.tableExists(name)
    with pytest.raises(Exception, match=f"USING {provider}"):
        spark.sql(f"CREATE TABLE {name} USING {provider} AS SELECT 1 AS id")
    assert not spark.catalog.tableExists(name)


def test_writers_without_a_format_make_lance_tables(spark, warehouse, tmp_path):
    """saveAsTable and writeStream.toTable name the session's default source (parquet) when given
    no format: in a Lance catalog that makes a Lance table, which pylance reads."""
    spark.range(3).write.saveAsTable("lance.db.saved_without_format")
    (spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 4).load().selectExpr("value AS id")
     .writeStream.option("checkpointLocation", str(tmp_path / "cp")).trigger(availableNow=True)
     .toTable("lance.db.streamed_without_format").awaitTermination())
    for name, rows in (("saved_without_format", 3), ("streamed_without_format", 4)):
        assert lance.dataset(table_path(warehouse, f"lance.db.{name}")).count_rows() == rows


def test_the_docs_example_runs(spark, tmp_path):
    """docs/tables-by-location.md's example, on this session and a fresh path."""
    doc = (Path(__file__).resolve().parent.parent / "docs" / "tables-by-location.md").read_text()
    code = re.search(r"```python\n(.*?)```", doc, re.S).group(1)
    code = re.sub(r"^spark = sparklance\.configure\(.*$", "", code, flags=re.M)
    path = str(tmp_path / "events.lance")
    code = code.replace('"/tmp/by-location/events.lance"', repr(path))
    exec(compile(code, "tables-by-location.md", "exec"), {"spark": spark})
    assert sorted(lance.dataset(path).to_table().column("kind").to_pylist()) == ["close", "tap"]
    assert spark.read.format("lance").option("versionAsOf", 1).load(path).count() == 2
