"""Tables pylance compacted with `defer_index_remap=True`: its indices keep naming the fragments the
compaction replaced, and its fragment reuse index (`__lance_frag_reuse`) maps them to the new ones.
Spark's in-place UPDATEs, MERGEs, row rewrites and compactions must leave every kind of index
pylance built answering as a scan does, and Spark's own reads (which use BTREE, BITMAP and zone
maps to skip rows) must see every row."""
import lance
import numpy as np
import pyarrow as pa
import pytest

from conftest import table_path

FRAGMENTS, ROWS = 6, 100
# Each index kind on its own column, and a filter (or search) pylance answers with it.
QUERIES = {"id": "id BETWEEN 95 AND 205", "cat": "cat = 'c1'", "x": "x < 150", "tags": "array_has_any(tags, ['t2'])"}


def _rows(start):
    ids = np.arange(start, start + ROWS)
    return pa.table({
        "id": ids, "cat": pa.array([f"c{k % 7}" for k in ids]), "x": (ids * 37) % 1000,
        "tags": pa.array([[f"t{k % 5}", f"t{k % 3}"] for k in ids], pa.list_(pa.string())),
        "text": pa.array([f"word{k % 11} common" for k in ids]),
        "vec": pa.FixedSizeListArray.from_arrays(pa.array(np.repeat(ids % 13, 4).astype(np.float32)), 4),
    })


def _deferred_table(path):
    """Six fragments, one index of each kind, then a compaction into two fragments whose remap is deferred."""
    for i in range(FRAGMENTS):
        lance.write_dataset(_rows(i * ROWS), path, mode="append" if i else "create")
    ds = lance.dataset(path)
    for column, kind in [("id", "BTREE"), ("cat", "BITMAP"), ("x", "ZONEMAP"), ("tags", "LABEL_LIST"), ("text", "INVERTED")]:
        ds.create_scalar_index(column, kind)
    ds.create_index("vec", "IVF_FLAT", num_partitions=2)
    ds.optimize.compact_files(target_rows_per_fragment=3 * ROWS, defer_index_remap=True)
    ds = lance.dataset(path)
    assert "__lance_frag_reuse" in [i["name"] for i in ds.list_indices()]
    return ds


def _check_pylance(path):
    """Each index's answer equals a scan's; pylance validates the table."""
    ds = lance.dataset(path)
    ds.validate()
    for column, query in QUERIES.items():
        indexed = sorted(ds.to_table(columns=["id"], filter=query)["id"].to_pylist())
        scanned = sorted(ds.to_table(columns=["id"], filter=query, use_scalar_index=False)["id"].to_pylist())
        assert indexed == scanned, (column, query, len(indexed), len(scanned))
    everything = ds.to_table(columns=["id", "text"])
    matching = sorted(i for i, t in zip(everything["id"].to_pylist(), everything["text"].to_pylist()) if "word3" in t.split())
    assert sorted(ds.to_table(columns=["id"], full_text_query="word3")["id"].to_pylist()) == matching
    q = np.full(4, 5, np.float32)
    near = ds.to_table(columns=["id"], nearest={"column": "vec", "q": q, "k": 5, "nprobes": 2})["id"].to_pylist()
    exact = ds.to_table(columns=["id"], nearest={"column": "vec", "q": q, "k": 5, "use_index": False})["id"].to_pylist()
    # Distances tie in groups of equal vectors: the ids found must be at the exact distance.
    vecs = {i: v for i, v in zip(everything["id"].to_pylist(), ds.to_table(columns=["vec"])["vec"].to_pylist())}
    dist = lambda i: float(np.sum((np.array(vecs[i]) - q) ** 2))
    assert sorted(map(dist, near)) == sorted(map(dist, exact))
    return ds


def _check_spark(spark, t, path):
    """Spark's filtered reads (skipping by the indices) equal pylance's scan."""
    ds = lance.dataset(path)
    for column, query in QUERIES.items():
        if column == "tags":
            query = "array_contains(tags, 't2')"
        got = sorted(r[0] for r in spark.sql(f"SELECT id FROM {t} WHERE {query}").collect())
        want = sorted(ds.to_table(columns=["id"], filter=QUERIES[column], use_scalar_index=False)["id"].to_pylist())
        assert got == want, (column, query)


ASSIGNMENTS = {"cat": "'c1'", "id": "id + 1000", "x": "x + 1"}


@pytest.mark.parametrize("column", ASSIGNMENTS)
def test_in_place_updates_keep_deferred_indices_right(spark, warehouse, table_name, column):
    t, path = table_name, table_path(warehouse, table_name)
    ds = _deferred_table(path)
    _check_spark(spark, t, path)
    first = min(f.fragment_id for f in ds.get_fragments())
    spark.sql("SET spark.sparklance.rewrite_mode = columns")
    try:
        # Rows of the first new fragment only: the other keeps its coverage.
        spark.sql(f"UPDATE {t} SET {column} = {ASSIGNMENTS[column]} WHERE id % 3 = 0 AND _fragid = {first}")
    finally:
        spark.sql("SET spark.sparklance.rewrite_mode = auto")
    h = spark.sql(f"SELECT operation_parameters FROM {t}.history ORDER BY version DESC LIMIT 1").first()[0]
    assert h.get("rows_updated_in_place") == "100", h
    ds = _check_pylance(path)
    _check_spark(spark, t, path)
    covered = {i["name"]: i["fragment_ids"] for i in ds.list_indices()}
    assert first not in covered[f"{column}_idx"] and first + 1 in covered[f"{column}_idx"], covered


def test_dml_and_compaction_keep_deferred_indices_right(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    _deferred_table(path)
    spark.sql(f"DELETE FROM {t} WHERE id % 10 = 4")
    spark.sql(f"UPDATE {t} SET cat = 'c1', tags = array('t2') WHERE id % 10 = 5")
    spark.sql(f"MERGE INTO {t} t USING (SELECT id, 'c9' AS cat FROM range(0, 700, 7)) s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET cat = s.cat "
              "WHEN NOT MATCHED THEN INSERT (id, cat, x, tags, text, vec) VALUES (s.id, s.cat, 1, array('t2'), 'word3', "
              "array(CAST(5 AS FLOAT), 5, 5, 5))")
    _check_pylance(path)
    _check_spark(spark, t, path)
    spark.sql(f"CALL lance.system.compact(table => '{t.split('.', 1)[1]}', target_rows_per_fragment => 1000)")
    _check_pylance(path)
    _check_spark(spark, t, path)
    assert spark.sql(f"SELECT count(*) FROM {t}").first()[0] == lance.dataset(path).count_rows()
