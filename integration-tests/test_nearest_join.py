"""Issue 33 item 3, batch k-NN: `q JOIN lance.db.t APPROX NEAREST k BY ...` on a table pylance wrote and
indexed runs as index probes per query-side task (no cross join), and each query's matches are the rows
pylance's `nearest` returns for that query on the same index with the same nprobes and refine.
`EXACT NEAREST` runs as an exact search of blocks of queries (no cross join) whose answer is Spark's own
brute-force plan's."""
import lance
import numpy as np
import pyarrow as pa
import pytest
from pyspark.sql import functions as sf

from conftest import table_path

DIM = 16
K = 5
FUNCTIONS = {"l2": ("DISTANCE", "vector_l2_distance"), "cosine": ("SIMILARITY", "vector_cosine_similarity"),
             "dot": ("SIMILARITY", "vector_inner_product")}


@pytest.fixture(scope="module")
def queries(spark):
    rng = np.random.default_rng(41)
    q = rng.standard_normal((30, DIM)).astype(np.float32)
    spark.createDataFrame([(i, q[i].tolist()) for i in range(len(q))], "qid BIGINT, v ARRAY<FLOAT>") \
        .createOrReplaceTempView("nj_queries")
    return q


def _indexed_table(spark, warehouse, index_type, metric):
    """300 clustered rows written and indexed by pylance; then every 5th row deleted by Spark."""
    name = f"lance.db.nj_{index_type.lower()}_{metric}"
    path = table_path(warehouse, name)
    rng = np.random.default_rng(17)
    centres = rng.standard_normal((6, DIM)).astype(np.float32) * 3
    data = (centres[np.arange(300) % 6] + rng.standard_normal((300, DIM)) * 0.5).astype(np.float32)
    lance.write_dataset(pa.table({"id": pa.array(np.arange(300), pa.int64()),
                                  "emb": pa.FixedSizeListArray.from_arrays(pa.array(data.ravel()), DIM)}),
                        path, max_rows_per_file=100)
    extra = {"num_sub_vectors": 4} if index_type == "IVF_PQ" else {}
    lance.dataset(path).create_index("emb", index_type, num_partitions=4, metric=metric, **extra)
    spark.sql(f"DELETE FROM {name} WHERE id % 5 = 0")
    return name, path


def _plan(df):
    return df._jdf.queryExecution().executedPlan().toString()


def _by_query(rows):
    got = {}
    for r in rows:
        got.setdefault(r.qid, set()).add(r.id)
    return got


@pytest.mark.parametrize("index_type, metric, nprobes, refine", [
    ("IVF_PQ", "l2", 2, None), ("IVF_FLAT", "cosine", 1, None), ("IVF_SQ", "dot", 2, 2)])
def test_join_matches_pylance_nearest_per_query(spark, warehouse, queries, index_type, metric, nprobes, refine):
    name, path = _indexed_table(spark, warehouse, index_type, metric)
    direction, function = FUNCTIONS[metric]
    spark.conf.set("spark.sparklance.vector_search.nprobes", str(nprobes))
    if refine:
        spark.conf.set("spark.sparklance.vector_search.refine_factor", str(refine))
    try:
        df = spark.sql(f"SELECT q.qid, t.id FROM nj_queries q JOIN {name} t "
                       f"APPROX NEAREST {K} BY {direction} {function}(q.v, t.emb)")
        rows = df.collect()
        plan = _plan(df)
    finally:
        spark.conf.unset("spark.sparklance.vector_search.nprobes")
        spark.conf.unset("spark.sparklance.vector_search.refine_factor")
    assert "lance_index_probe" in plan and "BroadcastNestedLoopJoin" not in plan and "CartesianProduct" not in plan, plan
    ours = _by_query(rows)
    dataset = lance.dataset(path)
    options = {"nprobes": nprobes, **({"refine_factor": refine} if refine else {})}
    for i, q in enumerate(queries):
        theirs = dataset.to_table(columns=["id"], nearest={"column": "emb", "q": q, "k": K, "metric": metric, **options})
        expected = set(theirs.column("id").to_pylist())
        assert ours[i] == expected, (i, ours[i], expected)
        assert all(x % 5 != 0 for x in ours[i])


def test_dataframe_form_and_exact_mode(spark, warehouse, queries):
    name, path = _indexed_table(spark, warehouse, "IVF_FLAT", "l2")
    q = spark.table("nj_queries").alias("q")
    t = spark.table(name).alias("t")
    spark.conf.set("spark.sparklance.vector_search.nprobes", "4")
    try:
        df = q.nearestByJoin(t, sf.call_function("vector_l2_distance", sf.col("q.v"), sf.col("t.emb")), K,
                             "approx", "distance").select("qid", "id")
        approx = _by_query(df.collect())
        assert "lance_index_probe" in _plan(df)
        # EXACT NEAREST searches exactly; IVF_FLAT with every partition probed agrees with it.
        exact = spark.sql(f"SELECT q.qid, t.id FROM nj_queries q JOIN {name} t "
                          f"EXACT NEAREST {K} BY DISTANCE vector_l2_distance(q.v, t.emb)")
        assert "lance_index_probe" not in _plan(exact) and "ExactNearest" in _plan(exact)
        assert approx == _by_query(exact.collect())
    finally:
        spark.conf.unset("spark.sparklance.vector_search.nprobes")
    dataset = lance.dataset(path)
    for i, v in enumerate(queries):
        theirs = dataset.to_table(columns=["id"], nearest={"column": "emb", "q": v, "k": K, "nprobes": 4})
        assert approx[i] == set(theirs.column("id").to_pylist())


def _ranked(rows):
    """Per query, its matches as (id, Spark's value of the ranking function)."""
    got = {}
    for r in rows:
        got.setdefault(r.qid, []).append((r.id, r.value))
    return got


def test_exact_join_answers_as_sparks_brute_force_plan(spark, warehouse):
    """Random vectors with ties (repeated rows), two fragments, deleted rows, a NULL vector, a table-side
    filter, INNER and LEFT OUTER, the three functions: Spark's values per query equal its brute-force
    plan's (turned on with exact_join = false), and so do the rows but for which of equal values at the
    k-th place each keeps."""
    name = "lance.db.nj_exact"
    path = table_path(warehouse, name)
    rng = np.random.default_rng(5)
    data = rng.standard_normal((240, DIM)).astype(np.float32)
    data[200:220] = data[:20]  # ties
    emb = pa.FixedSizeListArray.from_arrays(pa.array(data.ravel()), DIM)
    emb = pa.array([None if i == 7 else v for i, v in enumerate(emb.to_pylist())], pa.list_(pa.float32(), DIM))
    lance.write_dataset(pa.table({"id": pa.array(np.arange(240), pa.int64()), "emb": emb}), path, max_rows_per_file=150)
    spark.sql(f"DELETE FROM {name} WHERE id % 9 = 4")
    q = np.concatenate([rng.standard_normal((12, DIM)).astype(np.float32), data[200:204]])
    spark.createDataFrame([(i, q[i].tolist()) for i in range(len(q))] + [(99, None)], "qid BIGINT, v ARRAY<FLOAT>") \
        .createOrReplaceTempView("nj_exact_q")
    for direction, function in FUNCTIONS.values():
        for join, side, k in [("JOIN", name, K), ("LEFT OUTER JOIN", f"(SELECT * FROM {name} WHERE id % 2 = 1)", 8)]:
            query = (f"SELECT q.qid, t.id, {function}(q.v, t.emb) AS value FROM nj_exact_q q {join} {side} t "
                     f"EXACT NEAREST {k} BY {direction} {function}(q.v, t.emb)")
            df = spark.sql(query)
            ours = _ranked(df.collect())
            plan = _plan(df)
            assert "ExactNearest" in plan and "BroadcastNestedLoopJoin" not in plan and "CartesianProduct" not in plan, plan
            spark.conf.set("spark.sparklance.vector_search.exact_join", "false")
            try:
                brute_df = spark.sql(query)
                theirs = _ranked(brute_df.collect())
                assert "ExactNearest" not in _plan(brute_df)
            finally:
                spark.conf.unset("spark.sparklance.vector_search.exact_join")
            assert ours.keys() == theirs.keys(), query
            best_first = (lambda v: (v is None, -v if v is not None and direction == "SIMILARITY" else v))
            for qid, matches in theirs.items():
                values = sorted((v for _, v in matches), key=best_first)
                assert sorted((v for _, v in ours[qid]), key=best_first) == values, (query, qid)
                bar = values[-1]
                assert {i for i, v in ours[qid] if v != bar} == {i for i, v in matches if v != bar}, (query, qid)
                assert all(i is None or (i % 9 != 4 and i != 7) for i, _ in ours[qid])
            if join == "JOIN":
                assert len(ours) == len(q) and 99 not in ours
            else:
                assert ours[99] == [(None, None)]
