"""Maintenance, randomized: the random INSERT / UPDATE / DELETE / MERGE statements of
test_lineage_random on a stable-row-id table, interleaved with compactions (ours with random
options, and now and then pylance's compact_files), vacuums (random retain counts or ages, dry runs,
tags on random versions) and restores.

The oracle of test_lineage_random tracks rows and lineage per commit; here it also keeps each
version's rows. After every step the table's rows and lineage equal the oracle's; a compaction
changes no row, no _rowid and no version column and its commits show no change data; CHANGES over
random ranges of the versions left (spanning compactions and restores) equal the oracle's
changes; time travel to versions left returns their rows; vacuum removes only what its policy
selects, and pylance reads the same table throughout."""
import random

import lance
import pytest

import sparklance
from conftest import table_path
from test_lineage_random import (CHANGE_COLS, RANGE_SELECT, Oracle, _counter, _counter_diff, _range_row,
                                 check_pylance, check_rows, pick_statement, stmt_insert_range)

STEPS_PER_SEED = 50


class MaintainedOracle(Oracle):
    """The lineage oracle plus each version's rows and the commits that changed no row."""

    def __init__(self):
        super().__init__()
        self.at_version = {1: {}}

    def commit(self, effects, new_rowids):
        super().commit(effects, new_rowids)
        self.at_version[self.version] = self.expected_rows()

    def quiet_commits(self, n):
        """`n` commits that change no row (a compaction's ReserveFragments and Rewrite)."""
        for _ in range(n):
            self.version += 1
            self.events[self.version] = []
            self.history[self.version] = (0, 0, len(self.rows))
            self.at_version[self.version] = self.expected_rows()

    def restore(self, version, new_version, table_rows):
        """A restore of `version` as `new_version`: the rows come back with their lineage; every
        row that differs from the version before is a change of the restore commit."""
        before, after = self.rows, {k: row[1:] for k, row in self.at_version[version].items()}
        log = []
        for key in sorted(set(before) | set(after)):
            old, new = before.get(key), after.get(key)
            if old == new:
                continue
            if old is not None and (new is None or old[2] != new[2]):
                log.append(("delete", key, old[:2], None, old[2]))
            if new is not None and (old is None or old[2] != new[2]):
                log.append(("insert", key, None, new[:2], new[2]))
            elif old is not None and new is not None:
                log.append(("update", key, old[:2], new[:2], new[2]))
        self.rows = after
        self.dead = sorted(set(self.dead) | (set(before) - set(after)))
        self.dead = [k for k in self.dead if k not in after]
        self.version = new_version
        self.events[new_version] = log
        self.at_version[new_version] = self.expected_rows()
        assert {k: v for k, v in table_rows.items()} == self.expected_rows()


def compact(r, spark, t, path, o, where):
    """Our compaction with random options, or pylance's; returns what it did, for the log."""
    before = lance.dataset(path).version
    if r.random() < 0.2:
        lance.dataset(path).optimize.compact_files(target_rows_per_fragment=r.choice([40, 120, 10_000]))
        how = "pylance compact_files"
    else:
        options = dict(target_rows_per_fragment=r.choice([20, 50, 200, 1_000_000]),
                       materialize_deletions=r.choice([None, True, False]),
                       materialize_deletions_threshold=r.choice([None, 0.0, 0.05, 0.3, 1.0]),
                       max_source_fragments=r.choice([None, None, 1, 3]),
                       where=r.choice([None, None, "_fragid % 2 = 0", f"_fragid > {r.randint(0, 20)}"]))
        result = sparklance.compact(spark, t, **options)
        how = f"compact {options} -> {result.version}"
        assert (result.version is None) == (lance.dataset(path).version == before), where
    after = lance.dataset(path).version
    assert after in (before, before + 2), f"{where}: {how} went from version {before} to {after}"
    o.quiet_commits(after - before)
    return how


def vacuum(r, spark, t, path, o, where):
    versions = [v["version"] for v in lance.dataset(path).versions()]
    tags = {row.tag: row.version for row in sparklance.tags(spark, t).collect()}
    if r.random() < 0.4:
        name = f"tag{len(tags)}"
        sparklance.create_tag(spark, t, name, version=r.choice(versions))
        tags[name] = lance.dataset(path).tags.list()[name]["version"]
    policy = r.choice([dict(retain_versions=r.randint(1, 6)), dict(older_than="0 seconds")])
    dry = r.random() < 0.2
    result = sparklance.vacuum(spark, t, dry_run=dry, error_if_tagged_old_versions=False, **policy)
    left = [v["version"] for v in lance.dataset(path).versions()]
    latest = versions[-1]
    if "retain_versions" in policy:
        floor = versions[-policy["retain_versions"]] if len(versions) >= policy["retain_versions"] else versions[0]
    else:
        floor = latest
    selected = {v for v in versions if v < floor and v not in tags.values()}
    assert result.files or not selected, where
    assert result.old_versions == len(selected), f"{where}: vacuum {policy} removed {result.old_versions}, want {selected}"
    want = versions if dry else [v for v in versions if v not in selected]
    assert left == want, f"{where}: vacuum {policy} dry={dry} left {left}, want {want}"
    return f"vacuum {policy} dry={dry} -> {left}"


def restore(r, spark, t, path, o, where):
    versions = [v["version"] for v in lance.dataset(path).versions()]
    target = r.choice(versions[:-1]) if len(versions) > 1 else versions[-1]
    row = sparklance.restore(spark, t, version=target)
    table_rows = {row.id: tuple(row) for row in spark.sql(
        f"SELECT id, v, s, _rowid, _row_created_at_version, _row_last_updated_at_version FROM {t}").collect()}
    o.restore(target, row.version, table_rows)
    return f"restore {target} -> {row.version}"


def check_time_travel_and_changes(r, spark, t, path, o, where, samples):
    versions = [v["version"] for v in lance.dataset(path).versions()]
    for v in r.sample(versions, min(samples, len(versions))):
        got = {row.id: tuple(row) for row in spark.sql(
            f"SELECT id, v, s, _rowid, _row_created_at_version, _row_last_updated_at_version "
            f"FROM {t} VERSION AS OF {v}").collect()}
        assert got == o.at_version[v], f"{where}: VERSION AS OF {v} differs from the oracle"
    # Change data needs both sides of every commit in range: a range lies within a run of versions
    # left without gaps, after its first version.
    present = set(versions)
    commits = [v for v in versions if v - 1 in present]
    for _ in range(min(samples, len(commits))):
        a = r.choice(commits)
        b = a
        while b + 1 in present and r.random() < 0.8:
            b += 1
        query = f"SELECT {CHANGE_COLS} FROM {t} CHANGES FROM VERSION {a} TO VERSION {b}"
        got = _counter(spark.sql(query).collect())
        want = o.changes(a, b, compute_updates=False)
        assert got == want, f"{where}: {query}: {_counter_diff(got, want)}"


@pytest.mark.parametrize("seed", [7, 8])
def test_random_dml_and_maintenance_match_oracle(spark, warehouse, table_name, seed):
    r = random.Random(seed)
    t, path = table_name, table_path(warehouse, table_name)
    o = MaintainedOracle()
    spark.sql(f"CREATE TABLE {t} (id BIGINT NOT NULL, v BIGINT, s STRING) TBLPROPERTIES "
              "('enable_stable_row_ids' = 'true', 'max_rows_per_file' = '40', 'optimize_write' = 'false')")
    counts = {"dml": 0, "compact": 0, "vacuum": 0, "restore": 0}
    log = []
    for i in range(STEPS_PER_SEED):
        where = f"seed {seed} step {i}"
        x = r.random()
        if i < 3 or x < 0.6:
            make = stmt_insert_range if not o.rows else pick_statement(r)
            sql, effects = make(r, o, t, spark)
            spark.sql(sql)
            check_rows(spark, t, o, effects, f"{where}: {sql}")
            counts["dml"] += 1
            log.append(sql[:80])
            continue
        kind = "compact" if x < 0.8 else "vacuum" if x < 0.95 else "restore"
        step = {"compact": compact, "vacuum": vacuum, "restore": restore}[kind]
        log.append(step(r, spark, t, path, o, where))
        counts[kind] += 1
        check_rows(spark, t, o, {}, f"{where}: after {log[-1]}")
        check_pylance(path, o, f"{where}: after {log[-1]}")
        assert lance.dataset(path).version == o.version, where
        check_time_travel_and_changes(r, spark, t, path, o, f"{where}: after {log[-1]}", samples=2)
    check_time_travel_and_changes(r, spark, t, path, o, f"seed {seed} at the end", samples=1000)
    assert all(counts.values()), counts
    print(f"seed {seed}: {counts}, {o.version} versions, {len(o.rows)} rows; last steps {log[-5:]}")
