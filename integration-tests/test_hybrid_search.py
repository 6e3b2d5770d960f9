"""Issue 35: hybrid_search(...), vector_search and text_search fused by reciprocal rank fusion as
LanceDB's RRFReranker fuses them (score = sum over the two lists of 1 / (rank + K), rank from 1,
K = 60 by default; each side k rows; ties here by row id). The oracle is pylance's own answers on the
same version, `to_table(nearest=...)` and `to_table(full_text_query=...)` with `_rowid`, fused in
Python by that formula: ids, `_relevance_score`, and each side's `_distance` / `_score` (null where
the row came from the other side only)."""
from collections import defaultdict

import lance
import numpy as np
import pyarrow as pa
import pytest
from lance.query import FullTextOperator, MatchQuery
from pyspark.errors import PySparkException

from conftest import table_path
from test_fts_format import corpus

DIM = 8
N = 1200


def _literal(vector):
    return "array(" + ", ".join(f"CAST({float(x)!r} AS FLOAT)" for x in vector) + ")"


@pytest.fixture(scope="module")
def table(spark, warehouse):
    """`lance.db.hy`: id, text (INVERTED index), tag (no index), emb (no vector index), 3 fragments, by pylance."""
    name = "lance.db.hy"
    path = table_path(warehouse, name)
    rng = np.random.default_rng(35)
    emb = rng.standard_normal((N, DIM)).astype(np.float32)
    data = pa.table({"id": pa.array(range(N), pa.int64()), "text": pa.array(corpus(N, seed=7), pa.string()),
                     "tag": pa.array([f"t{i % 5}" for i in range(N)], pa.string()),
                     "emb": pa.FixedSizeListArray.from_arrays(pa.array(emb.ravel()), DIM)})
    lance.write_dataset(data, path, max_rows_per_file=400)
    lance.dataset(path).create_scalar_index("text", "INVERTED")
    return name, path, emb


def oracle(path, query_vector, text, k, rrf_k=60, version=None, filter=None, **nearest):
    """[(id, _distance, _score, _relevance_score)] from pylance's two answers fused by RRF, best first, ties by row id.
    Each side's list is pylance's rows in its order with ties put in row id order (as sparklance orders them).
    `filter`: a prefilter of both sides (pylance's prefilter=True), as LanceDB's hybrid query filters."""
    ds = lance.dataset(path, version=version)
    where = {"filter": filter, "prefilter": True} if filter else {}
    v = ds.to_table(columns=["id"], with_row_id=True,
                    nearest={"column": "emb", "q": np.asarray(query_vector, np.float32), "k": k, **nearest}, **where)
    # Every match, so that ties at the k-th place are cut as sparklance cuts them (row id order).
    t = ds.to_table(columns=["id"], with_row_id=True, full_text_query={"query": text, "columns": ["text"]}, limit=N * 2,
                    **where)
    vector = sorted(zip(v["_rowid"].to_pylist(), v["id"].to_pylist(), v["_distance"].to_pylist()),
                    key=lambda h: (h[2], h[0]))[:k]
    texts = sorted(zip(t["_rowid"].to_pylist(), t["id"].to_pylist(), t["_score"].to_pylist()),
                   key=lambda h: (-h[2], h[0]))[:k]
    fused, ids, distance, score = defaultdict(float), {}, {}, {}
    for hits, value in ((vector, distance), (texts, score)):
        for rank, (rowid, id_, x) in enumerate(hits, 1):
            fused[rowid] += 1 / (rank + rrf_k)
            ids[rowid], value[rowid] = id_, x
    best = sorted(fused, key=lambda r: (-np.float32(fused[r]), r))[:k]
    return [(ids[r], distance.get(r), score.get(r), float(np.float32(fused[r]))) for r in best]


def ours(spark, name, query_vector, text, k, extra=""):
    return [(r.id, r._distance, r._score, r._relevance_score) for r in spark.sql(
        f"SELECT id, _distance, _score, _relevance_score FROM hybrid_search(table => '{name}', vector_column => 'emb', "
        f"query_vector => {_literal(query_vector)}, column => 'text', query => '{text}', k => {k}, "
        f"return_score => 'all'{extra})").collect()]


def assert_same(got, want):
    assert [g[0] for g in got] == [w[0] for w in want], (got, want)
    for g, w in zip(got, want):
        for a, b in zip(g[1:], w[1:]):
            assert (a is None) == (b is None), (g, w)
            if a is not None:
                assert a == pytest.approx(b, rel=1e-4, abs=1e-5), (g, w)


QUERIES = ["quick brown fox", "running", "hello world", "café crème", "zebra"]


def test_fused_rows_and_scores_equal_pylances_answers_fused_by_rrf(spark, table):
    name, path, emb = table
    rng = np.random.default_rng(1)
    one_side = 0
    for i, text in enumerate(QUERIES):
        query = rng.standard_normal(DIM).astype(np.float32)
        for k, rrf_k in ((10, 60), (25, 5)):
            want = oracle(path, query, text, k, rrf_k)
            extra = f", rrf_k => {rrf_k}" if rrf_k != 60 else ""
            got = ours(spark, name, query, text, k, extra)
            assert_same(got, want)
            one_side += sum((g[1] is None) != (g[2] is None) for g in got)
    assert one_side > 0
    # A row both sides rank first: pylance's best match of a text, its own vector as the query.
    t = lance.dataset(path).to_table(columns=["id"], with_row_id=True, full_text_query={"query": "zebra", "columns": ["text"]})
    row = min(zip(t["_score"].to_pylist(), t["_rowid"].to_pylist(), t["id"].to_pylist()), key=lambda h: (-h[0], h[1]))[2]
    got = ours(spark, name, emb[row], "zebra", 10)
    assert_same(got, oracle(path, emb[row], "zebra", 10))
    assert got[0][0] == row and got[0][1] == pytest.approx(0, abs=1e-5) and got[0][2] is not None
    assert got[0][3] == pytest.approx(2 / 61, rel=1e-6)


def test_default_columns_a_spark_job_and_positional_arguments(spark, table):
    name, path, _ = table
    query = np.random.default_rng(2).standard_normal(DIM).astype(np.float32)
    df = spark.sql(f"SELECT * FROM hybrid_search(table => '{name}', vector_column => 'emb', "
                   f"query_vector => {_literal(query)}, column => 'text', query => 'quick brown fox', k => 12)")
    # LanceDB's default (return_score 'relevance'): the table's columns and _relevance_score only.
    assert df.columns == ["id", "text", "tag", "emb", "_relevance_score"]
    rows = df.collect()
    want = oracle(path, query, "quick brown fox", 12)
    assert [r.id for r in rows] == [w[0] for w in want]
    assert [r._relevance_score for r in rows] == pytest.approx([w[3] for w in want], rel=1e-6)
    assert all(r.tag == f"t{r.id % 5}" for r in rows)
    # Read by a Spark job (driver reads off), and by position: the same answer.
    spark.conf.set("spark.sparklance.vector_search.driver_read_rows", "0")
    try:
        by_job = spark.sql(f"SELECT id, _distance, _score, _relevance_score FROM hybrid_search('{name}', 'emb', "
                           f"{_literal(query)}, 'text', 'quick brown fox', 12, 'l2', NULL, NULL, 60, 'all')").collect()
    finally:
        spark.conf.unset("spark.sparklance.vector_search.driver_read_rows")
    assert_same([tuple(r) for r in by_job], want)


def test_a_filter_prefilters_both_sides(spark, table):
    name, path, _ = table
    rng = np.random.default_rng(5)
    for text, where in (("quick brown fox", "tag = 't2'"), ("hello world", "id % 3 <> 0 AND id < 900")):
        query = rng.standard_normal(DIM).astype(np.float32)
        literal = where.replace("'", "\\'")
        got = ours(spark, name, query, text, 10, f", filter => '{literal}'")
        want = oracle(path, query, text, 10, filter=where)
        assert_same(got, want)
        assert len(got) == 10 and any(g[1] is not None for g in got) and any(g[2] is not None for g in got)
    # operator => 'AND' reaches the text side: its rows hold every token.
    query = rng.standard_normal(DIM).astype(np.float32)
    got = ours(spark, name, query, "quick brown", 10, ", operator => 'AND'")
    t = lance.dataset(path).to_table(columns=["id"], with_row_id=True, limit=N,
                                     full_text_query=MatchQuery("quick brown", "text", operator=FullTextOperator.AND))
    anded = set(t["id"].to_pylist())
    assert all(g[0] in anded for g in got if g[2] is not None) and any(g[2] is not None for g in got)


def test_an_indexed_vector_side_and_time_travel(spark, warehouse):
    name = "lance.db.hy_tt"
    path = table_path(warehouse, name)
    rng = np.random.default_rng(9)
    emb = rng.standard_normal((900, DIM)).astype(np.float32)
    data = pa.table({"id": pa.array(range(900), pa.int64()), "text": pa.array(corpus(900, seed=3), pa.string()),
                     "emb": pa.FixedSizeListArray.from_arrays(pa.array(emb.ravel()), DIM)})
    lance.write_dataset(data, path, max_rows_per_file=300)
    lance.dataset(path).create_scalar_index("text", "INVERTED")
    lance.dataset(path).create_index("emb", "IVF_FLAT", num_partitions=4)
    indexed = lance.dataset(path).version
    spark.sql(f"DELETE FROM {name} WHERE id % 3 = 0")
    spark.sql(f"INSERT INTO {name} SELECT 5000 + id, 'hello hello world', emb FROM {name} WHERE id < 20")
    query = rng.standard_normal(DIM).astype(np.float32)
    for version in (None, indexed):
        extra = ", nprobes => 2" + (f", version => {version}" if version else "")
        got = ours(spark, name, query, "hello world", 10, extra)
        assert_same(got, oracle(path, query, "hello world", 10, version=version, nprobes=2))
        if version is None:
            assert any(g[0] >= 5000 for g in got) and all(g[0] % 3 != 0 for g in got if g[0] < 5000)
        else:
            assert all(g[0] < 5000 for g in got)


@pytest.mark.parametrize("arguments, condition, says", [
    ("column => 'tag', query => 'x'", "LANCE_INDEX_NOT_FOUND", "tag"),
    ("column => 'text'", "LANCE_INVALID_ARGUMENT", "query"),
    ("column => 'text', query => 'x', rrf_k => 0", "LANCE_INVALID_ARGUMENT", "rrf_k"),
    ("column => 'text', query => 'x', return_score => 'some'", "LANCE_INVALID_ARGUMENT", "return_score"),
    ("column => 'text', query => 'x', distance_type => 'manhattan'", "LANCE_INVALID_ARGUMENT", "distance_type"),
    ("column => 'text', query => 'x', filter => 'nope > 1'", "LANCE_INVALID_ARGUMENT", "argument 'filter' (nope > 1)"),
    ("column => 'text', query => 'x', operator => 'NOT'", "LANCE_INVALID_ARGUMENT", "argument 'operator'"),
])
def test_bad_arguments_name_what_is_wrong(spark, table, arguments, condition, says):
    with pytest.raises(PySparkException) as err:
        spark.sql(f"SELECT * FROM hybrid_search(table => '{table[0]}', vector_column => 'emb', "
                  f"query_vector => array(1, 2, 3, 4, 5, 6, 7, 8), {arguments})").collect()
    assert err.value.getCondition() == condition and says in str(err.value), str(err.value)
    if condition == "LANCE_INVALID_ARGUMENT":
        assert "hybrid_search" in str(err.value), str(err.value)
