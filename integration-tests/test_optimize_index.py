"""Issue 33 item 2, "Incremental": CALL lance.system.optimize_index(...), pylance's optimize_indices for
the IVF indices Spark and pylance build. Rows appended after a build are searched exactly until
optimize_index adds a delta segment (same centroids and codebook, new uuid, only the new fragments)
or merges segments; DML and compaction in between keep answers right; pylance's nearest, validate()
and index statistics check every index it writes, and Spark searches the deltas pylance writes."""
import lance
import numpy as np
import pytest

from conftest import table_path
from sparklance_testing import index_entries, vector_distances

DIM = 8


def _data(n, seed):
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


def _append(spark, name, first, data):
    rows = [(first + i, v.tolist()) for i, v in enumerate(data)]
    spark.createDataFrame(rows, "id BIGINT, emb ARRAY<FLOAT>").coalesce(1).writeTo(name).append()


def _create(spark, name, data, chunks=2):
    spark.sql(f"CREATE TABLE {name} (id BIGINT, emb ARRAY<FLOAT>) TBLPROPERTIES ("
              f"'emb.arrow.fixed-size-list.size' = '{DIM}', 'zonemap_columns' = '')")
    for part in np.array_split(np.arange(len(data)), chunks):
        _append(spark, name, int(part[0]), data[part])


def _literal(query):
    return "array(" + ", ".join(f"CAST({float(v)!r} AS FLOAT)" for v in query) + ")"


def _spark_search(spark, name, query, k, metric, **options):
    extra = "".join(f", {key} => {value}" for key, value in options.items())
    return [(r.id, r._distance) for r in spark.sql(
        f"SELECT id, _distance FROM vector_search(table => '{name}', vector_column => 'emb', "
        f"query_vector => {_literal(query)}, k => {k}, distance_type => '{metric}'{extra})").collect()]


def _pylance_search(path, query, k, metric, **options):
    rows = lance.dataset(path).to_table(columns=["id"], nearest={"column": "emb", "q": query, "k": k, "metric": metric,
                                                                 **options})
    return [(r["id"], r["_distance"]) for r in rows.to_pylist()]


def _agree(spark, name, path, queries, metric, **options):
    """Spark's vector_search and pylance's nearest find the same rows, at the same distances."""
    for q in queries:
        ours = _spark_search(spark, name, q, 8, metric, **options)
        theirs = _pylance_search(path, q, 8, metric, **options)
        assert [o[0] for o in ours] == [t[0] for t in theirs], (ours, theirs)
        assert np.allclose([o[1] for o in ours], [t[1] for t in theirs], rtol=1e-4, atol=1e-5)


def _exact_top(path, query, metric):
    """The id of the nearest live row by numpy, in pylance's units (ties by id)."""
    t = lance.dataset(path).to_table(columns=["id", "emb"])
    x = np.stack(t["emb"].to_numpy(zero_copy_only=False)).astype(np.float64)
    d = vector_distances(x, query, metric)
    ids = t["id"].to_numpy()
    return int(ids[np.lexsort((ids, d))[0]])


def _optimize(spark, name, args=""):
    return spark.sql(f"CALL lance.system.optimize_index(table => '{name.split('.', 1)[1]}'{args})").head()


def _segments(path, name="emb_idx"):
    return [s for s in lance.dataset(path).list_indices() if s["name"] == name]


def _centroids(path, name="emb_idx"):
    return [np.asarray(i["centroids"]) for i in lance.dataset(path).stats.index_stats(name)["indices"]]


@pytest.mark.parametrize("index_type, metric, extra", [
    ("IVF_FLAT", "l2", ""), ("IVF_PQ", "cosine", ", num_sub_vectors => 4"), ("IVF_SQ", "dot", "")])
def test_delta_segment_covers_appended_rows(spark, warehouse, index_type, metric, extra):
    name = f"lance.db.optidx_delta_{index_type.lower()}"
    path = table_path(warehouse, name)
    data = _data(700, 1)
    _create(spark, name, data[:600])
    spark.sql(f"CALL lance.system.create_index(table => '{name.split('.', 1)[1]}', column => 'emb', "
              f"index_type => '{index_type}', metric => '{metric}', num_partitions => 4{extra})")
    built = _segments(path)
    _append(spark, name, 600, data[600:])
    queries = [data[650], data[699], _data(1, 9)[0]]
    # Before: the appended fragment is searched exactly beside the index.
    for q in queries:
        assert _spark_search(spark, name, q, 3, metric, nprobes=4, refine_factor=5)[0][0] == _exact_top(path, q, metric)

    read = lance.dataset(path).version
    result = _optimize(spark, name)
    assert (result.indices, result.fragments_indexed, result.segments_added, result.segments_removed) == (["emb_idx"], 1, 1, 0)
    ds = lance.dataset(path)
    assert result.version == ds.version == read + 1
    ds.validate()
    segments = _segments(path)
    # The build's segments are kept as they were; the delta covers the new fragment only.
    assert [s["uuid"] for s in segments[:len(built)]] == [s["uuid"] for s in built]
    new_fragment = max(f.fragment_id for f in ds.get_fragments())
    assert [sorted(s["fragment_ids"]) for s in segments[len(built):]] == [[new_fragment]]
    delta = index_entries(path)[-1]
    assert delta["dataset_version"] == read and delta["details_type"].endswith("VectorIndexDetails")
    stats = ds.stats.index_stats("emb_idx")
    assert stats["num_unindexed_rows"] == 0 and stats["num_indexed_rows"] == 700
    # Same model: the delta's centroids are the build's.
    centroids = _centroids(path)
    assert all(np.array_equal(c, centroids[0]) for c in centroids)
    plan = ds.scanner(nearest={"column": "emb", "q": queries[0], "k": 8, "metric": metric}).explain_plan(True)
    assert f"deltas={len(segments)}" in plan, plan
    # After: found through the index (no uncovered fragment left), by Spark and pylance alike.
    for q in queries:
        assert _spark_search(spark, name, q, 3, metric, nprobes=4, refine_factor=5)[0][0] == _exact_top(path, q, metric)
    _agree(spark, name, path, queries, metric, nprobes=2, refine_factor=2)
    _agree(spark, name, path, queries, metric, nprobes=2)

    # Nothing left to cover: nothing committed.
    again = _optimize(spark, name)
    assert again.indices == [] and again.version == lance.dataset(path).version == result.version


def test_merge_after_dml_and_compaction(spark, warehouse):
    name = "lance.db.optidx_merge"
    path = table_path(warehouse, name)
    data = _data(900, 2)
    _create(spark, name, data[:600])
    spark.sql(f"CALL lance.system.create_index(table => 'db.optidx_merge', column => 'emb', index_type => 'IVF_PQ', "
              "num_partitions => 4, num_sub_vectors => 4)")
    built = _segments(path)
    _append(spark, name, 600, data[600:700])
    assert _optimize(spark, name, ", num_indices_to_merge => 0").segments_added == 1
    # DML between: deletes, and an UPDATE that moves rows (their new vectors) to a new fragment.
    spark.sql(f"DELETE FROM {name} WHERE id % 5 = 0")
    deleted = lambda i: i < 700 and i % 5 == 0  # noqa: E731 (rows appended later keep their ids)
    spark.sql(f"UPDATE {name} SET emb = transform(emb, x -> x + 10) WHERE id IN (11, 12, 613)")
    _append(spark, name, 700, data[700:800])
    moved = data[11] + 10
    queries = [data[1], data[650], data[750], moved]
    for q in queries:
        assert not any(deleted(r[0]) for r in _spark_search(spark, name, q, 8, "l2", nprobes=4))
    assert _spark_search(spark, name, moved, 1, "l2", nprobes=1, refine_factor=2)[0][0] == 11
    _agree(spark, name, path, queries, "l2", nprobes=4, refine_factor=3)

    # Merge every segment and the uncovered fragments into one segment.
    oldest = index_entries(path)[0]["dataset_version"]
    result = _optimize(spark, name, ", index_names => array('emb_idx'), num_indices_to_merge => 10")
    segments = _segments(path)
    assert result.segments_added == 1 and result.segments_removed == len(built) + 1 and len(segments) == 1
    ds = lance.dataset(path)
    ds.validate()
    assert sorted(segments[0]["fragment_ids"]) == sorted(f.fragment_id for f in ds.get_fragments())
    assert index_entries(path)[0]["dataset_version"] == oldest
    # The merged segment holds the live rows only (deleted and moved-away rows are not carried).
    assert sum(p["size"] for p in ds.stats.index_stats("emb_idx")["indices"][0]["partitions"]) == ds.count_rows()
    for q in queries:
        assert not any(deleted(r[0]) for r in _spark_search(spark, name, q, 8, "l2", nprobes=4))
    assert _spark_search(spark, name, moved, 1, "l2", nprobes=1, refine_factor=2)[0][0] == 11
    _agree(spark, name, path, queries, "l2", nprobes=2)

    # Compaction: results stay right, and optimize_index covers whatever it left uncovered.
    _append(spark, name, 800, data[800:])
    spark.sql(f"CALL lance.system.compact(table => 'db.optidx_merge', target_rows_per_fragment => 2000)")
    _agree(spark, name, path, queries[2:] + [data[850]], "l2", nprobes=4, refine_factor=3)
    _optimize(spark, name)
    ds = lance.dataset(path)
    ds.validate()
    assert ds.stats.index_stats("emb_idx")["num_unindexed_rows"] == 0
    assert _spark_search(spark, name, data[850], 1, "l2", nprobes=1)[0][0] == 850
    _agree(spark, name, path, queries + [data[850]], "l2", nprobes=4, refine_factor=3)


def test_spark_searches_pylance_deltas_and_pylance_extends_ours(spark, warehouse):
    """pylance builds, Spark appends, pylance's optimize_indices writes a delta Spark searches; then
    Spark's delta on pylance's index is extended again by pylance's optimize_indices."""
    name = "lance.db.optidx_pylance"
    path = table_path(warehouse, name)
    data = _data(800, 3)
    _create(spark, name, data[:500])
    lance.dataset(path).create_index("emb", "IVF_SQ", num_partitions=4, metric="l2")
    _append(spark, name, 500, data[500:600])
    lance.dataset(path).optimize.optimize_indices(num_indices_to_merge=0)
    assert len(_segments(path)) == 2
    queries = [data[550], data[10], _data(1, 8)[0]]
    _agree(spark, name, path, queries, "l2", nprobes=2)
    assert _spark_search(spark, name, data[550], 1, "l2", nprobes=1)[0][0] == 550

    _append(spark, name, 600, data[600:700])
    result = _optimize(spark, name)
    assert result.segments_added == 1 and len(_segments(path)) == 3
    lance.dataset(path).validate()
    _agree(spark, name, path, queries + [data[650]], "l2", nprobes=2)

    _append(spark, name, 700, data[700:])
    lance.dataset(path).optimize.optimize_indices(num_indices_to_merge=0)
    ds = lance.dataset(path)
    ds.validate()
    assert len(_segments(path)) == 4 and ds.stats.index_stats("emb_idx")["num_unindexed_rows"] == 0
    _agree(spark, name, path, queries + [data[650], data[750]], "l2", nprobes=2)


def test_retrain_and_bad_arguments(spark, warehouse):
    name = "lance.db.optidx_retrain"
    path = table_path(warehouse, name)
    data = _data(400, 4)
    _create(spark, name, data[:300])
    spark.sql("CALL lance.system.create_index(table => 'db.optidx_retrain', column => 'emb', index_type => 'IVF_FLAT', "
              "num_partitions => 4)")
    spark.sql("CALL lance.system.create_index(table => 'db.optidx_retrain', column => 'id', name => 'id_idx')")
    built = _segments(path)
    _append(spark, name, 300, data[300:])
    result = _optimize(spark, name, ", name => 'emb_idx', retrain => true")
    segments = _segments(path)
    # Trained again over every row: pylance's num_partitions for 400 IVF_FLAT rows is 1.
    assert result.segments_removed == len(built) and result.segments_added == len(segments)
    assert not {s["uuid"] for s in built} & {s["uuid"] for s in segments}
    assert {len(c) for c in _centroids(path)} == {1}
    lance.dataset(path).validate()
    _agree(spark, name, path, [data[350], data[5]], "l2", nprobes=1)

    for args, says in [
        (", name => 'nope'", "no index named 'nope'"),
        (", name => 'id_idx'", "is not a vector index"),
        (", num_indices_to_merge => -1", "num_indices_to_merge must be 0 or more"),
        (", retrain => true, num_indices_to_merge => 1", "num_indices_to_merge does not apply"),
    ]:
        with pytest.raises(Exception, match=f"LANCE_INVALID_ARGUMENT.*{says}"):
            _optimize(spark, name, args)
