"""Lookups by `_rowid` and `_rowaddr` (= and IN) return the live rows so named and nothing else:
after a DELETE or an UPDATE the ids and addresses of the rows it removed or moved name no row
(without stable row ids a row id is its address, and the old copy is only marked deleted), while
with stable row ids an updated row keeps its id. pylance, reading the same table, says which rows
exist under which id and address."""
import lance
import pytest

from conftest import table_path

CHANGES = {"delete": "DELETE FROM {t} WHERE k = 3", "update": "UPDATE {t} SET v = 'changed' WHERE k = 3"}


def _rows(path):
    """{(_rowid, _rowaddr): (k, v)} of the live rows, as pylance reads them."""
    tbl = lance.dataset(path).to_table(columns=["k", "v", "_rowid", "_rowaddr"])
    cols = [tbl.column(c).to_pylist() for c in ["k", "v", "_rowid", "_rowaddr"]]
    return {(rowid, addr): (k, v) for k, v, rowid, addr in zip(*cols)}


def _lookup(spark, t, predicate):
    return sorted(tuple(r) for r in spark.sql(f"SELECT k, v FROM {t} WHERE {predicate}").collect())


@pytest.mark.parametrize("change", sorted(CHANGES))
@pytest.mark.parametrize("stable", [False, True], ids=["addresses", "stable"])
@pytest.mark.parametrize("version", ["2.0", "2.2"])
def test_lookups_by_row_id_and_address_skip_rows_no_longer_there(spark, warehouse, table_name, version, stable, change):
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (k BIGINT, v STRING) TBLPROPERTIES ('data_storage_version' = '{version}', "
              f"'enable_stable_row_ids' = '{str(stable).lower()}')")
    spark.sql(f"INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, 'v' || id FROM range(10)")
    before = _rows(path)
    (old_id, old_addr), = [key for key, (k, _) in before.items() if k == 3]
    (kept_id, kept_addr), = [key for key, (k, _) in before.items() if k == 4]

    spark.sql(CHANGES[change].format(t=t))
    after = _rows(path)
    assert len(after) == (9 if change == "delete" else 10)

    def expected(column, values):
        index = 0 if column == "_rowid" else 1
        return sorted(row for key, row in after.items() if key[index] in values)

    every_id = {key[0] for key in before} | {key[0] for key in after}
    every_addr = {key[1] for key in before} | {key[1] for key in after}
    for column, named in [("_rowid", [old_id, kept_id]), ("_rowaddr", [old_addr, kept_addr])]:
        for value in named:
            assert _lookup(spark, t, f"{column} = {value}") == expected(column, {value}), f"{column} = {value}"
    for column, values in [("_rowid", every_id), ("_rowaddr", every_addr)]:
        listed = ", ".join(str(v) for v in sorted(values))
        assert _lookup(spark, t, f"{column} IN ({listed})") == sorted(after.values()), f"{column} IN ({listed})"
        # Some rows of the list only, among them the changed row's old id or address.
        some = sorted(values)[::2] + [old_id if column == "_rowid" else old_addr]
        listed = ", ".join(str(v) for v in sorted(set(some)))
        assert _lookup(spark, t, f"{column} IN ({listed})") == expected(column, set(some)), f"{column} IN ({listed})"
    # The row the statement changed is gone under its old address, and under its old id unless
    # stable row ids carried the id to the updated row.
    assert _lookup(spark, t, f"_rowaddr = {old_addr}") == []
    carried = stable and change == "update"
    assert _lookup(spark, t, f"_rowid = {old_id}") == ([(3, "changed")] if carried else [])
