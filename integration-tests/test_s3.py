"""Tables on S3 through S3A, against a real S3 API on loopback (moto, see s3_server.py): every kind
of statement, the random DML differential, writers of both libraries racing on one table, and
failures injected into the requests that commit."""
import json
import subprocess
import sys
import threading
from pathlib import Path

import duckdb
import lance
import pyarrow as pa
import pytest

from s3_server import Fault
from test_dml_differential import _rows_lance, run_random_dml

HERE = Path(__file__).resolve().parent


def _ident(catalog, request, suffix=""):
    name = request.node.name.replace("[", "_").replace("]", "").replace("-", "_").lower()
    return f"{catalog}.db.{name}{suffix}"


def _s3_path(ident):
    _, ns, name = ident.split(".")
    return f"s3://lakehouse/warehouse/{ns}/{name}.lance"


def _pylance(s3, ident, version=None):
    return lance.dataset(_s3_path(ident), version=version, storage_options=s3.storage_options())


def _keys(s3, prefix):
    listed = s3.client().list_objects_v2(Bucket="lakehouse", Prefix=prefix)
    return sorted(o["Key"] for o in listed.get("Contents", []))


def test_every_kind_of_statement_on_s3a(spark, s3, s3_catalog, request):
    t = _ident(s3_catalog, request)
    spark.sql(f"CREATE TABLE {t} (id BIGINT NOT NULL, v STRING) TBLPROPERTIES ('enable_stable_row_ids' = 'true')")
    spark.sql(f"INSERT INTO {t} SELECT id, concat('v', id) FROM range(100)")
    spark.sql(f"DELETE FROM {t} WHERE id < 10")
    spark.sql(f"UPDATE {t} SET v = 'updated' WHERE id % 10 = 3")
    spark.sql(f"MERGE INTO {t} USING (SELECT id, 'merged' AS v FROM range(95, 105)) s ON {t}.id = s.id "
              f"WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
    spark.sql(f"ALTER TABLE {t} ADD COLUMN w INT")
    spark.sql(f"UPDATE {t} SET w = 1 WHERE id = 50")
    want = sorted((r.id, r.v, r.w) for r in spark.table(t).collect())
    assert len(want) == 95 and sum(1 for r in want if r[1] == "merged") == 10
    got = _pylance(s3, t).to_table()
    assert sorted(zip(*(got.column(c).to_pylist() for c in ["id", "v", "w"]))) == want

    # Time travel, history, change data, tags.
    assert spark.sql(f"SELECT count(*) FROM {t} VERSION AS OF 2").first()[0] == 100
    assert [h.operation for h in spark.table(f"{t}.history").collect()][:3] == ["Overwrite", "Append", "Delete"]
    changes = spark.sql(f"SELECT _change_type, count(*) FROM {t} CHANGES FROM VERSION 4 TO VERSION 4 GROUP BY 1").collect()
    assert dict((r[0], r[1]) for r in changes) == {"delete": 9, "insert": 9}  # the UPDATE, as rows out and in
    spark.sql(f"CALL {s3_catalog}.system.create_tag(table => '{t.split('.', 1)[1]}', tag => 'before', version => 3)")
    assert spark.sql(f"SELECT count(*) FROM {t} VERSION AS OF 'before'").first()[0] == 90

    # Maintenance: compaction, restore, cleanup (nothing old enough to remove).
    inner = t.split(".", 1)[1]
    spark.sql(f"CALL {s3_catalog}.system.compact(table => '{inner}')")
    assert sorted((r.id, r.v, r.w) for r in spark.table(t).collect()) == want
    spark.sql(f"CALL {s3_catalog}.system.restore(table => '{inner}', version => 2)")
    assert spark.table(t).count() == 100 and _pylance(s3, t).count_rows() == 100
    spark.sql(f"CALL {s3_catalog}.system.vacuum(table => '{inner}')")
    versions = [v["version"] for v in _pylance(s3, t).versions()]
    assert versions == list(range(1, versions[-1] + 1))


def test_drop_keeps_files_in_place_and_rename_is_refused_on_s3a(spark, s3, s3_catalog, request):
    t = _ident(s3_catalog, request)
    inner = t.split(".", 1)[1]
    prefix = _s3_path(t).removeprefix("s3://lakehouse/") + "/"
    spark.sql(f"CREATE TABLE {t} AS SELECT id FROM range(10)")
    with pytest.raises(Exception, match="has no atomic rename"):
        spark.sql(f"ALTER TABLE {t} RENAME TO db.{inner.split('.')[1]}_renamed")
    before = _keys(s3, prefix)

    spark.sql(f"DROP TABLE {t}")
    # Nothing moved or deleted: a marker was added. The catalog no longer has the table; pylance still opens it.
    assert _keys(s3, prefix) == sorted(before + [prefix + "_versions/sparklance-dropped.json"])
    assert inner.split(".")[1] not in [r.tableName for r in spark.sql(f"SHOW TABLES IN {s3_catalog}.db").collect()]
    with pytest.raises(Exception, match="TABLE_OR_VIEW_NOT_FOUND"):
        spark.table(t).count()
    assert _pylance(s3, t).count_rows() == 10
    with pytest.raises(Exception, match="undrop_table"):
        spark.sql(f"CREATE TABLE {t} (id BIGINT)")

    assert spark.sql(f"CALL {s3_catalog}.system.undrop_table(table => '{inner}')").first().version == 1
    assert spark.table(t).count() == 10 and _keys(s3, prefix) == before
    spark.sql(f"DROP TABLE {t}")
    # The trash's retention applies to tables dropped in place too: young ones stay.
    assert spark.sql(f"CALL {s3_catalog}.system.empty_trash()").first().deleted == []
    assert spark.sql(f"CALL {s3_catalog}.system.undrop_table(table => '{inner}')").first().version == 1
    spark.sql(f"DROP TABLE {t}")
    spark.sql(f"CALL {s3_catalog}.system.purge_dropped_table(table => '{inner}')")
    assert _keys(s3, prefix) == []
    spark.sql(f"CREATE TABLE {t} AS SELECT id FROM range(3)")
    assert spark.table(t).count() == 3
    spark.sql(f"DROP TABLE {t} PURGE")
    assert _keys(s3, prefix) == []


def test_random_dml_on_s3a_matches_duckdb_and_pylance(spark, s3, s3_catalog, request):
    t = _ident(s3_catalog, request)
    run_random_dml(spark, t, lambda: _rows_lance(_s3_path(t), s3.storage_options()), seed=3, mode="columns",
                   statements=20)


def test_deleted_rows_and_commits_cost_few_requests(spark, s3, s3_catalog, request):
    t = _ident(s3_catalog, request)
    fragments = 4
    spark.sql(f"CREATE TABLE {t} TBLPROPERTIES ('max_rows_per_file' = '50000') AS SELECT id, CAST(id % 1000 AS INT) AS k, "
              f"concat('s', id) AS s, CAST(id AS DOUBLE) / 3 AS d FROM range({fragments * 50000})")
    scan = f"SELECT sum(id), sum(k), max(s), sum(d) FROM {t}"

    def requests(statement):
        s3.reset_counts()
        result = spark.sql(statement).collect()
        counts, log = s3.snapshot_counts(), list(s3.log)
        return result, counts, log

    _, clean, clean_log = requests(scan)
    _, _, deleting = requests(f"DELETE FROM {t} WHERE id % 100 = 37")
    # Rows deleted all over every fragment: the scan reads around them in as few requests as
    # before, plus one for each fragment's deletion file (read per batch of rows, the chunks
    # holding the live rows were six times as many GETs).
    got, spread, _ = requests(scan)
    assert spread["GET"] <= clean["GET"] + fragments, (clean, spread)
    expected = duckdb.sql("SELECT sum(id), sum(id % 1000), max('s' || id), sum(id::DOUBLE / 3) FROM range(200000) t(id) "
                          "WHERE id % 100 <> 37").fetchall()[0]
    assert got[0][:3] == expected[:3] and got[0][3] == pytest.approx(expected[3])
    # Data files and deletion files never change: the process keeps their metadata and deleted
    # rows (storage.md), so scanning again sends only the GETs of pages.
    again, repeated, repeated_log = requests(scan)
    assert again == got
    assert repeated.get("HEAD", 0) == 0 and not [key for _, key in repeated_log if "/_deletions/" in key], repeated_log
    data_gets = lambda log: len([key for kind, key in log if kind == "GET" and key.endswith(".lance")])
    assert data_gets(repeated_log) <= data_gets(clean_log) - fragments, (clean_log, repeated_log)  # no file's tail
    # A commit writes files under new names, whose parents need no directory markers (S3A's mkdirs
    # is a HEAD, two LISTs and a PUT): none for the new fragment's zone map segment either.
    _, _, appending = requests(f"INSERT INTO {t} SELECT id, 0, 'new', 0.0 FROM range(200000, 200100)")
    for kind, key in deleting + appending:
        assert not (kind == "PUT" and key.endswith("/")), (kind, key)
        assert not (kind == "HEAD" and "/_indices/" in key), (kind, key)
    assert any(kind == "PUT" and "/_indices/" in key for kind, key in appending)
    # The manifest is read once, to open the table: the work after the commit (auto compaction,
    # zone map folding, cleanup) starts from the version the commit wrote, while it is the latest.
    # The versions are listed three times: to open the table, before the commit's put and after it;
    # the work after the commit starts from that last listing, which found no newer version.
    for log in [deleting, appending]:
        assert [key for kind, key in log if kind == "GET" and key.endswith(".manifest")] == \
            [key for kind, key in log if key.endswith(".manifest")][:1], log
        assert len([kind for kind, _ in log if kind == "LIST"]) == 3, log


def test_scans_fetching_pages_ahead_read_every_row_once(spark, s3, s3_catalog, request):
    """A scan on S3 fetches each column's first page in the background at once, and each next page
    as it reaches the one before (storage.md): columns of several pages, read whole and in splits
    that start and end inside pages, give the rows DuckDB computes."""
    t = _ident(s3_catalog, request)
    spark.sql(f"CREATE TABLE {t} TBLPROPERTIES ('max_rows_per_file' = '150000') AS SELECT id, "
              f"rpad(concat('v', id), 60, 'x') AS s, CAST(id AS DOUBLE) / 4 AS d FROM range(300000)")
    scan = f"SELECT count(*), sum(id), max(s), min(s), sum(length(s)), sum(d) FROM {t} WHERE id % 7 <> 3"
    expected = duckdb.sql("SELECT count(*), sum(id), max(rpad('v' || id, 60, 'x')), min(rpad('v' || id, 60, 'x')), 60 * count(*), "
                          "sum(id::DOUBLE / 4) FROM range(300000) t(id) WHERE id % 7 <> 3").fetchall()[0]
    for split in ["128m", "2m"]:
        spark.conf.set("spark.sql.files.maxPartitionBytes", split)
        try:
            got = spark.sql(scan).collect()[0]
        finally:
            spark.conf.unset("spark.sql.files.maxPartitionBytes")
        assert tuple(got[:5]) == tuple(expected[:5]) and got[5] == pytest.approx(expected[5]), split


def test_lost_response_of_a_landed_commit_counts_once(spark, s3, s3_catalog, request):
    t = _ident(s3_catalog, request)
    spark.sql(f"CREATE TABLE {t} (id BIGINT, v STRING)")
    # The manifest PUT lands, and its answer is lost: S3A retries (412: it exists now) or gives up;
    # either way the commit finds its own transaction in the new version and succeeds once.
    lost = s3.inject(Fault("PUT", r"_versions/\d+\.manifest$", after=True, times=1))
    try:
        spark.sql(f"INSERT INTO {t} VALUES (1, 'a'), (2, 'b')")
    finally:
        s3.clear_faults()
    assert lost.hits == 1
    lost = s3.inject(Fault("PUT", r"_versions/\d+\.manifest$", after=True, times=3))
    try:
        spark.sql(f"UPDATE {t} SET v = 'c' WHERE id = 2")
    finally:
        s3.clear_faults()
    assert lost.hits >= 1
    assert sorted(tuple(r) for r in spark.table(t).collect()) == [(1, "a"), (2, "c")]
    ds = _pylance(s3, t)
    assert [v["version"] for v in ds.versions()] == [1, 2, 3]
    assert sorted(zip(ds.to_table().column("id").to_pylist(), ds.to_table().column("v").to_pylist())) == [(1, "a"), (2, "c")]


def test_throttling_is_retried_and_persistent_failures_change_nothing(spark, s3, s3_catalog, request):
    t = _ident(s3_catalog, request)
    spark.sql(f"CREATE TABLE {t} AS SELECT id FROM range(5)")
    slow = s3.inject(Fault("PUT", r"/data/.*\.lance$", status=503, code="SlowDown", times=1))
    try:
        spark.sql(f"INSERT INTO {t} SELECT id FROM range(5, 10)")
    finally:
        s3.clear_faults()
    assert slow.hits == 1 and spark.table(t).count() == 10

    prefix = _s3_path(t).removeprefix("s3://lakehouse/") + "/"
    before = _keys(s3, prefix)
    s3.inject(Fault("PUT", r"_versions/\d+\.manifest$", status=500, times=1000))
    try:
        with pytest.raises(Exception) as failure:
            spark.sql(f"DELETE FROM {t} WHERE id < 3")
    finally:
        s3.clear_faults()
    # A 500 may come after S3 stored the object, so the outcome is unknown and every file stays.
    message = str(failure.value)
    assert failure.value.getCondition() == "LANCE_COMMIT_STATE_UNKNOWN" and failure.value.getSqlState() == "40003"
    assert "may or may not have landed" in message and "500" in message, message
    assert spark.table(t).count() == 10 and _pylance(s3, t).count_rows() == 10
    after = _keys(s3, prefix)
    assert set(before) <= set(after), "a committed file was deleted"
    assert [v["version"] for v in _pylance(s3, t).versions()] == [1, 2]  # CTAS, INSERT; the DELETE never landed


def test_spark_and_pylance_writers_race_on_one_s3_table(spark, s3, s3_catalog, request):
    """Two Spark threads and a pylance process, each on its own ids, 30+ operations each."""
    t = _ident(s3_catalog, request)
    spark.sql(f"CREATE TABLE {t} (id BIGINT NOT NULL, v BIGINT) TBLPROPERTIES ('max_rows_per_file' = '50')")
    ops = 20
    results, errors = {}, []

    def spark_writer(k):
        base, model, landed = 1_000_000 * (k + 1), {}, []
        try:
            for i in range(ops):
                kind = ["append", "update", "delete", "merge"][i % 4]
                ids = [base + i * 10 + j for j in range(10)]
                try:
                    if kind == "append":
                        spark.sql(f"INSERT INTO {t} VALUES " + ", ".join(f"({x}, 0)" for x in ids))
                        model.update({x: 0 for x in ids})
                    elif kind == "update":
                        spark.sql(f"UPDATE {t} SET v = v + 1 WHERE id >= {base} AND id < {base + 1_000_000} AND id % 3 = 0")
                        model.update({x: y + 1 for x, y in model.items() if x % 3 == 0})
                    elif kind == "delete":
                        spark.sql(f"DELETE FROM {t} WHERE id >= {base} AND id < {base + 1_000_000} AND id % 7 = {i % 7}")
                        model = {x: y for x, y in model.items() if x % 7 != i % 7}
                    else:
                        # Half the ids of the append three operations back, half never written.
                        source = [base + (i - 3) * 10 + j for j in range(5, 15)]
                        spark.sql(f"MERGE INTO {t} USING (SELECT * FROM VALUES "
                                  + ", ".join(f"({x}, 100)" for x in source) + " AS s(id, v)) s ON "
                                  f"{t}.id = s.id WHEN MATCHED THEN UPDATE SET v = {t}.v + s.v WHEN NOT MATCHED THEN INSERT *")
                        for x in source:
                            model[x] = model.get(x, 0) + 100 if x in model else 100
                    landed.append(kind)
                except Exception as e:  # a conflict the commit could not reconcile: it must leave nothing
                    if "conflicts with" not in str(e):
                        raise
            results[k] = (base, model, landed)
        except Exception as e:
            errors.append(e)

    child = subprocess.Popen([sys.executable, str(HERE / "s3_pylance_writer.py"), _s3_path(t),
                              json.dumps(s3.storage_options()), str(ops)], stdout=subprocess.PIPE, text=True)
    threads = [threading.Thread(target=spark_writer, args=(k,)) for k in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    out, _ = child.communicate(timeout=600)
    assert not errors, errors
    assert child.returncode == 0, out
    pylance_result = json.loads(out.strip().splitlines()[-1])
    results[2] = (pylance_result["base"], {int(k): v for k, v in pylance_result["model"].items()}, pylance_result["landed"])

    rows = {r.id: r.v for r in spark.table(t).collect()}
    ds = _pylance(s3, t)
    tbl = ds.to_table()
    assert dict(zip(tbl.column("id").to_pylist(), tbl.column("v").to_pylist())) == rows
    for k, (base, model, landed) in results.items():
        mine = {x: y for x, y in rows.items() if base <= x < base + 1_000_000}
        assert mine == model, f"writer {k}"
        assert len(landed) >= ops * 3 // 4, f"writer {k} landed only {landed}"
    versions = [v["version"] for v in ds.versions()]
    assert versions == list(range(1, versions[-1] + 1))
    assert versions[-1] <= 1 + sum(len(r[2]) for r in results.values())


def test_the_s3_demo_runs_with_settings_passed_once_to_executor_jvms(s3):
    """dev/s3-demo.py, as docs/storage.md runs it, on two executor JVMs: configure(hadoop=...) reaches them."""
    demo = HERE.parent / "dev" / "s3-demo.py"
    run = subprocess.run([sys.executable, str(demo), "--endpoint", s3.endpoint, "--master", "local-cluster[2,1,1024]"],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-4000:]
    assert "pylance reads version 5: 950 rows" in run.stdout, run.stdout
    for line in ["|  even|425|18020.0|", "|merged|100| 6560.0|", "|   odd|425|36125.0|"]:
        assert line in run.stdout, run.stdout
