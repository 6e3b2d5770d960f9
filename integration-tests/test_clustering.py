"""CLUSTER BY and compaction layouts (`sort_by`, `zorder_by`, `recluster`) as pylance 14 sees them:
the laid-out table holds the same rows with the same stable row ids, passes `validate()`, keeps the
clustering property through pylance's own appends and compactions, and pylance's filters on the
layout columns read fewer fragments' rows (its `explain_plan` / scan statistics aside, the rows per
fragment show it: each fragment's value range of the layout column shrinks)."""
import lance
import pyarrow as pa
import pyarrow.compute as pc

import sparklance
from conftest import table_path


def rows_of(ds, columns):
    return sorted(ds.to_table(columns=columns, with_row_id=True).to_pylist(), key=lambda r: r["_rowid"])


def widths(ds, column, chunk=None):
    """How much of `column`'s range each fragment (or each run of `chunk` rows of a fragment, in
    storage order, as zone maps see them) spans, as a fraction of the whole range."""
    table = ds.to_table(columns=[column])
    low, high = pc.min(table[column]).as_py(), pc.max(table[column]).as_py()
    spans = []
    for fragment in ds.get_fragments():
        values = fragment.to_table(columns=[column])[column]
        step = chunk or len(values)
        for start in range(0, len(values), step):
            part = values.slice(start, step)
            spans.append((pc.max(part).as_py() - pc.min(part).as_py()) / (high - low))
    return spans


def mean(values):
    return sum(values) / len(values)


def test_zorder_compaction_of_a_pylance_table_keeps_rows_and_ids(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    n = 40_000
    data = pa.table({"a": pc.cast(pc.multiply(pa.array(range(n)), 7919), pa.int64()),
                     "b": pa.array([(i * 104729) % 1000 for i in range(n)], pa.int32()),
                     "s": pa.array([f"row {i}" for i in range(n)])})
    data = data.set_column(0, "a", pc.bit_wise_and(data["a"], 1023))
    lance.write_dataset(data, path, max_rows_per_file=10_000, data_storage_version="2.1", enable_stable_row_ids=True)
    lance.dataset(path).delete("b = 3")
    before = rows_of(lance.dataset(path), ["a", "b", "s"])
    assert min(widths(lance.dataset(path), "b", chunk=1000)) > 0.9
    assert min(widths(lance.dataset(path), "a", chunk=1000)) > 0.9

    row = sparklance.compact(spark, table_name, zorder_by="a, b", target_rows_per_fragment=10_000)
    assert row.fragments_removed == 4 and row.fragments_added == 3
    ds = lance.dataset(path)
    ds.validate()
    assert rows_of(ds, ["a", "b", "s"]) == before
    # Z-ordered: a run of 1,000 rows (a zone's worth here) spans a small part of either column's range.
    for column in ("a", "b"):
        assert mean(widths(ds, column, chunk=1000)) < 0.4, mean(widths(ds, column, chunk=1000))

    sparklance.compact(spark, table_name, sort_by="b", target_rows_per_fragment=10_000)
    ds = lance.dataset(path)
    ds.validate()
    assert rows_of(ds, ["a", "b", "s"]) == before
    assert max(widths(ds, "b")) < 0.5
    assert ds.to_table(filter="b = 500").num_rows == sum(1 for r in before if r["b"] == 500)


def test_clustering_survives_pylance_commits_and_drives_spark_writes(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {table_name} (k BIGINT, v STRING) CLUSTER BY (k) TBLPROPERTIES ('optimize_write' = 'false')")
    spark.sql(f"INSERT INTO {table_name} SELECT /*+ REPARTITION(2) */ abs(xxhash64(id)) % 100000, CAST(id AS STRING) FROM range(4000)")
    ds = lance.dataset(path)
    assert ds.config()["sparklance.clustering_columns"] == "k"
    for fragment in ds.get_fragments():
        keys = fragment.to_table(columns=["k"])["k"].to_pylist()
        assert keys == sorted(keys)
    # pylance's append and compaction keep the property; Spark's writes go on sorting by it.
    lance.write_dataset(pa.table({"k": pa.array([5, 3, 9], pa.int64()), "v": ["x", "y", "z"]}), path, mode="append")
    lance.dataset(path).optimize.compact_files(target_rows_per_fragment=100_000)
    assert lance.dataset(path).config()["sparklance.clustering_columns"] == "k"
    props = {r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES {table_name}").collect()}
    assert props["clustering_columns"] == "k"
    expected = sorted(lance.dataset(path).to_table()["k"].to_pylist())
    sparklance.compact(spark, table_name, recluster=True)
    ds = lance.dataset(path)
    ds.validate()
    placed = [k for f in ds.get_fragments() for k in f.to_table(columns=["k"])["k"].to_pylist()]
    assert placed == expected
    spark.sql(f"ALTER TABLE {table_name} CLUSTER BY NONE")
    assert lance.dataset(path).config().get("sparklance.clustering_columns", "") == ""
