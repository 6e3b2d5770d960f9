"""Shallow clones and branches pylance 14 makes (feature flag 16: files under other base paths;
`_refs/branches/<name>.json` and `tree/<name>/`): Spark reads and changes them, pylance reads the
result back and validates it, and the source's files stay as they were."""
from datetime import timedelta

import lance
import pyarrow as pa
import pytest

import sparklance

from conftest import table_path


def _rows(start, n):
    ids = list(range(start, start + n))
    return pa.table({"id": pa.array(ids, pa.int64()), "cat": pa.array([f"c{i % 3}" for i in ids]),
                     "x": pa.array([i * 10 for i in ids], pa.int64())})


def _source(path):
    """Two fragments, a deletion file and a BTREE index: every kind of file a clone leaves at its source."""
    lance.write_dataset(_rows(0, 20), path, max_rows_per_file=10)
    ds = lance.dataset(path)
    ds.delete("id = 3")
    ds.create_scalar_index("x", "BTREE")
    return lance.dataset(path)


def _ids(ds, **kw):
    return sorted(ds.to_table(columns=["id"], **kw)["id"].to_pylist())


def _spark_ids(spark, t, where="true"):
    return sorted(r[0] for r in spark.sql(f"SELECT id FROM {t} WHERE {where}").collect())


def _files(path):
    import os
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, _, fs in os.walk(path) for f in fs)


def test_shallow_clone_reads_and_changes(spark, warehouse, table_name, tmp_path):
    t, path = table_name, table_path(warehouse, table_name)
    source_path = str(tmp_path / "source.lance")
    source = _source(source_path)
    source.tags.create("rel", source.version)
    source_files = _files(source_path)
    source.shallow_clone(path, "rel")
    want = _ids(source)
    assert _spark_ids(spark, t) == want
    # The filter is answered through the source's index (data skipping) and by a scan alike.
    assert _spark_ids(spark, t, "x BETWEEN 40 AND 120") == [i for i in want if 40 <= i * 10 <= 120]
    spark.sql(f"DELETE FROM {t} WHERE id IN (1, 12)")
    spark.sql(f"UPDATE {t} SET cat = 'u' WHERE id = 5")
    spark.sql(f"UPDATE {t} SET x = x + 1 WHERE id = 15")
    spark.sql(f"MERGE INTO {t} USING (SELECT 7L AS id, 'm' AS cat, 70L AS x UNION ALL SELECT 100L, 'n', 1000L) s "
              f"ON {t}.id = s.id WHEN MATCHED THEN UPDATE SET cat = s.cat WHEN NOT MATCHED THEN INSERT *")
    spark.sql(f"INSERT INTO {t} VALUES (200, 'i', 2000)")
    clone = lance.dataset(path)
    clone.validate()
    rows = {r["id"]: r for r in clone.to_table().to_pylist()}
    assert sorted(rows) == sorted(set(want) - {1, 12} | {100, 200})
    assert rows[5]["cat"] == "u" and rows[7]["cat"] == "m" and rows[15]["x"] == 151
    assert _ids(clone, filter="x BETWEEN 40 AND 160") == _ids(clone, filter="x BETWEEN 40 AND 160", use_scalar_index=False)
    # The source is as it was: nothing written there, its rows the same.
    assert _files(source_path) == source_files
    assert _ids(lance.dataset(source_path)) == want
    lance.dataset(source_path).validate()


def _branch(path, name):
    return lance.dataset(path).checkout_version((name, None))


def test_branches_pylance_made_read_and_written(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    _source(path)
    main_rows = _ids(lance.dataset(path))
    dev = lance.dataset(path).create_branch("dev", lance.dataset(path).version)
    dev.insert(_rows(50, 3))                      # a file of dev's own, under tree/dev
    dev = _branch(path, "dev")
    lance.dataset(path).create_branch("feature/x", ("dev", dev.version))
    _branch(path, "feature/x").delete("id = 51")  # a deletion file of feature/x over dev's file
    assert _spark_ids(spark, f"{t}.branch_dev") == _ids(dev)
    assert _spark_ids(spark, f"{t}.`branch_feature/x`") == _ids(_branch(path, "feature/x"))
    assert _spark_ids(spark, f"{t}.branch_dev", "x BETWEEN 40 AND 120") == [i for i in _ids(dev) if 40 <= i * 10 <= 120]
    listed = {r["branch"]: r for r in spark.sql(f"SELECT * FROM {t}.branches").collect()}
    assert listed["dev"]["parent_branch"] is None and listed["feature/x"]["parent_branch"] == "dev"
    assert listed["feature/x"]["parent_version"] == dev.version
    # Time travel on a branch: the version it was made from, by number.
    first = min(v["version"] for v in dev.versions())
    assert _spark_ids(spark, f"{t}.branch_dev VERSION AS OF {first}") == main_rows

    b = f"{t}.branch_dev"
    spark.sql(f"DELETE FROM {b} WHERE id IN (2, 50)")
    spark.sql(f"UPDATE {b} SET cat = 'u' WHERE id IN (5, 51)")
    spark.sql(f"UPDATE {b} SET x = x + 1 WHERE id = 15")
    spark.sql(f"MERGE INTO {b} USING (SELECT 7L AS id, 'm' AS cat, 70L AS x UNION ALL SELECT 300L, 'n', 3000L) s "
              f"ON {b}.id = s.id WHEN MATCHED THEN UPDATE SET cat = s.cat WHEN NOT MATCHED THEN INSERT *")
    spark.sql(f"INSERT INTO {b} VALUES (400, 'i', 4000)")
    dev = _branch(path, "dev")
    dev.validate()
    rows = {r["id"]: r for r in dev.to_table().to_pylist()}
    assert sorted(rows) == sorted((set(main_rows) | {50, 51, 52, 300, 400}) - {2, 50})
    assert rows[5]["cat"] == rows[51]["cat"] == "u" and rows[7]["cat"] == "m" and rows[15]["x"] == 151
    assert _ids(dev, filter="x BETWEEN 40 AND 160") == _ids(dev, filter="x BETWEEN 40 AND 160", use_scalar_index=False)
    # Main and the other branch are untouched.
    assert _ids(lance.dataset(path)) == main_rows
    lance.dataset(path).validate()
    _branch(path, "feature/x").validate()
    assert _spark_ids(spark, t) == main_rows


def test_branch_procedures_in_pylance_layout(spark, warehouse, table_name):
    t, path = table_name, table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {t} (id BIGINT, cat STRING, x BIGINT)")
    spark.sql(f"INSERT INTO {t} VALUES (1, 'a', 10), (2, 'b', 20)")
    spark.sql(f"INSERT INTO {t} VALUES (3, 'c', 30)")
    made = spark.sql(f"CALL lance.system.create_branch(table => '{t}', branch => 'dev', version => 2)").collect()[0]
    assert made["branch"] == "dev" and made["parent_version"] == 2 and made["parent_branch"] is None
    spark.sql(f"INSERT INTO {t}.branch_dev VALUES (10, 'd', 100)")
    spark.sql(f"DELETE FROM {t}.branch_dev WHERE id = 1")
    branches = lance.dataset(path).branches.list()
    assert branches["dev"]["parent_version"] == 2 and branches["dev"]["parent_branch"] is None
    dev = _branch(path, "dev")
    dev.validate()
    assert _ids(dev) == [2, 10]
    dev.insert(_rows(20, 1))                       # pylance writes on after Spark
    assert _spark_ids(spark, f"{t}.branch_dev") == [2, 10, 20]
    # A branch of the branch, then a tag on it read by name.
    spark.sql(f"CALL lance.system.create_branch(table => '{t}.branch_dev', branch => 'dev/x')")
    assert lance.dataset(path).branches.list()["dev/x"]["parent_branch"] == "dev"
    assert _ids(_branch(path, "dev/x")) == [2, 10, 20]
    spark.sql(f"CALL lance.system.create_tag(table => '{t}.branch_dev', tag => 'devtag')")
    assert lance.dataset(path).tags.list()["devtag"]["branch"] == "dev"
    assert _spark_ids(spark, f"{t} VERSION AS OF 'devtag'") == [2, 10, 20]
    with pytest.raises(Exception, match="dev/x"):
        spark.sql(f"CALL lance.system.delete_branch(table => '{t}', branch => 'dev')").collect()
    sparklance.delete_branch(spark, t, "dev/x")
    lance.dataset(path).tags.delete("devtag")
    spark.sql(f"CALL lance.system.delete_branch(table => '{t}', branch => 'dev')").collect()
    assert lance.dataset(path).branches.list() == {} and sparklance.branches(spark, t).count() == 0
    assert not (warehouse / "db" / f"{t.split('.')[-1]}.lance" / "tree" / "dev").exists()
    assert _ids(lance.dataset(path)) == [1, 2, 3]


def _branched_history(path):
    """Main v1..v5 (v4 overwrites everything), branch dev made from v3 with a file and a deletion of its own."""
    lance.write_dataset(_rows(0, 5), path)                         # v1
    lance.write_dataset(_rows(5, 5), path, mode="append")          # v2
    lance.dataset(path).delete("id = 1")                           # v3
    lance.dataset(path).create_branch("dev", 3).insert(_rows(100, 2))
    _branch(path, "dev").delete("id = 100")
    lance.write_dataset(_rows(20, 2), path, mode="overwrite")      # v4
    lance.dataset(path).insert(_rows(30, 1))                       # v5


def _shape(path):
    """What a cleanup leaves, comparable across two tables made alike: versions per line, files per directory."""
    import collections
    per_dir = collections.Counter(f.rsplit("/", 1)[0] for f in _files(path) if "latest_version_hint" not in f)
    return ([v["version"] for v in lance.dataset(path).versions()], [v["version"] for v in _branch(path, "dev").versions()],
            dict(per_dir))


def test_vacuum_cleans_each_line_as_pylance_does(spark, warehouse, table_name, tmp_path):
    t, path = table_name, table_path(warehouse, table_name)
    oracle = str(tmp_path / "oracle.lance")
    _branched_history(path)
    _branched_history(oracle)
    assert _shape(path) == _shape(oracle)
    lance.dataset(oracle).cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    spark.sql(f"CALL lance.system.vacuum(table => '{t}', older_than => '0 seconds', delete_unverified => true)").collect()
    assert _shape(path) == _shape(oracle)
    assert _shape(path)[0] == [3, 5], "v3 stays: dev was made from it"
    dev_rows = _ids(_branch(path, "dev"))
    _branch(oracle, "dev").cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    spark.sql(f"CALL lance.system.vacuum(table => '{t}.branch_dev', older_than => '0 seconds', delete_unverified => true)").collect()
    assert _shape(path) == _shape(oracle)
    _branch(path, "dev").validate()
    lance.dataset(path).validate()
    assert _ids(_branch(path, "dev")) == dev_rows == _spark_ids(spark, f"{t}.branch_dev")
    assert _spark_ids(spark, t) == [20, 21, 30]
    # Once the branch is gone, v3 and the files only it named go too.
    sparklance.delete_branch(spark, t, "dev")
    lance.dataset(oracle).branches.delete("dev")
    lance.dataset(oracle).cleanup_old_versions(older_than=timedelta(0), delete_unverified=True)
    spark.sql(f"CALL lance.system.vacuum(table => '{t}', older_than => '0 seconds', delete_unverified => true)").collect()
    assert [v["version"] for v in lance.dataset(path).versions()] == [5]
    assert _files(path) == [f for f in _files(path) if not f.startswith("tree/dev")]
    assert len([f for f in _files(path) if f.startswith("data/")]) == len([f for f in _files(oracle) if f.startswith("data/")])
