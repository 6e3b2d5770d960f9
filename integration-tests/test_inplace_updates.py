"""UPDATE and MERGE that update rows in place (their assigned columns written anew per fragment,
Lance's REWRITE_COLUMNS) next to rows rewritten whole: Spark chooses per fragment, and pylance
reads the result, rows and lineage alike, and keeps changing it."""
import lance
import pytest

from conftest import table_path

LINEAGE = ["_rowid", "_row_created_at_version", "_row_last_updated_at_version"]


def _spark(spark, t):
    return sorted(tuple(r) for r in spark.sql(f"SELECT id, v, s, {', '.join(LINEAGE)}, _rowaddr FROM {t}").collect())


def _pylance(path):
    tbl = lance.dataset(path).to_table(columns=["id", "v", "s", *LINEAGE, "_rowaddr"])
    return sorted(zip(*(c.to_pylist() for c in tbl.columns)))


def _last_update(spark, t):
    h = spark.sql(f"SELECT operation, operation_parameters FROM {t}.history ORDER BY version DESC LIMIT 1").first()
    assert h.operation == "Update"
    return h.operation_parameters


@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_in_place_updates_read_by_pylance(spark, warehouse, table_name, version):
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT NOT NULL, v INT, s STRING) TBLPROPERTIES ('enable_stable_row_ids' = 'true', "
              f"'max_rows_per_file' = '16', 'optimize_write' = 'false', 'data_storage_version' = '{version}')")
    spark.sql(f"INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, CAST(id AS INT), repeat('s', 40) FROM range(48)")
    spark.sql(f"DELETE FROM {t} WHERE id = 3")
    before = {r[0]: r for r in _spark(spark, t)}

    spark.sql(f"UPDATE {t} SET v = v + 100 WHERE id < 16")             # all of fragment 0: in place
    assert _last_update(spark, t)["rows_updated_in_place"] == "15"
    spark.createDataFrame([(i, -i) for i in range(16, 30)], "id BIGINT, v INT").createOrReplaceTempView("inplace_src")
    spark.sql(f"MERGE INTO {t} t USING inplace_src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v")
    assert _last_update(spark, t)["rows_updated_in_place"] == "14"     # most of fragment 1, through MERGE
    spark.sql(f"UPDATE {t} SET s = 'changed' WHERE id = 40")            # one row, the widest column: whole
    assert "rows_updated_in_place" not in _last_update(spark, t)

    rows = _spark(spark, t)
    assert rows == _pylance(path)
    by_id = {r[0]: r for r in rows}
    v = lance.dataset(path).version
    for i in [0, 15, 16, 29]:   # in place: same row id, address and creation; updated by its statement
        assert by_id[i][3:5] == before[i][3:5] and by_id[i][6] == before[i][6] and by_id[i][5] in (v - 2, v - 1)
    assert by_id[30][5] == before[30][5], "a row of fragment 1 the MERGE did not match keeps its version"
    assert by_id[40][3] == before[40][3] and by_id[40][6] != before[40][6] and by_id[40][5] == v
    assert [by_id[i][1] for i in (0, 15, 16, 30, 40)] == [100, 115, -16, 30, 40] and by_id[40][2] == "changed"

    # pylance changes the table further; Spark reads what pylance reads.
    ds = lance.dataset(path)
    ds.update({"v": "v + 1"}, where="id < 8")
    ds.delete("id = 20")
    assert _spark(spark, t) == _pylance(path)
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=64)
    assert _spark(spark, t) == _pylance(path)
    assert spark.sql(f"SELECT sum(v) FROM {t}").first()[0] == sum(r[1] for r in _pylance(path))
