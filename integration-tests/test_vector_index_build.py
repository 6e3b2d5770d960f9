"""IVF vector indices built by CALL lance.system.create_index or CREATE INDEX from Spark (index_type IVF_FLAT,
IVF_PQ, IVF_SQ), checked by pylance 14.0.2: its nearest() plans them (ANNIvfPartition), its
validate() passes, it finds what exact search finds, and its optimize_indices extends them after
an append. The build samples and trains on the driver, then one task a group of fragments
writes one segment: several segments sharing one model, committed together."""
import lance
import numpy as np
import pytest

from conftest import table_path

DIM = 16


def _vectors(n, seed):
    rng = np.random.default_rng(seed)
    centers = np.random.default_rng(7).standard_normal((20, DIM)).astype("float32") * 4
    return (centers[rng.integers(0, 20, n)] + rng.standard_normal((n, DIM))).astype("float32")


def _append(spark, table_name, first, n, seed):
    rows = [(first + i, [float(x) for x in v]) for i, v in enumerate(_vectors(n, seed))]
    spark.createDataFrame(rows, "id BIGINT, emb ARRAY<FLOAT>").coalesce(1).writeTo(table_name).append()


def _recall(ds, name, metric, partitions, refine, queries=10):
    hits = 0
    for q in _vectors(queries, 99):
        near = {"column": "emb", "q": q, "k": 10, "metric": metric, "nprobes": partitions}
        if refine:
            near["refine_factor"] = 10
        plan = ds.scanner(nearest=near, columns=["id"]).explain_plan(True)
        assert "ANNIvfPartition" in plan and "ANNSubIndex" in plan, plan
        got = set(ds.to_table(nearest=near, columns=["id"])["id"].to_pylist())
        exact = ds.to_table(nearest={"column": "emb", "q": q, "k": 10, "metric": metric, "use_index": False},
                            columns=["id"])["id"].to_pylist()
        hits += len(got & set(exact))
    return hits / (10.0 * queries)


@pytest.fixture(scope="module")
def vectors_table(spark, warehouse):
    name = "lance.db.vector_index_build"
    spark.sql(f"DROP TABLE IF EXISTS {name}")
    spark.sql(f"CREATE TABLE {name} (id BIGINT, emb ARRAY<FLOAT>) TBLPROPERTIES ("
              f"'emb.arrow.fixed-size-list.size' = '{DIM}', 'max_rows_per_file' = '1000', 'optimize_write' = 'false', "
              "'zonemap_columns' = '')")
    _append(spark, name, 0, 4000, 1)
    return name, table_path(warehouse, name)


@pytest.mark.parametrize("index_type,metric,extra,least,statement", [
    ("IVF_FLAT", "l2", "", 1.0, "call"),
    ("IVF_PQ", "cosine", ", num_sub_vectors => 4", 0.9, "call"),
    ("IVF_SQ", "dot", "", 0.9, "create index"),
])
def test_spark_builds_vector_indices_pylance_uses(spark, vectors_table, index_type, metric, extra, least, statement):
    table, path = vectors_table
    name = "emb_idx"  # each build replaces the one before: pylance plans with the column's first index only
    if statement == "call":
        result = spark.sql(f"CALL lance.system.create_index(table => '{table.split('.', 1)[1]}', column => 'emb', "
                           f"index_type => '{index_type}', metric => '{metric}', num_partitions => 4, name => '{name}'"
                           f"{extra})").head()
        assert result.index_type == index_type and result.zones is None
        segments_built = result.segments
    else:
        # Spark's own CREATE INDEX: the same build, with the options as OPTIONS.
        spark.sql(f"DROP INDEX IF EXISTS {name} ON {table}")
        spark.sql(f"CREATE INDEX {name} ON {table} USING {index_type.lower()} (emb) "
                  f"OPTIONS (metric = '{metric}', num_partitions = 4)")
        segments_built = 2
    ds = lance.dataset(path)
    ds.validate()
    segments = [i for i in ds.list_indices() if i["name"] == name]
    # local[2]: two tasks, two segments over disjoint fragments, all four covered.
    assert segments_built == len(segments) == 2, segments
    covered = [f for s in segments for f in s["fragment_ids"]]
    assert sorted(covered) == [0, 1, 2, 3]
    assert statement != "call" or result.version == ds.version
    assert ds.stats.index_stats(name)["index_type"] == index_type
    assert _recall(ds, name, metric, 4, index_type != "IVF_FLAT") >= least


def test_vector_index_survives_append_and_pylance_optimize(spark, vectors_table):
    table, path = vectors_table
    spark.sql(f"CALL lance.system.create_index(table => '{table.split('.', 1)[1]}', column => 'emb', "
              "index_type => 'IVF_PQ', num_partitions => 4, num_sub_vectors => 4, name => 'emb_idx')")
    _append(spark, table, 4000, 500, 2)
    ds = lance.dataset(path)
    ds.optimize.optimize_indices(index_names=["emb_idx"])
    ds = lance.dataset(path)
    ds.validate()
    covered = sorted(f for i in ds.list_indices() if i["name"] == "emb_idx" for f in i["fragment_ids"])
    assert covered == [0, 1, 2, 3, 4]
    assert _recall(ds, "emb_idx", "l2", 4, True) >= 0.9


def test_bad_vector_index_requests_are_refused_by_name(spark, vectors_table):
    table, _ = vectors_table
    call = f"CALL lance.system.create_index(table => '{table.split('.', 1)[1]}', "
    cases = [
        ("column => 'id', index_type => 'IVF_FLAT')", "LANCE_INVALID_ARGUMENT", "is not a vector column"),
        ("column => 'nosuch', index_type => 'IVF_FLAT')", "LANCE_COLUMN_NOT_FOUND", "nosuch"),
        ("column => 'emb', index_type => 'IVF_PQ', num_partitions => 2)", "LANCE_INVALID_ARGUMENT",
         "num_sub_vectors is required"),
        ("column => 'emb', index_type => 'IVF_PQ', num_partitions => 2, num_sub_vectors => 5)",
         "LANCE_INVALID_ARGUMENT", "num_sub_vectors must divide"),
        ("column => 'emb', index_type => 'IVF_FLAT', metric => 'hamming')", "LANCE_INVALID_ARGUMENT", "unknown metric 'hamming'"),
        ("column => 'emb', index_type => 'IVF_HNSW_SQ')", "LANCE_INVALID_ARGUMENT", "not 'ivf_hnsw_sq'"),
        ("column => 'emb', index_type => 'IVF_FLAT', num_partitions => 0)", "LANCE_INVALID_ARGUMENT",
         "num_partitions must be positive"),
        ("column => 'id', num_partitions => 4)", "LANCE_INVALID_ARGUMENT", "apply to vector indices"),
    ]
    for args, condition, words in cases:
        with pytest.raises(Exception) as caught:
            spark.sql(call + args).collect()
        assert condition in str(caught.value) and words in str(caught.value), (args, str(caught.value))
