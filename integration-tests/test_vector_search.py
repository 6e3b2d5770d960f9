"""Issue 33 item 3: vector_search(...), the table function of nearest-neighbour search, against an
exact numpy search of the same rows (squared L2, 1 - cosine, 1 - dot; ties by row id), with a
prefilter, on an older version, and with pylance's own flat `nearest` on the table we wrote."""
import re
import time
import uuid

import lance
import numpy as np
import pytest
from pyspark.errors import PySparkException

from conftest import table_path
from sparklance_testing import vector_distances

DIM = 8


@pytest.fixture(scope="module")
def vectors(spark, warehouse):
    """lance.db.vs: 600 rows of random vectors in 3 categories, written in two appends (versions 2 and 3)."""
    name = "lance.db.vs"
    spark.sql(f"CREATE TABLE {name} (id BIGINT, cat INT, emb ARRAY<FLOAT>) "
              f"TBLPROPERTIES ('emb.arrow.fixed-size-list.size' = '{DIM}')")
    rng = np.random.default_rng(33)
    data = rng.standard_normal((600, DIM)).astype(np.float32)
    for lo, hi in ((0, 400), (400, 600)):
        rows = [(i, i % 3, data[i].tolist()) for i in range(lo, hi)]
        spark.createDataFrame(rows, f"id BIGINT, cat INT, emb ARRAY<FLOAT>").writeTo(name).append()
    return name, data


def _exact(data, query, metric, k, keep=None):
    """The ids of the k nearest rows (and their distances) by numpy, in pylance's units."""
    d = vector_distances(data, query, metric)
    ids = [i for i in np.lexsort((np.arange(len(d)), d)) if keep is None or keep(i)][:k]
    return ids, d[ids]


def _literal(query):
    return "array(" + ", ".join(f"CAST({v!r} AS FLOAT)" for v in query) + ")"


@pytest.mark.parametrize("metric", ["l2", "cosine", "dot"])
def test_nearest_rows_equal_an_exact_search(spark, vectors, metric):
    name, data = vectors
    rng = np.random.default_rng(7)
    for _ in range(3):
        query = rng.standard_normal(DIM).astype(np.float32).tolist()
        search = spark.sql(f"SELECT id, cat, _distance FROM vector_search(table => '{name}', vector_column => 'emb', "
                           f"query_vector => {_literal(query)}, k => 7, distance_type => '{metric}')")
        assert "TakeOrderedAndProject" in search._jdf.queryExecution().executedPlan().toString()
        got = search.collect()
        ids, dist = _exact(data, query, metric, 7)
        assert [r.id for r in got] == ids
        assert [r.cat for r in got] == [i % 3 for i in ids]
        assert np.allclose([r._distance for r in got], dist, rtol=1e-4, atol=1e-4)


def test_filter_is_a_prefilter_and_positional_arguments_work(spark, vectors):
    name, data = vectors
    query = [0.5] * DIM
    got = spark.sql(f"SELECT id FROM vector_search('{name}', 'emb', {_literal(query)}, 5, 'l2', 'cat = 2 AND id > 100')").collect()
    ids, _ = _exact(data, query, "l2", 5, keep=lambda i: i % 3 == 2 and i > 100)
    assert [r.id for r in got] == ids and len(ids) == 5


def test_an_older_version_is_searched_as_it_was(spark, vectors):
    name, data = vectors
    query = [-0.25] * DIM
    got = spark.sql(f"SELECT id FROM vector_search(table => '{name}', vector_column => 'emb', "
                    f"query_vector => {_literal(query)}, k => 4, version => 2)").collect()
    ids, _ = _exact(data[:400], query, "l2", 4)
    assert [r.id for r in got] == ids


def test_pylance_flat_search_agrees(spark, warehouse, vectors):
    name, _ = vectors
    query = np.linspace(-1, 1, DIM).astype(np.float32)
    ours = spark.sql(f"SELECT id, _distance FROM vector_search('{name}', 'emb', {_literal(query.tolist())}, 6)").collect()
    theirs = lance.dataset(table_path(warehouse, name)).to_table(
        columns=["id"], nearest={"column": "emb", "q": query, "k": 6, "use_index": False}).to_pylist()
    assert [r.id for r in ours] == [t["id"] for t in theirs]
    assert np.allclose([r._distance for r in ours], [t["_distance"] for t in theirs], rtol=1e-5)


@pytest.mark.parametrize("call, says", [
    ("vector_search(table => '{t}', vector_column => 'emb', query_vector => array(1.0), kk => 3)", "no argument 'kk'"),
    ("vector_search(table => '{t}', vector_column => 'cat', query_vector => array(1.0))", "not a vector"),
    ("vector_search(table => '{t}', vector_column => 'emb', query_vector => array(1.0), distance_type => 'manhattan')",
     "'distance_type' must be one of l2, cosine, dot"),
    ("vector_search(table => '{t}', vector_column => 'emb', query_vector => array(1.0), k => 0)", "positive integer"),
    ("vector_search(table => '{t}', vector_column => 'emb')", "needs the arguments query_vector"),
    ("vector_search(table => '{t}', vector_column => 'emb', query_vector => array(1.0, 2.0))", "the query vector has 2"),
])
def test_bad_arguments_name_what_is_wrong(spark, vectors, call, says):
    with pytest.raises(PySparkException) as err:
        spark.sql("SELECT * FROM " + call.format(t=vectors[0])).collect()
    assert err.value.getCondition() == "LANCE_INVALID_ARGUMENT" and says in str(err.value), str(err.value)


def _reads_by_row_id(df):
    """Whether the plan reads the rows an index search named (`_rowid IN (...)`), not every row."""
    return re.search(r"_rowid#\d+L IN \(", df._jdf.queryExecution().optimizedPlan().toString()) is not None


def _pylance_nearest(path, query, **options):
    """(id, _distance) of pylance's `nearest` on the table at `path`."""
    rows = lance.dataset(path).to_table(columns=["id"], nearest={"column": "emb", "q": np.asarray(query, np.float32), **options})
    return [(r["id"], r["_distance"]) for r in rows.to_pylist()]


@pytest.mark.parametrize("index_type, metric", [("IVF_FLAT", "l2"), ("IVF_PQ", "cosine"), ("IVF_SQ", "dot")])
def test_an_index_pylance_built_answers_as_pylance(spark, warehouse, index_type, metric):
    """A table Spark wrote, indexed by pylance, then appended to and deleted from by Spark: the index
    covers the first fragments only, the rest is searched exactly, deleted rows never come back."""
    name = f"lance.db.vs_{index_type.lower()}_{metric}"
    path = table_path(warehouse, name)
    spark.sql(f"CREATE TABLE {name} (id BIGINT, emb ARRAY<FLOAT>) TBLPROPERTIES ('emb.arrow.fixed-size-list.size' = '{DIM}')")
    rng = np.random.default_rng(5)
    data = rng.standard_normal((700, DIM)).astype(np.float32)
    spark.createDataFrame([(i, data[i].tolist()) for i in range(600)], "id BIGINT, emb ARRAY<FLOAT>").writeTo(name).append()
    extra = {"num_sub_vectors": 4} if index_type == "IVF_PQ" else {}
    lance.dataset(path).create_index("emb", index_type, num_partitions=4, metric=metric, **extra)
    spark.createDataFrame([(i, data[i].tolist()) for i in range(600, 700)], "id BIGINT, emb ARRAY<FLOAT>").writeTo(name).append()
    spark.sql(f"DELETE FROM {name} WHERE id % 7 = 0")
    for seed in range(3):
        query = np.random.default_rng(100 + seed).standard_normal(DIM).astype(np.float32)
        search = spark.sql(f"SELECT id, _distance FROM vector_search(table => '{name}', vector_column => 'emb', "
                           f"query_vector => {_literal(query.tolist())}, k => 8, distance_type => '{metric}', nprobes => 2, "
                           f"refine_factor => 2)")
        # The index answered: its rows are read by id, not ranked by a top-k over the table.
        assert "TakeOrderedAndProject" not in search._jdf.queryExecution().executedPlan().toString()
        ours = search.collect()
        theirs = _pylance_nearest(path, query, k=8, metric=metric, nprobes=2, refine_factor=2)
        assert [r.id for r in ours] == [t[0] for t in theirs]
        assert np.allclose([r._distance for r in ours], [t[1] for t in theirs], rtol=1e-4, atol=1e-5)
        assert all(r.id % 7 != 0 for r in ours)
        # ORDER BY Spark's own vector function LIMIT k plans the same index search.
        function, order = {"l2": ("vector_l2_distance", "ASC"), "cosine": ("vector_cosine_similarity", "DESC"),
                           "dot": ("vector_inner_product", "DESC")}[metric]
        spark.conf.set("spark.sparklance.vector_search.nprobes", "2")
        spark.conf.set("spark.sparklance.vector_search.refine_factor", "2")
        try:
            ordered = spark.sql(f"SELECT id FROM {name} ORDER BY {function}(emb, {_literal(query.tolist())}) {order} LIMIT 8")
            assert _reads_by_row_id(ordered)
            assert [r.id for r in ordered.collect()] == [t[0] for t in theirs]
        finally:
            spark.conf.unset("spark.sparklance.vector_search.nprobes")
            spark.conf.unset("spark.sparklance.vector_search.refine_factor")
    # With every partition probed, IVF_FLAT is exact; a prefilter keeps the k nearest that pass.
    if index_type == "IVF_FLAT":
        query = [0.2] * DIM
        live = [i for i in range(700) if i % 7 != 0]
        got = spark.sql(f"SELECT id FROM vector_search(table => '{name}', vector_column => 'emb', query_vector => "
                        f"{_literal(query)}, k => 5, nprobes => 4, filter => 'id % 2 = 1')").collect()
        ids, _ = _exact(data, query, "l2", 5, keep=lambda i: i in live and i % 2 == 1)
        assert [r.id for r in got] == ids
        spark.conf.set("spark.sparklance.vector_search.nprobes", "4")
        try:
            ordered = spark.sql(f"SELECT id, vector_l2_distance(emb, {_literal(query)}) AS d FROM {name} WHERE id % 2 = 1 "
                                "ORDER BY d LIMIT 5")
            assert _reads_by_row_id(ordered)
            assert [r.id for r in ordered.collect()] == ids
        finally:
            spark.conf.unset("spark.sparklance.vector_search.nprobes")


def _with_jobs_counted(spark, action):
    """action()'s result and how many Spark jobs it ran (in this thread, its job group)."""
    sc = spark.sparkContext
    group = f"vector-search-jobs-{uuid.uuid4().hex}"  # not id(action): ids are reused, and groups keep their jobs
    sc.setJobGroup(group, "counting the jobs of a vector search")
    try:
        result = action()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    # The status tracker learns of jobs from the listener bus, in order: once a job started after
    # the action shows, every job of the action shows.
    marker = group + "-marker"
    sc.setJobGroup(marker, "the jobs before are all listed")
    try:
        sc.parallelize([1], 1).count()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
    while not sc.statusTracker().getJobIdsForGroup(marker):
        time.sleep(0.01)
    return result, len(sc.statusTracker().getJobIdsForGroup(group))


def _tagged_table_indexed(spark, warehouse, name, seed, count, first):
    """Table `name` (id, tag = 't<id>', emb) of `count` random vectors, appended by Spark as rows
    0..first-1 (version 2) and the rest (version 3), then IVF_PQ-indexed by pylance (version 4).
    Returns its path and the vectors."""
    path = table_path(warehouse, name)
    spark.sql(f"CREATE TABLE {name} (id BIGINT, tag STRING, emb ARRAY<FLOAT>) "
              f"TBLPROPERTIES ('emb.arrow.fixed-size-list.size' = '{DIM}')")
    data = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    rows = [(i, f"t{i}", data[i].tolist()) for i in range(count)]
    for lo, hi in ((0, first), (first, count)):
        spark.createDataFrame(rows[lo:hi], "id BIGINT, tag STRING, emb ARRAY<FLOAT>").writeTo(name).append()
    lance.dataset(path).create_index("emb", "IVF_PQ", num_partitions=4, num_sub_vectors=4)
    return path, data


def test_a_small_answer_is_read_on_the_driver_as_a_spark_job_reads_it(spark, warehouse):
    """The few rows an index search names are read on the driver, no Spark job run: the same rows
    and distances as the Spark job reading them by row id, and as pylance's `nearest`. A commit
    after a search (an append, a delete) is seen by the next search, though the opened index is kept;
    the version before is still searched as it was."""
    name = "lance.db.vs_driver"
    path, data = _tagged_table_indexed(spark, warehouse, name, 11, 500, 300)
    query = np.random.default_rng(12).standard_normal(DIM).astype(np.float32)

    def search(extra=""):
        return (f"SELECT * FROM vector_search(table => '{name}', vector_column => 'emb', query_vector => "
                f"{_literal(query.tolist())}, k => 6, nprobes => 2, refine_factor => 2{extra})")

    def distributed(sql):
        spark.conf.set("spark.sparklance.vector_search.driver_read_rows", "0")
        try:
            return _with_jobs_counted(spark, lambda: spark.sql(sql).collect())
        finally:
            spark.conf.unset("spark.sparklance.vector_search.driver_read_rows")

    def check(sql, filtered=False):
        local, jobs = _with_jobs_counted(spark, lambda: spark.sql(sql).collect())
        if not filtered:  # a prefilter finds the rows passing it with a job
            assert jobs == 0
        assert "LocalTableScan" in spark.sql(sql)._jdf.queryExecution().executedPlan().toString()
        by_job, jobs = distributed(sql)
        assert jobs > 0
        assert local == by_job and len(local) == 6
        assert [r.tag for r in local] == [f"t{r.id}" for r in local]
        assert [r.emb for r in local] == [data[r.id].tolist() for r in local]
        return local

    first = check(search())
    theirs = _pylance_nearest(path, query, k=6, nprobes=2, refine_factor=2)
    assert [(r.id, r._distance) for r in first] == [(i, pytest.approx(d, rel=1e-5, abs=1e-6)) for i, d in theirs]
    check(search(", filter => 'id % 2 = 0'"), filtered=True)
    # A commit: rows at the query (found exactly: no index covers them) and the nearest row deleted.
    spark.createDataFrame([(1000 + i, f"t{1000 + i}", query.tolist()) for i in range(2)],
                          "id BIGINT, tag STRING, emb ARRAY<FLOAT>").writeTo(name).append()  # version 5
    spark.sql(f"DELETE FROM {name} WHERE id = {first[0].id}")  # version 6
    data = np.vstack([data, np.zeros((600, DIM), np.float32)])
    data[1000] = data[1001] = query
    after = check(search())
    assert [r.id for r in after[:2]] == [1000, 1001] and first[0].id not in [r.id for r in after]
    theirs = _pylance_nearest(path, query, k=6, nprobes=2, refine_factor=2)
    assert [r.id for r in after] == [i for i, _ in theirs]
    assert [r.id for r in check(search(", version => 4"))] == [r.id for r in first]


def test_the_call_answers_as_the_table_function_with_no_job(spark, warehouse):
    """sparklance.vector_search, the query vector passed as a value: the table function's rows and
    distances, which are pylance's `nearest` on the same index, with no Spark job for a small k;
    filter, version, columns, nprobes and refine_factor as the table function takes them."""
    import array
    import sparklance

    name = "lance.db.vs_call"
    path, data = _tagged_table_indexed(spark, warehouse, name, 21, 400, 250)
    query = np.random.default_rng(22).standard_normal(DIM).astype(np.float32)

    def tvf(extra=""):
        return spark.sql(f"SELECT * FROM vector_search(table => '{name}', vector_column => 'emb', query_vector => "
                         f"{_literal(query.tolist())}, k => 6{extra})").collect()

    got, jobs = _with_jobs_counted(spark, lambda: sparklance.vector_search(
        spark, name, "emb", query, k=6, nprobes=2, refine_factor=2).collect())
    assert jobs == 0
    assert got == tvf(", nprobes => 2, refine_factor => 2") and len(got) == 6
    assert got[0].__fields__ == ["id", "tag", "emb", "_distance"]
    theirs = _pylance_nearest(path, query, k=6, nprobes=2, refine_factor=2)
    assert [(r.id, r._distance) for r in got] == [(i, pytest.approx(d, rel=1e-5, abs=1e-6)) for i, d in theirs]
    # The query as a list or an array.array, and fewer columns: the same answer.
    for q in (query.tolist(), array.array("f", query.tolist())):
        assert sparklance.vector_search(spark, name, "emb", q, k=6, nprobes=2, refine_factor=2,
                                        columns=["id"]).collect() == [(r.id, r._distance) for r in got]
    assert "LocalTableScan" in sparklance.vector_search(spark, name, "emb", query)._jdf.queryExecution().executedPlan().toString()
    # Spark Connect's way, the table function with the vector as SQL literals: the same answer.
    assert sparklance._vector_search_sql(spark, name, "emb", sparklance._float32_vector(query), 6, {
        "nprobes": 2, "refine_factor": 2, "columns": ["id"]}).collect() == [(r.id, r._distance) for r in got]
    # Default options are pylance's; a prefilter; an older version (no index then: an exact search).
    assert [r.id for r in sparklance.vector_search(spark, name, "emb", query, columns=["id"]).collect()] == \
        [i for i, _ in _pylance_nearest(path, query, k=10)]
    assert sparklance.vector_search(spark, name, "emb", query, k=6, filter="id % 2 = 0").collect() == \
        tvf(", filter => 'id % 2 = 0'")
    old = sparklance.vector_search(spark, name, "emb", query, k=5, version=2, distance_type="cosine", columns=["id"]).collect()
    assert [r.id for r in old] == _exact(data[:250], query, "cosine", 5)[0]
    assert old == [(r.id, r._distance) for r in tvf(", version => 2, distance_type => 'cosine'")][:5]


@pytest.mark.parametrize("arguments, says", [
    ({"query_vector": [1.0, 2.0]}, "column 'emb' of lance.db.vs holds vectors of 8 items; the query vector has 2"),
    ({"vector_column": "cat"}, "not a vector"),
    ({"distance_type": "manhattan"}, "'distance_type' must be one of l2, cosine, dot"),
    ({"k": 0}, "'k' must be a positive integer"),
    ({"columns": ["id", "nope"]}, "lance.db.vs has no column 'nope'"),
    ({"table": "lance.db.no_such_table"}, None),
])
def test_the_call_refuses_bad_arguments_as_the_table_function(spark, vectors, arguments, says):
    import sparklance
    call = dict({"table": vectors[0], "vector_column": "emb", "query_vector": [0.5] * DIM}, **arguments)
    with pytest.raises(PySparkException) as err:
        sparklance.vector_search(spark, call.pop("table"), call.pop("vector_column"), call.pop("query_vector"), **call)
    if says is None:
        assert err.value.getCondition() == "TABLE_OR_VIEW_NOT_FOUND", str(err.value)
    else:
        assert err.value.getCondition() == "LANCE_INVALID_ARGUMENT" and says in str(err.value), str(err.value)


def test_the_call_refuses_what_is_not_one_vector(spark, vectors):
    import sparklance
    with pytest.raises(ValueError, match="one vector"):
        sparklance.vector_search(spark, vectors[0], "emb", np.zeros((2, DIM), np.float32))
    with pytest.raises(TypeError, match="nprobes must be an integer"):
        sparklance.vector_search(spark, vectors[0], "emb", [0.5] * DIM, nprobes=2.5)
