"""A Spark driver killed with SIGKILL in the middle of a statement leaves its table consistent.

Every run copies one pristine table, starts crash_child.py (a `local[2]` PySpark driver) on the
copy, lets it run one INSERT / DELETE / UPDATE / MERGE and kills the whole driver, Python and JVM,
when a chosen kind of file first appears (plus a seeded 0-30 ms delay), or at a random moment.
Then the table must open at the old version or the next one; Spark and pylance must read the same
rows, equal to the old or the new contents computed in plain Python; every file a version names
must exist, and every file no version names must be one the dead driver wrote; and a statement
run afterwards must commit and give the expected rows.
"""
import random
import shutil
import time
from collections import Counter, deque
from pathlib import Path

import lance

from conftest import table_path
from crash_watch import Driver, listing, reached

SEED = 20261123
COLUMNS = ("id", "grp", "val", "tag")
NAMESPACE = "lance.crash"
LOOKAHEAD = 2  # drivers booting ahead of the one being killed
ROW_SQL = "id, CAST(id % 10 AS INT), id * 7, concat('n', id % 13)"


def _row(i):
    return (i, i % 10, i * 7, f"n{i % 13}")


def _initial():
    return [_row(i) for i in range(4000) if i % 11 != 0]


def _insert(rows):
    return rows + [_row(i) for i in range(4000, 6000)]


def _delete(rows):
    return [r for r in rows if not (r[0] % 7 == 3 or r[1] == 4)]


def _update(rows):
    return [(i, g, v + 1000, "u") if i % 3 == 1 else (i, g, v, t) for i, g, v, t in rows]


def _merge(rows):
    source = {i: i * 2 for i in range(2500, 5000, 2)}
    present = {r[0] for r in rows}
    kept = [(i, g, source[i], "m") if i in source else (i, g, v, t)
            for i, g, v, t in rows if not (i in source and g == 0)]
    return kept + [(i, i % 10, v, "new") for i, v in source.items() if i not in present]


def _touch(rows):
    return [(i, g, v + 1, t) if i % 5 == 0 else (i, g, v, t) for i, g, v, t in rows]


# Each statement writes files of several kinds into several fragments of the 8-fragment table.
STATEMENTS = {
    "insert": (f"INSERT INTO {{t}} SELECT {ROW_SQL} FROM range(4000, 6000)", _insert),
    "delete": ("DELETE FROM {t} WHERE id % 7 = 3 OR grp = 4", _delete),
    "update": ("UPDATE {t} SET val = val + 1000, tag = 'u' WHERE id % 3 = 1", _update),
    "merge": ("MERGE INTO {t} t USING (SELECT id, id * 2 AS v FROM range(2500, 5000, 2)) s ON t.id = s.id "
              "WHEN MATCHED AND t.grp = 0 THEN DELETE "
              "WHEN MATCHED THEN UPDATE SET val = s.v, tag = 'm' "
              "WHEN NOT MATCHED THEN INSERT (id, grp, val, tag) VALUES (s.id, CAST(s.id % 10 AS INT), s.v, 'new')",
              _merge),
}
# Run on a table the dead statement did commit to: it must still take new commits.
TOUCH = ("UPDATE {t} SET val = val + 1 WHERE id % 5 = 0", _touch)

# (statement, trigger, delay): None draws a seeded delay of 0-30 ms, or for "random" a moment within
# the statement's life, measured by the manifest kills before it; 0 aims at the commit's last steps.
# A "manifest temp" file lives for microseconds, so that trigger may not fire: the run then shows
# that an undisturbed driver leaves the same table as the parent's session.
PLAN = [
    ("insert", "data", None), ("insert", "manifest temp", 0.0), ("insert", "manifest", 0.0), ("insert", "random", None),
    ("delete", "deletion", 0.0), ("delete", "transaction", None), ("delete", "manifest", 0.0),
    ("update", "data", None), ("update", "deletion", None), ("update", "transaction", 0.0),
    ("merge", "deletion", None), ("merge", "manifest", 0.0), ("merge", "random", None),
]


def _spark_rows(spark, ident):
    return sorted(tuple(r) for r in spark.table(ident).select(*COLUMNS).collect())


def _lance_rows(ds):
    return sorted(tuple(r[c] for c in COLUMNS) for r in ds.to_table(columns=list(COLUMNS)).to_pylist())


def check_table(spark, ident, path, expected):
    """Checks the table against `expected` (version -> rows); returns the version it holds and the
    data and deletion files that version names."""
    ds = lance.dataset(str(path))
    assert ds.version in expected, f"{ident} is at version {ds.version}, expected one of {sorted(expected)}"
    ds.validate()
    rows = _lance_rows(ds)
    assert _spark_rows(spark, ident) == rows, f"{ident}: Spark and pylance read different rows"
    assert rows == sorted(expected[ds.version]), f"{ident}: version {ds.version} holds other rows than expected"
    named = set()
    for fragment in ds.get_fragments():
        named.update(f"data/{f.path}" for f in fragment.data_files())
        if fragment.deletion_file():
            named.add(fragment.deletion_file())
    missing = sorted(n for n in named if not (path / n).is_file())
    assert not missing, f"{ident}: version {ds.version} names missing files {missing}"
    tracked = set(ds.tracked_files().read_all().column("path").to_pylist())
    missing = sorted(p for p in tracked if not (path / p).is_file())
    assert not missing, f"{ident}: files named by older versions are missing: {missing}"
    return ds.version, named


def leftovers(path, template_files):
    """The data and deletion files no version names; each must be one the dead driver wrote."""
    tracked = set(lance.dataset(str(path)).tracked_files().read_all().column("path").to_pylist())
    present = {f"{d}/{n}" for d, names in listing(path).items() if d in ("data", "_deletions") for n in names}
    unnamed = present - tracked
    assert not unnamed & template_files, f"{path}: files of the old version are no longer referenced"
    return unnamed


def _copy(template, warehouse, name):
    ident = f"{NAMESPACE}.{name}"
    path = Path(table_path(warehouse, ident))
    shutil.copytree(template, path)
    return ident, path


def _prepare_template(spark, warehouse):
    ident = f"{NAMESPACE}.pristine"
    spark.sql(f"CREATE TABLE {ident} (id BIGINT NOT NULL, grp INT, val BIGINT, tag STRING) "
              "TBLPROPERTIES ('max_rows_per_file' = '500')")
    spark.sql(f"INSERT INTO {ident} SELECT {ROW_SQL} FROM range(4000)")
    spark.sql(f"DELETE FROM {ident} WHERE id % 11 = 0")  # so fragments start with deletion files
    path = Path(table_path(warehouse, ident))
    version, _ = check_table(spark, ident, path, {3: _initial()})  # created, filled, deleted from
    assert len(lance.dataset(str(path)).get_fragments()) == 8
    return path, version


def _check_after_kill(spark, ident, path, kind, old, template_files):
    """Checks the table a killed driver left, then writes to it; returns its version and leftovers."""
    new_rows = STATEMENTS[kind][1](_initial())
    version, _ = check_table(spark, ident, path, {old: _initial(), old + 1: new_rows})
    unnamed = leftovers(path, template_files)
    if version == old:
        # Retrying the statement that died must give exactly what an undisturbed run gives.
        sql, expected = STATEMENTS[kind][0], new_rows
    else:
        sql, expected = TOUCH[0], TOUCH[1](new_rows)
    spark.sql(sql.format(t=ident))
    after, named = check_table(spark, ident, path, {version + 1: expected})
    assert after == version + 1
    assert not unnamed & named, f"{ident}: the commit after the kill adopted files of the dead driver"
    return version, unnamed


def _moment(trigger, delay, fired):
    if trigger == "random":
        return f"killed {delay:.2f}s after the start"
    if fired is None:
        return f"no {trigger} file appeared"
    return f"killed {delay * 1000:4.1f} ms after a {trigger} file, at {fired:.2f}s"


def test_sigkilled_driver_leaves_table_consistent(spark, warehouse, tmp_path):
    began = time.monotonic()
    rng = random.Random(SEED)
    draws = [rng.random() for _ in PLAN]
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {NAMESPACE}")
    template, old = _prepare_template(spark, warehouse)
    template_listing = listing(template)
    template_files = {f"{d}/{n}" for d in ("data", "_deletions") for n in template_listing[d]}
    scratch = tmp_path / "scratch"  # the drivers' temporary files and the class archive: tens of MB
    scratch.mkdir()
    archive = scratch / "driver-classes.jsa"
    drivers = []

    def driver(name, kind, *jvm_options):
        ident, path = _copy(template, warehouse, name)
        drivers.append(Driver(warehouse, scratch, ident, STATEMENTS[kind][0].format(t=ident),
                              tmp_path / f"{name}.log", jvm_options))
        return drivers[-1], ident, path

    try:
        # One driver runs its statement undisturbed; at exit its JVM archives the classes it
        # loaded, which lets every later driver start about twice as fast.
        undisturbed, ident, path = driver("no_kill_child", "merge", f"-XX:ArchiveClassesAtExit={archive}")
        for kind, (sql, apply) in STATEMENTS.items():
            no_kill, no_kill_path = _copy(template, warehouse, f"no_kill_{kind}")
            spark.sql(sql.format(t=no_kill))
            assert check_table(spark, no_kill, no_kill_path, {old + 1: apply(_initial())})[0] == old + 1
        undisturbed.wait_ready()
        undisturbed.run_to_end()
        assert check_table(spark, ident, path, {old + 1: _merge(_initial())})[0] == old + 1
        undisturbed.wait_exit()
        shared = [f"-XX:SharedArchiveFile={archive}"] if archive.exists() else []

        commit_seconds, fired_triggers, outcomes = {}, [], set()
        kills_began = time.monotonic()
        # Drivers boot ahead, while the parent checks what the previous ones left.
        upcoming = deque(driver(f"kill_{i:02}", PLAN[i][0], *shared) for i in range(min(LOOKAHEAD, len(PLAN))))
        for i, (kind, trigger, delay) in enumerate(PLAN):
            current, ident, path = upcoming.popleft()
            current.wait_ready()
            if delay is None:
                delay = draws[i] * (1.25 * commit_seconds[kind] if trigger == "random" else 0.030)
            fired = current.run_and_kill(path, template_listing, trigger, delay)
            step = reached(path, template_listing) if fired is not None else "statement finished, no kill"
            if i + LOOKAHEAD < len(PLAN):
                upcoming.append(driver(f"kill_{i + LOOKAHEAD:02}", PLAN[i + LOOKAHEAD][0], *shared))
            kill = f"{i:2} {kind:6} {_moment(trigger, delay, fired):52} reached: {step:46}"
            try:
                version, unnamed = _check_after_kill(spark, ident, path, kind, old, template_files)
            except Exception as e:
                raise AssertionError(f"after kill {kill.strip()}: {e}") from e

            if fired is not None:
                fired_triggers.append(trigger)
                if trigger.startswith("manifest"):
                    commit_seconds[kind] = max(commit_seconds.get(kind, 0.0), fired)
            outcomes.add(version - old)
            print(f"{kill} -> {'new' if version > old else 'old'} version, {len(unnamed)} leftover files")
    finally:
        for d in drivers:
            d.kill()
        shutil.rmtree(scratch)

    print(f"seed {SEED}: set-up {kills_began - began:.0f}s, {len(PLAN)} kills {time.monotonic() - kills_began:.0f}s; "
          f"triggers fired: {dict(Counter(fired_triggers))}")
    # Every window must have been hit at least once, and kills must have left both old and new tables.
    assert {"data", "deletion", "transaction", "manifest"} <= set(fired_triggers), fired_triggers
    assert outcomes == {0, 1}, outcomes
