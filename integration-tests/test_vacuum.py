"""Vacuum and tags from Spark, with pylance as the oracle.

The vacuum is differential: one table, with a history of Spark and pylance commits, compactions,
indices, a tag and orphans of all ages, is copied twice; pylance's cleanup_old_versions cleans one
copy and CALL lance.system.vacuum the other, with the same policy, and the files left (and the
counts reported) must be the same. Then both read each other's results, tags both ways, and real
writers race a vacuum that keeps only the newest version.
"""
import datetime
import os
import shutil
import threading
import time
import uuid

import lance
import numpy as np
import pyarrow as pa
import pytest
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException

import sparklance
from conftest import pylance_append_retrying, table_path

DAY = 24 * 3600


def _files(root):
    """Every file under `root`, as paths relative to it (the version hint aside: both tools rewrite it)."""
    out = set()
    for d, _, names in os.walk(root):
        for n in names:
            rel = os.path.relpath(os.path.join(d, n), root)
            if rel != os.path.join("_versions", "latest_version_hint.json"):
                out.add(rel)
    return out


def _age(path, seconds):
    t = time.time() - seconds
    os.utime(path, (t, t))


def _orphan(root, relative, age_seconds, data=b"orphan"):
    path = os.path.join(root, relative)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    _age(path, age_seconds)


def _build_history(spark, t, path):
    """A table with a little of everything a cleanup has to judge; returns nothing, leaves it at its latest version."""
    spark.sql(f"CREATE TABLE {t} (id BIGINT, cat STRING, v DOUBLE) "
              "TBLPROPERTIES ('enable_stable_row_ids' = 'true', 'optimize_write' = 'false')")
    for i in range(4):
        spark.sql(f"INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, concat('c', id % 4), id / 3 "
                  f"FROM range({i * 300}, {i * 300 + 300})")
    lance.dataset(path).create_scalar_index("id", "BTREE")
    spark.sql(f"UPDATE {t} SET v = -v WHERE id % 11 = 0")
    spark.sql(f"DELETE FROM {t} WHERE id % 13 = 0")
    lance.dataset(path).tags.create("after-delete", lance.dataset(path).version)
    lance.write_dataset(pa.table({"id": pa.array(range(5000, 5100), pa.int64()),
                                  "cat": ["py"] * 100, "v": [0.5] * 100}), path, mode="append")
    spark.range(250, 350).selectExpr("id", "'merged' AS cat", "CAST(id AS DOUBLE) AS v") \
        .createOrReplaceTempView("vacuum_src")
    spark.sql(f"MERGE INTO {t} t USING vacuum_src s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET cat = s.cat WHEN NOT MATCHED THEN INSERT *")
    sparklance.compact(spark, t, target_rows_per_fragment=100000)
    lance.dataset(path).create_scalar_index("cat", "BITMAP")
    spark.sql(f"DELETE FROM {t} WHERE id = 5001")
    # Debris of failed or killed jobs, old and young, and files no cleanup may touch.
    for age, tag in [(8 * DAY, "old"), (6 * DAY, "young")]:
        _orphan(path, f"data/{tag}-orphan.lance", age)
        _orphan(path, f"_deletions/0-1-{abs(hash(tag))}.arrow", age)
        _orphan(path, f"_transactions/1-{uuid.uuid4()}.txn", age)
        _orphan(path, f"_indices/{uuid.uuid4()}/page_data.lance", age)
        _orphan(path, f"_versions/.tmp-{tag}.partial", age)
    _orphan(path, "data/readme.txt", 30 * DAY)
    _orphan(path, "_versions/notes.manifest.tmp", 30 * DAY)


def _error(fn):
    with pytest.raises((PySparkException, Py4JJavaError)) as err:
        fn()
    return str(err.value)


@pytest.mark.parametrize("policy", [
    dict(older_than=0, error_if_tagged_old_versions=False),
    dict(retain_versions=4, error_if_tagged_old_versions=False),
    dict(older_than=0, delete_unverified=True, error_if_tagged_old_versions=False),
    dict(older_than=30 * DAY),
], ids=["all-old", "retain-4", "unverified", "nothing-old"])
def test_vacuum_removes_what_pylance_cleanup_removes(spark, warehouse, table_name, tmp_path, policy):
    t, path = table_name, table_path(warehouse, table_name)
    _build_history(spark, t, path)
    theirs = str(tmp_path / "theirs.lance")
    shutil.copytree(path, theirs)  # copy2: modification times kept

    py_policy = dict(policy)
    if "older_than" in py_policy:
        py_policy["older_than"] = datetime.timedelta(seconds=py_policy["older_than"])
    stats = lance.dataset(theirs).cleanup_old_versions(**py_policy)
    ours = sparklance.vacuum(spark, t, **{k: (f"{v} seconds" if k == "older_than" else v) for k, v in policy.items()})

    assert _files(path) == _files(theirs)
    assert (ours.old_versions, ours.data_files_removed, ours.deletion_files_removed, ours.transaction_files_removed,
            ours.index_files_removed, ours.bytes_removed) == \
           (stats.old_versions, stats.data_files_removed, stats.deletion_files_removed, stats.transaction_files_removed,
            stats.index_files_removed, stats.bytes_removed)
    versions = [v["version"] for v in lance.dataset(path).versions()]
    assert ours.oldest_version == versions[0] and ours.failed_deletes == 0
    # Every version left reads alike in both tools, with lineage.
    cols = ["id", "cat", "v", "_rowid", "_row_created_at_version", "_row_last_updated_at_version"]
    for v in versions:
        mine = sorted(tuple(r) for r in spark.sql(f"SELECT {', '.join(cols)} FROM {t} VERSION AS OF {v}").collect())
        tbl = lance.dataset(path, version=v).to_table(columns=cols)
        assert mine == sorted(zip(*(tbl.column(c).to_pylist() for c in cols))), f"version {v}"
    # The indices pylance built still answer for what is left.
    ds = lance.dataset(path)
    for f in ["id = 777", "id >= 1000 and id < 1100", "cat = 'merged'"]:
        assert sorted(ds.to_table(columns=["id"], filter=f).column("id").to_pylist()) == \
               sorted(ds.to_table(columns=["id"], filter=f, use_scalar_index=False).column("id").to_pylist())
    # pylance's own cleanup after ours finds nothing a kept version needs.
    lance.dataset(path).cleanup_old_versions(older_than=datetime.timedelta(0), error_if_tagged_old_versions=False)
    assert lance.dataset(path).count_rows() == spark.table(t).count()


def test_dry_run_and_our_vacuum_of_a_pylance_table(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    for i in range(5):
        lance.write_dataset(pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64())}), path,
                            mode="append" if i else "create")
    lance.dataset(path).delete("id < 5")
    lance.dataset(path).optimize.compact_files()
    before = _files(path)
    dry = sparklance.vacuum(spark, t, older_than="0 seconds", dry_run=True)
    assert dry.dry_run and _files(path) == before
    explained = lance.dataset(path).explain_cleanup_old_versions(
        older_than=datetime.timedelta(0), include_files=True, max_files=10000)
    # pylance names files by their store path, without the leading "/".
    assert sorted(dry.files) == sorted(os.path.relpath("/" + f.path, path) for f in explained.candidate_files)
    done = sparklance.vacuum(spark, t, older_than="0 seconds")
    assert sorted(done.files) == sorted(dry.files) and _files(path) == before - set(dry.files)
    assert [v["version"] for v in lance.dataset(path).versions()] == [lance.dataset(path).version]
    assert sorted(lance.dataset(path).to_table().column("id").to_pylist()) == list(range(5, 50))


def test_tags_both_ways(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT)")
    spark.sql(f"INSERT INTO {t} VALUES (1), (2)")                     # v2
    assert tuple(sparklance.create_tag(spark, t, "two", version=2)) == ("two", 2)
    spark.sql(f"DELETE FROM {t} WHERE id = 1")                        # v3
    ds = lance.dataset(path)
    assert ds.tags.list()["two"]["version"] == 2
    assert lance.dataset(path, version="two").to_table().column("id").to_pylist() == [1, 2]

    ds.tags.create("py-three", 3)
    tags = {r.tag: r.version for r in sparklance.tags(spark, t).collect()}
    assert tags == {"two": 2, "py-three": 3}
    assert [r.id for r in spark.sql(f"SELECT id FROM {t} VERSION AS OF 'py-three'").collect()] == [2]
    assert tuple(sparklance.restore(spark, t, tag="two")) == (2, 4)
    assert sorted(lance.dataset(path).to_table().column("id").to_pylist()) == [1, 2]
    # A dry run names the tags in the way instead of failing, and lists what pylance's explanation
    # lists when it keeps tagged versions.
    dry = sparklance.vacuum(spark, t, older_than="0 seconds", dry_run=True)
    assert sorted(dry.tags_in_the_way) == ["py-three (version 3)", "two (version 2)"]
    explained = lance.dataset(path).explain_cleanup_old_versions(
        older_than=datetime.timedelta(0), error_if_tagged_old_versions=False, include_files=True, max_files=10000)
    assert sorted(dry.files) == sorted(os.path.relpath("/" + f.path, path) for f in explained.candidate_files)
    with pytest.raises((Py4JJavaError, PySparkException), match="tagged version"):
        sparklance.vacuum(spark, t, older_than="0 seconds")
    # A tag pylance made keeps its version from our vacuum, and ours from pylance's cleanup.
    sparklance.vacuum(spark, t, older_than="0 seconds", error_if_tagged_old_versions=False)
    lance.dataset(path).cleanup_old_versions(older_than=datetime.timedelta(0), error_if_tagged_old_versions=False)
    assert [v["version"] for v in lance.dataset(path).versions()] == [2, 3, 4]
    assert tuple(sparklance.delete_tag(spark, t, "py-three")) == ("py-three", 3)
    assert set(lance.dataset(path).tags.list()) == {"two"}


def test_maintenance_errors_name_what_is_wrong_and_write_nothing(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT)")
    spark.sql(f"INSERT INTO {t} VALUES (1), (2)")
    before = _files(path)
    missing = t + "_missing"
    for call, named in [
        (lambda: sparklance.compact(spark, missing), missing.split(".", 1)[1].split(".")[1]),
        (lambda: sparklance.vacuum(spark, missing), missing.split(".", 1)[1].split(".")[1]),
        (lambda: sparklance.restore(spark, missing, version=1), missing.split(".", 1)[1].split(".")[1]),
        (lambda: sparklance.restore(spark, t, version=7), "version 7"),
        (lambda: sparklance.restore(spark, t, tag="nope"), "nope"),
        (lambda: sparklance.create_tag(spark, t, "x", version=7), "version 7"),
        (lambda: sparklance.create_tag(spark, t, "bad/name"), "bad/name"),
        (lambda: sparklance.delete_tag(spark, t, "nope"), "nope"),
        (lambda: sparklance.compact(spark, t, target_rows_per_fragment=0), "target_rows_per_fragment"),
        (lambda: sparklance.compact(spark, t, materialize_deletions_threshold=-1.0), "materialize_deletions_threshold"),
        (lambda: sparklance.vacuum(spark, t, older_than="a while"), "older_than"),
        (lambda: sparklance.vacuum(spark, t, retain_versions=0), "retain_versions"),
        (lambda: spark.sql(f"CALL lance.system.vacuum(table => '{t.split('.', 1)[1]}', keep => 3)").collect(), "keep"),
    ]:
        message = _error(call)
        assert named in message, (named, message[:500])
    assert _files(path) == before


def test_writers_racing_a_vacuum_lose_nothing(spark, warehouse, table_name):
    """Spark INSERTs and pylance appends race a vacuum keeping one version: every commit's rows are in the
    latest version, every version left is readable by both tools, and no file a kept version names is gone."""
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT, writer STRING)")
    stop = threading.Event()
    committed = {"spark": [], "pylance": []}
    errors = []

    def spark_writer():
        for i in range(12):
            try:
                spark.sql(f"INSERT INTO {t} SELECT id, 'spark' FROM range({i * 100}, {i * 100 + 100})")
                committed["spark"].append(i)
            except Exception as e:  # a conflict with the vacuum is a clean failure: nothing of it committed
                if "conflicts with" not in str(e) and "Concurrent commit" not in str(e):
                    errors.append(e)

    def pylance_writer():
        for i in range(12):
            if pylance_append_retrying(path, pa.table({"id": pa.array(range(10000 + i * 10, 10000 + i * 10 + 10), pa.int64()),
                                                      "writer": ["pylance"] * 10}), errors, attempts=20, pause=0.05):
                committed["pylance"].append(i)

    def vacuumer():
        while not stop.is_set():
            try:
                sparklance.vacuum(spark, t, retain_versions=1)
            except Exception as e:
                errors.append(e)
            time.sleep(0.05)

    threads = [threading.Thread(target=f) for f in (spark_writer, pylance_writer)]
    cleaner = threading.Thread(target=vacuumer)
    cleaner.start()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    stop.set()
    cleaner.join()
    assert not errors, errors
    assert committed["spark"] and committed["pylance"]

    expected = sorted([k for i in committed["spark"] for k in range(i * 100, i * 100 + 100)] +
                      [k for i in committed["pylance"] for k in range(10000 + i * 10, 10000 + i * 10 + 10)])
    assert sorted(r.id for r in spark.sql(f"SELECT id FROM {t}").collect()) == expected
    ds = lance.dataset(path)
    assert sorted(ds.to_table(columns=["id"]).column("id").to_pylist()) == expected
    _assert_every_version_whole(spark, t, path)


def _assert_every_version_whole(spark, t, path):
    """Every version left names only files that exist, and both tools count its rows alike."""
    ds = lance.dataset(path)
    for v in [v["version"] for v in ds.versions()]:
        old = lance.dataset(path, version=v)
        for fragment in old.get_fragments():
            for data_file in fragment.data_files():
                assert os.path.exists(os.path.join(path, "data", data_file.path)), (v, data_file.path)
            deletion = fragment.metadata.deletion_file
            if deletion is not None:
                assert os.path.exists(os.path.join(path, deletion.path(fragment.fragment_id))), (v, deletion)
        assert old.count_rows() == spark.sql(f"SELECT count(*) FROM {t} VERSION AS OF {v}").collect()[0][0]


def test_row_level_writers_and_compactions_racing_a_vacuum_lose_nothing(spark, warehouse, table_name):
    """DELETE, UPDATE (columns rewritten in place), MERGE and INSERT from three writers and repeated
    compactions race a vacuum keeping one version: a statement whose versions or files the vacuum
    removed under it fails, typed (a conflict, or FileGoneException naming the file), and leaves
    nothing; every landed one is in the table as a replay of them says, for Spark and pylance, and
    every version left is whole."""
    from racing_writers import CONFLICT, replay, spark_writer
    allowed = CONFLICT + ("LANCE_FILE_GONE", "FileGoneException")
    # A compaction's tasks open the version it planned on; the vacuum may have removed it by then.
    compaction_allowed = allowed + ("LANCE_VERSION_REMOVED", "VersionRemovedException")
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT NOT NULL, w INT, v BIGINT) TBLPROPERTIES ('max_rows_per_file' = '40', "
              "'rewrite_mode' = 'columns', 'isolation_level' = 'snapshot')")
    spark.sql(f"INSERT INTO {t} SELECT /*+ COALESCE(1) */ id, CAST(id % 3 AS INT), 0 FROM range(240)")
    stop = threading.Event()
    results, errors = [], []

    def background(call):
        while not stop.is_set():
            try:
                call()
            except Exception as e:  # noqa: BLE001 - a compaction may lose to the writers or the vacuum, typed
                if not any(a in str(e) for a in compaction_allowed):
                    errors.append(e)
            time.sleep(0.3)

    helpers = [threading.Thread(target=background, args=(lambda: sparklance.vacuum(spark, t, retain_versions=1),)),
               threading.Thread(target=background, args=(lambda: spark.sql(f"CALL lance.system.compact(table => '{t[6:]}', "
                                                                            "target_rows_per_fragment => 200)"),))]
    writers = [threading.Thread(target=spark_writer, args=(spark, t, k, results, 12, allowed)) for k in range(3)]
    for th in helpers + writers:
        th.start()
    for th in writers:
        th.join()
    stop.set()
    for th in helpers:
        th.join()
    assert not errors, errors
    for k in range(3):
        print(f"writer {k}: {sum(r[5] == 'ok' for r in results if r[0] == k)} of 12 landed",
              sorted({r[5] for r in results if r[0] == k and r[5] != 'ok'}))
    assert all(any(r[5] == "ok" for r in results if r[0] == k) for k in range(3))
    expected = replay(results, {i: (i % 3, 0) for i in range(240)})
    assert sorted(tuple(r) for r in spark.sql(f"SELECT id, w, v FROM {t}").collect()) == expected
    tbl = lance.dataset(path).to_table()
    assert sorted(zip(*(tbl.column(c).to_pylist() for c in ("id", "w", "v")))) == expected
    _assert_every_version_whole(spark, t, path)


def test_automatic_cleanup_from_the_table_config_as_pylance_does(spark, warehouse, table_name):
    """A table pylance created with auto_cleanup_options is cleaned after our commits exactly when and
    as far as pylance cleans it after its own: the same versions are left."""
    ours, theirs = table_path(warehouse, table_name), table_path(warehouse, table_name + "_py")
    for path in (ours, theirs):
        lance.write_dataset(pa.table({"id": pa.array([0], pa.int64())}), path,
                            auto_cleanup_options={"interval": 3, "older_than_seconds": 0})
    for i in range(1, 8):
        time.sleep(0.01)
        spark.sql(f"INSERT INTO {table_name} VALUES ({i})")
        lance.write_dataset(pa.table({"id": pa.array([i], pa.int64())}), theirs, mode="append")
        assert [v["version"] for v in lance.dataset(ours).versions()] == \
               [v["version"] for v in lance.dataset(theirs).versions()], f"after commit {i}"
    assert sorted(r.id for r in spark.table(table_name).collect()) == list(range(8))
    # And as a table property of a table we create.
    spark.sql(f"CREATE TABLE {table_name}_prop (id BIGINT) TBLPROPERTIES "
              "('lance.auto_cleanup.interval' = '2', 'lance.auto_cleanup.retain_versions' = '1')")
    for i in range(4):
        spark.sql(f"INSERT INTO {table_name}_prop VALUES ({i})")
    # Due at versions 2 and 4; each keeps the version its commit read.
    assert [v["version"] for v in lance.dataset(table_path(warehouse, table_name + "_prop")).versions()] == [3, 4, 5]
    assert "older_than" in _error(lambda: spark.sql(
        f"CREATE TABLE {table_name}_bad (id BIGINT) TBLPROPERTIES ('lance.auto_cleanup.interval' = '2', "
        "'lance.auto_cleanup.older_than' = 'soon')"))
