"""Data skipping, randomized: filters pushed into sparklance's scans prune zones and fragments by
the ZONEMAP indices pylance builds, and must never change a result.

Each seed writes a table by a random mix of Spark and pylance appends, Spark and pylance deletes,
Spark UPDATEs and MERGEs (whose target scans skip by the source's keys), pylance and sparklance
compactions (sparklance's folds each zone map's segments into one), ZONEMAP builds by pylance and
by sparklance's create_index on random columns with random zone sizes, pylance BTREE and BITMAP
builds (pylance's also on the fields of a struct that is NULL in some rows), and pylance's index
refreshes (which merge either's segments), on a table whose property zonemap_columns has
sparklance's writes keep zone maps of two random columns current, so zone maps are present,
absent, stale for appended fragments and cover only some fragments. The values
include NULL, NaN, -0.0, infinities, empty strings, the extremes of each type, dates before 1970
and timestamps written through several time zones. After every
step random filters (comparisons, IN, IS [NOT] NULL, BETWEEN, LIKE 'prefix%', AND / OR / NOT, on
top-level and nested columns) must return what the same query returns with data skipping off."""
import datetime
import decimal
import os
import random

import duckdb
import lance
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from lance.file import LanceFileReader
from lance.indices import IndexConfig

from conftest import scan_metrics, table_path


def splits_read(df):
    """Runs `df`; its rows and the fragment splits its scan read (data skipping plans fewer)."""
    rows, metrics = scan_metrics(df)
    return rows, metrics["splitsRead"]


STEPS = 7
FILTERS_PER_STEP = 12

SCHEMA = pa.schema([
    ("k", pa.int64()), ("i", pa.int32()), ("d", pa.float64()), ("f", pa.float32()), ("s", pa.string()),
    ("dt", pa.date32()), ("ts", pa.timestamp("us", tz="UTC")), ("b", pa.bool_()),
    ("dec", pa.decimal128(10, 2)), ("st", pa.struct([("x", pa.int32()), ("y", pa.string())])),
])
DDL = ("k BIGINT, i INT, d DOUBLE, f FLOAT, s STRING, dt DATE, ts TIMESTAMP, b BOOLEAN, dec DECIMAL(10, 2), "
       "st STRUCT<x: INT, y: STRING>")
INDEXABLE = ["k", "i", "d", "f", "s", "dt", "ts", "b", "dec"]
TYPES = {"k": "BIGINT", "i": "INT", "d": "DOUBLE", "f": "FLOAT", "s": "STRING", "dt": "DATE", "ts": "TIMESTAMP",
         "b": "BOOLEAN", "dec": "DECIMAL(10, 2)"}

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
ZONES = [datetime.timezone.utc, datetime.timezone(datetime.timedelta(hours=-5)),
         datetime.timezone(datetime.timedelta(hours=9, minutes=30))]


def pick(rnd, special, common, p=0.25):
    return rnd.choice(special) if rnd.random() < p else common()


def random_rows(rnd, start, n, child_nulls=True):
    """n rows; k rises from `start` (zones of k are narrow), the other columns are random. Without
    `child_nulls` a field of `st` is NULL only where `st` is, so pages of the field hold no nulls of
    their own."""
    rows = []
    null_structs = [None, {"x": None, "y": None}] if child_nulls else [None]
    for j in range(n):
        k = pick(rnd, [None, -(2 ** 63), 2 ** 63 - 1], lambda: start + j, p=0.03)
        rows.append({
            "k": k,
            "i": pick(rnd, [None, -(2 ** 31), 2 ** 31 - 1, 0], lambda: rnd.randint(-50, 50)),
            "d": pick(rnd, [None, float("nan"), -0.0, 0.0, float("inf"), float("-inf")], lambda: rnd.uniform(-100, 100)),
            "f": pick(rnd, [None, float("nan"), -0.0, float("inf")], lambda: float(rnd.randint(-20, 20)) / 4),
            "s": pick(rnd, [None, "", "a", "ab", "\u00e9t\u00e9", "zz\U0001F600"],
                      lambda: rnd.choice(["app", "apple", "b", "ba", "zebra"]) + str(rnd.randint(0, 9))),
            "dt": pick(rnd, [None, datetime.date(1, 1, 1), datetime.date(9999, 12, 31), datetime.date(1969, 12, 31)],
                       lambda: datetime.date(2020, 1, 1) + datetime.timedelta(days=rnd.randint(-400, 400))),
            "ts": pick(rnd, [None, EPOCH, EPOCH - datetime.timedelta(microseconds=1)],
                       lambda: (EPOCH + datetime.timedelta(seconds=rnd.randint(0, 10 ** 9))).astimezone(rnd.choice(ZONES))),
            "b": pick(rnd, [None], lambda: rnd.random() < 0.5),
            "dec": pick(rnd, [None, decimal.Decimal("-99999999.99"), decimal.Decimal("99999999.99")],
                        lambda: decimal.Decimal(rnd.randint(-10000, 10000)) / 100),
            "st": pick(rnd, null_structs, lambda: {"x": rnd.randint(0, 9), "y": rnd.choice(["p", "q", ""])}),
        })
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def literal(rnd, column):
    """A SQL literal of the column's type, often one of the values the rows hold at the edges."""
    if column in ("k",):
        return str(rnd.choice([0, 5, 150, 299, 300, 777, 1500, -(2 ** 63), 2 ** 63 - 1, rnd.randint(0, 2000)]))
    if column in ("i", "st.x"):
        return str(rnd.choice([0, 3, -50, 50, -(2 ** 31), 2 ** 31 - 1, rnd.randint(-60, 60)]))
    if column == "d":
        return rnd.choice(["CAST('NaN' AS DOUBLE)", "CAST(-0.0 AS DOUBLE)", "CAST(0.0 AS DOUBLE)",
                           "CAST('Infinity' AS DOUBLE)", "CAST('-Infinity' AS DOUBLE)", f"CAST({rnd.uniform(-120, 120):.3f} AS DOUBLE)"])
    if column == "f":
        return rnd.choice(["CAST('NaN' AS FLOAT)", "CAST(-0.0 AS FLOAT)", "CAST('Infinity' AS FLOAT)",
                           f"CAST({rnd.randint(-24, 24) / 4} AS FLOAT)"])
    if column in ("s", "st.y"):
        return "'" + rnd.choice(["", "a", "ab", "app", "apple3", "b", "ba", "zebra9", "\u00e9t\u00e9", "zz", "p", "q"]) + "'"
    if column == "dt":
        day = rnd.choice([datetime.date(1969, 12, 31), datetime.date(1, 1, 1), datetime.date(9999, 12, 31),
                          datetime.date(2020, 1, 1) + datetime.timedelta(days=rnd.randint(-420, 420))])
        return f"DATE'{day.isoformat()}'"
    if column == "ts":
        at = rnd.choice([EPOCH, EPOCH + datetime.timedelta(seconds=rnd.randint(0, 10 ** 9))])
        zone = rnd.choice(["UTC", "America/New_York", "Asia/Tokyo", "+05:30"])
        return f"TIMESTAMP'{at.strftime('%Y-%m-%d %H:%M:%S')} {zone}'"
    if column == "b":
        return rnd.choice(["true", "false"])
    if column == "dec":
        return rnd.choice(["CAST(0 AS DECIMAL(10, 2))", "CAST(-99999999.99 AS DECIMAL(10, 2))",
                           f"CAST({rnd.randint(-10000, 10000) / 100} AS DECIMAL(10, 2))"])
    raise AssertionError(column)


NESTED = ["st.x", "st.y"]
COLUMNS = INDEXABLE + NESTED


def predicate(rnd, depth=0):
    if depth < 2 and rnd.random() < 0.35:
        kind = rnd.choice(["AND", "OR", "NOT"])
        if kind == "NOT":
            return f"NOT ({predicate(rnd, depth + 1)})"
        return f"({predicate(rnd, depth + 1)} {kind} {predicate(rnd, depth + 1)})"
    column = rnd.choice(COLUMNS)
    shape = rnd.random()
    # Null tests on fields of a struct that may be NULL are where indices and rows could disagree.
    if shape < (0.25 if column in NESTED else 0.1):
        return rnd.choice([f"{column} IS {rnd.choice(['', 'NOT '])}NULL", f"{column} <=> NULL"])
    if shape < 0.2:
        values = [literal(rnd, column) for _ in range(rnd.randint(1, 4))] + (["NULL"] if rnd.random() < 0.2 else [])
        return f"{column} {rnd.choice(['', 'NOT '])}IN ({', '.join(values)})"
    if shape < 0.3 and column not in ("b",):
        low, high = sorted([literal(rnd, column), literal(rnd, column)]) if column == "k" else (literal(rnd, column), literal(rnd, column))
        return f"{column} BETWEEN {low} AND {high}"
    if shape < 0.4 and column in ("s", "st.y"):
        return f"{column} LIKE '{rnd.choice(['', 'a', 'ap', 'z', 'b', 'q'])}%'"
    if shape < 0.45:
        return f"{column} <=> {literal(rnd, column)}"
    op = rnd.choice(["=", "<", "<=", ">", ">=", "!="])
    left, right = column, literal(rnd, column)
    if rnd.random() < 0.2:
        left, right = right, left
    return f"{left} {op} {right}"


def rows_of(spark, query):
    # As text: NaN is not equal to itself in Python, but is to Spark.
    return sorted(repr(tuple(r)) for r in spark.sql(query).collect())


class Writer:
    """The table, and the next key to write."""

    def __init__(self, spark, rnd, ident, path, maintained=()):
        self.spark, self.rnd, self.ident, self.path = spark, rnd, ident, path
        self.maintained = list(maintained)
        self.next_key = 0
        self.merges = 0

    def rows(self):
        n = self.rnd.randint(50, 700)
        # The first rows, and half the others, have no NULL fields in the structs that are not NULL.
        table = random_rows(self.rnd, self.next_key, n, child_nulls=self.next_key > 0 and self.rnd.random() < 0.5)
        self.next_key += n
        return table

    def spark_append(self):
        self.spark.createDataFrame(self.rows().to_pylist(), schema=DDL).writeTo(self.ident).append()

    def pylance_append(self):
        lance.write_dataset(self.rows(), self.path, mode="append", max_rows_per_file=self.rnd.choice([250, 600, 4000]))

    def spark_delete(self):
        self.spark.sql(f"DELETE FROM {self.ident} WHERE {predicate(self.rnd)}")

    def pylance_delete(self):
        lance.dataset(self.path).delete(f"k % {self.rnd.randint(3, 11)} = 1")

    def spark_update(self):
        column, value = self.rnd.choice([("i", "CASE WHEN i < 1000 THEN i + 7 END"), ("d", "d * -1"), ("s", "concat(s, 'x')"),
                                         ("k", "CASE WHEN k BETWEEN 0 AND 1000000000 THEN k + 100000 ELSE k END")])
        self.spark.sql(f"UPDATE {self.ident} SET {column} = {value} WHERE {predicate(self.rnd)}")

    def spark_merge(self):
        """A MERGE on a random column (often one with zone maps kept current), from a source of some of
        its values and some others: its target scan skips by the source's keys, so the rows it marks as
        matched and the rows it inserts are counted against the same join read without skipping."""
        self.merges += 1
        column = self.rnd.choice(self.maintained + INDEXABLE)
        plain = f"{self.ident} WITH ('data_skipping' = 'false')"
        source = f"{self.ident}_src"
        others = [f"SELECT CAST({literal(self.rnd, column)} AS {TYPES[column]})" for _ in range(self.rnd.randint(0, 4))]
        if self.rnd.random() < 0.3:
            others.append(f"SELECT CAST(NULL AS {TYPES[column]})")
        picked = f"SELECT {column} AS key FROM {plain} WHERE pmod(xxhash64({column}, {self.merges}), {self.rnd.choice([3, 10, 40])}) = 0"
        self.spark.sql(f"CREATE OR REPLACE TABLE {source} AS SELECT DISTINCT key FROM ({' UNION ALL '.join([picked] + others)})")
        matched = self.spark.sql(f"SELECT count(*) FROM {plain} t JOIN {source} s ON t.{column} = s.key").head()[0]
        unmatched = self.spark.sql(f"SELECT count(*) FROM {source} s LEFT ANTI JOIN {plain} t ON t.{column} = s.key").head()[0]
        marker, updated, inserted = (("i", -1000000 - self.merges, -2000000 - self.merges) if column == "s"
                                     else ("s", f"'m{self.merges}'", f"'n{self.merges}'"))
        self.spark.sql(f"MERGE INTO {self.ident} t USING {source} s ON t.{column} = s.key "
                       f"WHEN MATCHED THEN UPDATE SET {marker} = {updated} "
                       f"WHEN NOT MATCHED THEN INSERT ({column}, {marker}) VALUES (s.key, {inserted})")
        marked = self.spark.sql(f"SELECT {marker} = {updated}, count(*) FROM {plain} "
                                f"WHERE {marker} IN ({updated}, {inserted}) GROUP BY 1").collect()
        assert dict((r[0], r[1]) for r in marked) == {k: v for k, v in {True: matched, False: unmatched}.items() if v}, \
            (column, matched, unmatched, marked)

    def spark_compact(self):
        """sparklance's compaction, which also folds every zone map's segments into one."""
        self.spark.sql(f"CALL lance.system.compact(table => '{self.ident.split('.', 1)[1]}', "
                       f"target_rows_per_fragment => {self.rnd.choice([500, 2000])})")

    def compact(self):
        lance.dataset(self.path).optimize.compact_files(target_rows_per_fragment=self.rnd.choice([500, 2000]))

    def zonemap(self, column=None):
        column = column or self.rnd.choice(INDEXABLE + NESTED)
        config = IndexConfig("zonemap", {"rows_per_zone": self.rnd.choice([16, 100, 1000, 8192])})
        lance.dataset(self.path).create_scalar_index(column, config, name=f"{column.replace('.', '_')}_zm", replace=True)

    def btree(self, column=None):
        column = column or self.rnd.choice(["k", "i", "d", "s", "dt", "ts"] + NESTED)
        lance.dataset(self.path).create_scalar_index(column, "BTREE", name=f"{column.replace('.', '_')}_bt", replace=True)

    def bitmap(self, column=None):
        column = column or self.rnd.choice(["i", "s", "b", "dt"] + NESTED)
        lance.dataset(self.path).create_scalar_index(column, "BITMAP", name=f"{column.replace('.', '_')}_bm", replace=True)

    def nested_index(self):
        """A pylance index of a random kind on a field of `st`."""
        self.rnd.choice([self.zonemap, self.btree, self.bitmap])(self.rnd.choice(NESTED))

    def spark_zonemap(self):
        column = self.rnd.choice(INDEXABLE)
        self.spark.sql(f"CALL lance.system.create_index(table => '{self.ident.split('.', 1)[1]}', column => '{column}', "
                       f"name => '{column}_zm', rows_per_zone => {self.rnd.choice([16, 100, 1000])})")

    def refresh(self):
        ds = lance.dataset(self.path)
        # pylance 14 fails to build a segment of an index on a struct's field for new fragments ("No
        # column with name x"): those indices stay as built, covering fewer fragments as rows come.
        names = [i.name for i in ds.describe_indices() if not i.name.startswith("st_")]
        if names:
            ds.optimize.optimize_indices(num_indices_to_merge=self.rnd.choice([0, 1]), index_names=names)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_filters_with_and_without_skipping_agree(spark, warehouse, table_name, seed):
    rnd = random.Random(seed)
    path = table_path(warehouse, table_name)
    # Zone maps sparklance keeps current on two columns; the others only as the steps build them.
    maintained = ",".join(rnd.sample(INDEXABLE, 2))
    spark.sql(f"CREATE TABLE {table_name} ({DDL}) TBLPROPERTIES ('max_rows_per_file' = '300', 'optimize_write' = 'false', "
              f"'zonemap_columns' = '{maintained}')")
    w = Writer(spark, rnd, table_name, path, maintained.split(","))
    w.spark_append()
    w.zonemap()
    w.nested_index()
    w.spark_merge()
    steps = [w.spark_append, w.pylance_append, w.spark_delete, w.pylance_delete, w.spark_update, w.spark_merge, w.spark_merge, w.compact, w.spark_compact,
             w.zonemap, w.spark_zonemap, w.spark_zonemap, w.btree, w.bitmap, w.refresh]
    checked = 0
    for step in range(STEPS):
        rnd.choice(steps)()
        for _ in range(FILTERS_PER_STEP):
            where = predicate(rnd)
            columns = rnd.choice(["*", "k, s", "count(*)"])
            skipped = rows_of(spark, f"SELECT {columns} FROM {table_name} WHERE {where}")
            plain = rows_of(spark, f"SELECT {columns} FROM {table_name} WITH ('data_skipping' = 'false') WHERE {where}")
            assert skipped == plain, f"seed {seed} step {step}: WHERE {where}"
            checked += 1
    assert checked == STEPS * FILTERS_PER_STEP
    # The table is read by pylance as before.
    assert lance.dataset(path).count_rows() == spark.table(table_name).count()


@pytest.mark.parametrize("version", ["2.1", "2.2"])
def test_null_tests_on_fields_of_null_structs_find_every_row(spark, warehouse, table_name, version):
    """A field of a NULL struct is NULL: pylance reads it so from the files we write, its indices on
    the field count those rows as nulls, and our null tests on the field, which no index answers
    (older files store a value there), find them with and without data skipping, as DuckDB does."""
    path = table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT, st STRUCT<a: INT, c: STRING>) "
              f"TBLPROPERTIES ('data_storage_version' = '{version}', 'optimize_write' = 'false')")
    spark.sql(f"INSERT INTO {table_name} SELECT id, CASE WHEN id % 4 = 0 THEN NULL "
              "ELSE named_struct('a', CAST(id AS INT), 'c', CAST(id AS STRING)) END FROM range(400)")
    ds = lance.dataset(path)
    leaves = ds.to_table(columns={"id": "id", "a": "st.a", "c": "st.c"})
    assert sorted(leaves.filter(pc.is_null(leaves["a"]))["id"].to_pylist()) == list(range(0, 400, 4))
    assert leaves["c"].null_count == 100
    ds.create_scalar_index("st.a", "BTREE")
    ds.create_scalar_index("st.c", "BITMAP")
    ds = lance.dataset(path)
    oracle = duckdb.connect()
    oracle.register("t", ds.to_table())
    for where in ["st.a IS NULL", "NOT (st.a IS NOT NULL)", "st.a <=> NULL", "st.c IS NULL", "st.a IS NULL OR st.a = 5"]:
        expected = oracle.execute(f"SELECT count(*) FROM t WHERE {where.replace('<=>', 'IS NOT DISTINCT FROM')}").fetchone()[0]
        skipped = spark.sql(f"SELECT count(*) FROM {table_name} WHERE {where}").head()[0]
        plain = spark.sql(f"SELECT count(*) FROM {table_name} WITH ('data_skipping' = 'false') WHERE {where}").head()[0]
        assert skipped == plain == expected, (where, skipped, plain, expected)
    assert oracle.execute("SELECT count(*) FROM t WHERE st.a IS NULL").fetchone()[0] == 100
    # pylance answers through its own indices on the fields.
    for where in ["st.a IS NULL", "st.c IS NULL"]:
        assert ds.count_rows(filter=where) == 100, where
        assert "ScalarIndexQuery" in ds.scanner(filter=where).explain_plan(), where
    spark.sql(f"UPDATE {table_name} SET id = -1 - id WHERE st.a IS NULL")
    assert sorted(r.id for r in spark.sql(f"SELECT id FROM {table_name} WITH ('data_skipping' = 'false') WHERE id < 0").collect()) \
        == sorted(-1 - i for i in range(0, 400, 4))


def test_point_and_range_filters_read_only_the_zones_that_may_match(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    # Without the optimized write's shuffle the rows stay in key order, so zones of k are narrow.
    # No zone maps of its writes: the test is about the index pylance builds later.
    spark.sql(f"CREATE TABLE {table_name} (k BIGINT, v STRING) "
              "TBLPROPERTIES ('max_rows_per_file' = '10000', 'optimize_write' = 'false', 'zonemap_columns' = '')")
    spark.range(0, 50000).selectExpr("id AS k", "CAST(id AS STRING) AS v").coalesce(1).writeTo(table_name).append()
    ds = lance.dataset(path)
    assert len(ds.get_fragments()) == 5
    ds.create_scalar_index("k", IndexConfig("zonemap", {"rows_per_zone": 1000}), name="k_zm")
    # Rows appended after the index are not covered by it, and are read whole.
    spark.range(50000, 50100).selectExpr("id AS k", "CAST(id AS STRING) AS v").coalesce(1).writeTo(table_name).append()

    def scanned(where, options=""):
        return splits_read(spark.sql(f"SELECT * FROM {table_name} {options} WHERE {where}"))

    rows, splits = scanned("k = 12345")
    assert [r.k for r in rows] == [12345]
    # The one zone of 1,000 rows that holds it, and the uncovered fragment appended later.
    assert splits == 2
    # Two neighbouring zones, read as one span.
    rows, splits = scanned("k BETWEEN 20500 AND 21499")
    assert len(rows) == 1000 and splits == 2
    rows, splits = scanned("k = 50050")
    assert [r.k for r in rows] == [50050] and splits == 1
    rows, splits = scanned("k = 12345", "WITH ('data_skipping' = 'false')")
    assert [r.k for r in rows] == [12345] and splits == 6
    # pylance itself reads the same answers through its index.
    assert ds.to_table(filter="k = 12345").num_rows == 1


def test_create_index_builds_a_zone_map_pylance_uses_and_drop_index_removes_it(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    short = table_name.split(".", 1)[1]
    # No zone maps of its writes: only those create_index builds.
    spark.sql(f"CREATE TABLE {table_name} (k BIGINT, d DOUBLE, s STRING) "
              "TBLPROPERTIES ('max_rows_per_file' = '4000', 'optimize_write' = 'false', 'zonemap_columns' = '')")
    spark.range(0, 20000).selectExpr("id AS k", "CASE WHEN id % 7 = 0 THEN CAST('NaN' AS DOUBLE) WHEN id % 11 = 0 THEN NULL "
                                     "ELSE id * 0.5 END AS d", "concat('v', lpad(CAST(id AS STRING), 6, '0')) AS s") \
        .coalesce(1).writeTo(table_name).append()
    spark.sql(f"DELETE FROM {table_name} WHERE k BETWEEN 100 AND 299")
    result = spark.sql(f"CALL lance.system.create_index(table => '{short}', column => 'k', rows_per_zone => 1000)").head()
    assert (result.name, result.index_type, result.fragments, result.segments) == ("k_idx", "ZONEMAP", 5, 1) and result.zones >= 5
    spark.sql(f"CALL lance.system.create_index(table => '{short}', column => 'd', name => 'd_zm', rows_per_zone => 500)")
    spark.sql(f"CALL lance.system.create_index(table => '{short}', column => 's', type => 'ZONEMAP')")

    ds = lance.dataset(path)
    indices = {i.name: i for i in ds.describe_indices()}
    assert set(indices) == {"k_idx", "d_zm", "s_idx"}
    assert all(i.index_type == "ZoneMap" and [sorted(s.fragment_ids) for s in i.segments] == [[0, 1, 2, 3, 4]]
               for i in indices.values())
    # pylance answers through our zone maps exactly what a plain scan answers, and says it used them.
    for where in ["k = 12345", "k BETWEEN 150 AND 1200", "k < 5", "d = 1000.5", "d > 9990.0", "d IS NULL",
                  "s = 'v012345'", "s >= 'v019990'", "s LIKE 'v0003%'"]:
        indexed = ds.to_table(filter=where, use_scalar_index=True).sort_by("k").to_pylist()
        plain = ds.to_table(filter=where, use_scalar_index=False).sort_by("k").to_pylist()
        assert repr(indexed) == repr(plain) and len(plain) > 0, where
        assert "ScalarIndexQuery" in ds.scanner(filter=where, use_scalar_index=True).explain_plan(), where
    # So does Spark, reading only the zones that may match.
    df = spark.sql(f"SELECT k FROM {table_name} WHERE k = 12345")
    rows, splits = splits_read(df)
    assert [r.k for r in rows] == [12345] and splits == 1
    assert spark.sql(f"SELECT count(*) FROM {table_name} WHERE k BETWEEN 150 AND 1200").head()[0] == 1051 - 150

    # Built again after an append, an index of the same name replaces the old one and covers the new fragment.
    spark.range(20000, 20100).selectExpr("id AS k", "0.0 AS d", "'new' AS s").coalesce(1).writeTo(table_name).append()
    spark.sql(f"CALL lance.system.create_index(table => '{short}', column => 'k', rows_per_zone => 1000)")
    k_segments = [s for i in lance.dataset(path).describe_indices() if i.name == "k_idx" for s in i.segments]
    assert len(k_segments) == 1 and sorted(k_segments[0].fragment_ids) == [0, 1, 2, 3, 4, 5]
    listed = {r.name: r for r in spark.sql(f"SELECT * FROM {table_name}.indices").collect()}
    assert set(listed) == {"k_idx", "d_zm", "s_idx"}
    assert (listed["k_idx"].type, listed["k_idx"].columns, listed["k_idx"].uuid) == ("ZoneMap", ["k"], k_segments[0].uuid)
    assert listed["k_idx"].fragment_ids == [0, 1, 2, 3, 4, 5] and listed["k_idx"].unindexed_fragment_ids == []
    assert listed["d_zm"].unindexed_fragment_ids == [5] and listed["d_zm"].skips_data
    df = spark.sql(f"SELECT k FROM {table_name} WHERE k = 20050")
    rows, splits = splits_read(df)
    assert [r.k for r in rows] == [20050] and splits == 1

    dropped = spark.sql(f"CALL lance.system.drop_index(table => '{short}', name => 'k_idx')").head()
    assert (dropped.name, dropped.segments) == ("k_idx", 1)
    assert {i.name for i in lance.dataset(path).describe_indices()} == {"d_zm", "s_idx"}
    df = spark.sql(f"SELECT k FROM {table_name} WHERE k = 12345")
    rows, splits = splits_read(df)
    assert [r.k for r in rows] == [12345] and splits == 6
    with pytest.raises(Exception, match="no index named 'k_idx'"):
        spark.sql(f"CALL lance.system.drop_index(table => '{short}', name => 'k_idx')")
    with pytest.raises(Exception, match=r"LANCE_INVALID_ARGUMENT.*builds 'zonemap', 'BTREE', 'BITMAP', 'LABEL_LIST', 'INVERTED' \(or 'FTS'\), 'IVF_FLAT', 'IVF_PQ' and 'IVF_SQ' indices, not 'ngram'"):
        spark.sql(f"CALL lance.system.create_index(table => '{short}', column => 'k', type => 'ngram')")
    versions_before = len(lance.dataset(path).versions())
    with pytest.raises(Exception, match="no top-level column 'nope'"):
        spark.sql(f"CALL lance.system.create_index(table => '{short}', column => 'nope')")
    assert len(lance.dataset(path).versions()) == versions_before


def test_pylance_btree_selects_the_rows_of_matching_values(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    # No zone maps of its writes: only pylance's BTREE selects rows.
    spark.sql(f"CREATE TABLE {table_name} (k BIGINT, s STRING) TBLPROPERTIES ('max_rows_per_file' = '5000', "
              "'zonemap_columns' = '')")
    # Keys in random order: a zone map could not skip anything, a BTREE still finds the rows.
    spark.range(0, 20000).selectExpr("(id * 7919) % 20000 AS k", "CAST(id AS STRING) AS s").coalesce(1) \
        .writeTo(table_name).append()
    spark.sql(f"DELETE FROM {table_name} WHERE k = 777")
    lance.dataset(path).create_scalar_index("k", "BTREE")
    spark.range(20000, 20010).selectExpr("id AS k", "'late' AS s").coalesce(1).writeTo(table_name).append()

    def read(where):
        rows, splits = splits_read(spark.sql(f"SELECT k FROM {table_name} WHERE {where}"))
        return sorted(r.k for r in rows), splits

    assert read("k = 12345") == ([12345], 2)  # its fragment's one row, and the fragment appended after the index
    assert read("k = 777") == ([], 1)  # deleted before the index was built: only the appended fragment is read
    assert read("k IN (1, 2, 20005)")[0] == [1, 2, 20005]
    assert read("k BETWEEN 100 AND 199 OR s = 'late'")[0] == list(range(100, 200)) + list(range(20000, 20010))
    assert read("k > 19990")[0] == list(range(19991, 20010))


def test_zonemap_columns_cover_every_fragment_a_write_adds_in_the_same_commit(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    short = table_name.split(".", 1)[1]
    spark.sql(f"CREATE TABLE {table_name} TBLPROPERTIES ('zonemap_columns' = 'k, s', 'max_rows_per_file' = '3000', "
              "'optimize_write' = 'false') AS SELECT id AS k, CAST(id AS STRING) AS s, id * 0.5 AS v FROM range(0, 9000)")

    def coverage():
        rows = spark.sql(f"SELECT name, columns, fragment_ids, unindexed_fragment_ids FROM {table_name}.indices").collect()
        fragments = sorted(f.fragment_id for f in lance.dataset(path).get_fragments())
        return rows, fragments

    def check(expected_rows):
        rows, fragments = coverage()
        names = {r.name for r in rows}
        assert names == {"k_idx", "s_idx"}, rows
        for name in names:
            covered = sorted(f for r in rows if r.name == name for f in r.fragment_ids if f in fragments)
            assert covered == fragments, (name, rows, fragments)
        assert spark.sql(f"SELECT count(*) FROM {table_name}").head()[0] == expected_rows
        # pylance answers through the zone maps what a plain scan answers.
        ds = lance.dataset(path)
        for where in ["k = 4321", "k BETWEEN 20000 AND 20100", "s = '777'"]:
            indexed = ds.to_table(filter=where, use_scalar_index=True).sort_by("k").to_pylist()
            assert indexed == ds.to_table(filter=where, use_scalar_index=False).sort_by("k").to_pylist(), where

    check(9000)
    versions = len(lance.dataset(path).versions())
    spark.range(20000, 26000).selectExpr("id AS k", "CAST(id AS STRING) AS s", "0.0 AS v").writeTo(table_name).append()
    assert len(lance.dataset(path).versions()) == versions + 1
    check(15000)
    spark.sql(f"UPDATE {table_name} SET v = -1 WHERE k % 10 = 3")
    check(15000)
    spark.sql(f"MERGE INTO {table_name} t USING (SELECT id AS k, CAST(id AS STRING) AS s, 9.0 AS v FROM range(25990, 26100)) src "
              "ON t.k = src.k WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    check(15100)
    spark.sql(f"DELETE FROM {table_name} WHERE k < 100")
    check(15000)
    # A point filter reads one zone of the fragment holding the key, whatever was written since.
    df = spark.sql(f"SELECT k, v FROM {table_name} WHERE k = 26050")
    rows, splits = splits_read(df)
    assert [tuple(r) for r in rows] == [(26050, 9.0)] and splits == 1
    before = len(lance.dataset(path).get_fragments())
    compacted = spark.sql(f"CALL lance.system.compact(table => '{short}', target_rows_per_fragment => 100000)").head()
    assert compacted.fragments_removed >= 2 and len(lance.dataset(path).get_fragments()) < before
    check(15000)
    # compact also folds each column's write-time segments into one.
    assert sorted(r.name for r in coverage()[0]) == ["k_idx", "s_idx"]
    spark.sql(f"INSERT OVERWRITE {table_name} SELECT id AS k, CAST(id AS STRING) AS s, 1.0 AS v FROM range(0, 5000)")
    check(5000)
    # create_index folds the write-time segments of a column into one.
    spark.sql(f"CALL lance.system.create_index(table => '{short}', column => 'k')")
    assert [len(i.segments) for i in lance.dataset(path).describe_indices() if i.name == "k_idx"] == [1]
    check(5000)


def test_zone_map_segments_piling_up_from_writes_are_folded_into_one(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {table_name} TBLPROPERTIES ('zonemap_columns' = 'k', 'optimize_write' = 'false') "
              "AS SELECT id AS k, id * 0.5 AS v FROM range(0, 1000)")
    # The index's zone size, chosen here, is the one later writes and the fold keep.
    spark.sql(f"CALL lance.system.create_index(table => '{table_name.split('.', 1)[1]}', column => 'k', rows_per_zone => 250)")
    deleted = set()

    def segments():
        return [r.fragment_ids for r in spark.sql(f"SELECT fragment_ids FROM {table_name}.indices WHERE name = 'k_idx'").collect()]

    for n in range(1, 16):
        start = n * 1000
        versions = len(lance.dataset(path).versions())
        spark.range(start, start + 1000).selectExpr("id AS k", "id * 0.5 AS v").coalesce(1).writeTo(table_name).append()
        if n < 15:
            assert len(segments()) == n + 1 and len(lance.dataset(path).versions()) == versions + 1
        if n % 4 == 0:
            spark.sql(f"DELETE FROM {table_name} WHERE k = {start + 7}")
            deleted.add(start + 7)
    # The 16th segment (the CREATE's and 15 appends') made the write fold them into its own, in its
    # own version: one segment covering every fragment, each of its zones as before.
    assert len(lance.dataset(path).versions()) == versions + 1
    fragments = sorted(f.fragment_id for f in lance.dataset(path).get_fragments())
    assert [sorted(s) for s in segments()] == [fragments]
    [index] = lance.dataset(path).describe_indices()
    zones = LanceFileReader(os.path.join(path, "_indices", index.segments[0].uuid, "zonemap.lance")).read_all().to_table()
    assert set(zones["zone_length"].to_pylist()) == {250} and zones.num_rows == 16 * 4
    for k in (5, 8007, 12007, 15999, 16000):
        df = spark.sql(f"SELECT k FROM {table_name} WHERE k = {k}")
        rows, splits = splits_read(df)
        assert [r.k for r in rows] == ([] if k in deleted or k >= 16000 else [k]) and splits <= 1, k
    ds = lance.dataset(path)
    for where in ["k = 4321", "k BETWEEN 9000 AND 9100", "k >= 16990"]:
        indexed = ds.to_table(filter=where, use_scalar_index=True).sort_by("k").to_pylist()
        assert indexed == ds.to_table(filter=where, use_scalar_index=False).sort_by("k").to_pylist(), where
    assert "ScalarIndexQuery" in ds.scanner(filter="k = 4321").explain_plan()


def test_zonemap_columns_follow_a_renamed_column_and_let_go_of_a_dropped_one(spark, warehouse, table_name):
    spark.sql(f"CREATE TABLE {table_name} TBLPROPERTIES ('zonemap_columns' = 'k,s') AS "
              "SELECT id AS k, CAST(id AS STRING) AS s, id * 0.5 AS v FROM range(0, 100)")

    def listed():
        return spark.sql(f"SHOW TBLPROPERTIES {table_name} ('zonemap_columns')").head().value

    def zoned_columns_of_last_fragment():
        last = max(f.fragment_id for f in lance.dataset(table_path(warehouse, table_name)).get_fragments())
        return sorted(r.columns[0] for r in spark.sql(f"SELECT columns, fragment_ids FROM {table_name}.indices").collect()
                      if last in r.fragment_ids)

    spark.sql(f"ALTER TABLE {table_name} RENAME COLUMN s TO label")
    assert listed() == "k,label"
    spark.sql(f"INSERT INTO {table_name} VALUES (100, '100', 50.0)")
    assert zoned_columns_of_last_fragment() == ["k", "label"]
    spark.sql(f"ALTER TABLE {table_name} DROP COLUMN k")
    assert listed() == "label"
    spark.sql(f"INSERT INTO {table_name} VALUES ('101', 50.5)")
    assert zoned_columns_of_last_fragment() == ["label"]
    assert spark.sql(f"SELECT count(*) FROM {table_name} WHERE label = '101'").head()[0] == 1
    spark.sql(f"ALTER TABLE {table_name} DROP COLUMN label")
    # A list that drops empty becomes '' (none), which is also what an unset property means.
    assert listed() in ("", None) or "does not have property" in listed()


def test_racing_appends_each_commit_zones_for_the_fragment_ids_they_land_with(spark, warehouse, table_name):
    import threading
    path = table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {table_name} (k BIGINT, w INT) TBLPROPERTIES ('zonemap_columns' = 'k', 'optimize_write' = 'false')")
    errors = []
    per_writer = 7

    def writer(w):
        try:
            for n in range(per_writer):
                start = (w * per_writer + n) * 1000
                spark.range(start, start + 1000).selectExpr("id AS k", f"{w} AS w").coalesce(1).writeTo(table_name).append()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    ds = lance.dataset(path)
    fragments = sorted(f.fragment_id for f in ds.get_fragments())
    segments = ds.describe_indices()
    assert len(fragments) == 3 * per_writer
    history = spark.sql(f"SELECT version, read_version, operation FROM {table_name}.history").collect()
    # The writers raced: commits landed over others', each attempt building its segments for the
    # ids it was about to commit with.
    assert sum(1 for h in history if h.operation == "Append" and h.read_version < h.version - 1) >= 1
    # The 16th segment made a writer fold them into its own, in its Append's version, while the
    # others kept appending: one segment covers many appends' fragments, and no version of its own.
    assert any(len(seg.fragment_ids) > 1 for s in segments for seg in s.segments), segments
    assert not any(h.operation == "CreateIndex" for h in history), history
    # Every fragment covered by exactly one segment, with the ids its commit assigned.
    covered = sorted(f for s in segments for seg in s.segments for f in seg.fragment_ids)
    assert covered == fragments, (covered, fragments)
    # Segments built for attempts that lost a race were removed: every directory left is one a
    # version of the table names (folded segments stay for older versions until a cleanup).
    named = {seg.uuid for v in ds.versions() for s in lance.dataset(path, version=v["version"]).describe_indices()
             for seg in s.segments}
    assert sorted(os.listdir(os.path.join(path, "_indices"))) == sorted(named)
    for k in [0, 5999, 11999, 20999]:
        df = spark.sql(f"SELECT k FROM {table_name} WHERE k = {k}")
        rows, splits = splits_read(df)
        assert [r.k for r in rows] == [k] and splits == 1
        assert ds.to_table(filter=f"k = {k}", use_scalar_index=True).num_rows == 1


def test_pylance_bitmap_selects_the_rows_of_matching_values(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    spark.sql(f"CREATE TABLE {table_name} (k BIGINT, w STRING) "
              "TBLPROPERTIES ('max_rows_per_file' = '4000', 'optimize_write' = 'false')")
    # Fragment i holds the rows of k // 4000 = i; every 7th row has w NULL.
    spark.range(0, 16000).selectExpr("id AS k", "CASE WHEN id % 7 = 0 THEN NULL ELSE concat('w', CAST(id DIV 4000 AS STRING)) END AS w") \
        .coalesce(1).writeTo(table_name).append()
    lance.dataset(path).create_scalar_index("w", "BITMAP")

    def read(where):
        rows, splits = splits_read(spark.sql(f"SELECT k FROM {table_name} WHERE {where}"))
        return sorted(r.k for r in rows), splits

    keys, splits = read("w = 'w2'")
    assert keys == [k for k in range(8000, 12000) if k % 7 != 0] and splits == 1
    keys, splits = read("w IN ('w0', 'w3')")
    assert keys == [k for k in list(range(0, 4000)) + list(range(12000, 16000)) if k % 7 != 0] and splits == 2
    keys, _ = read("w IS NULL")
    assert keys == list(range(0, 16000, 7))
    assert read("w = 'nope'") == ([], 0)


def test_zonemap_columns_must_name_columns_with_zone_maps(spark, warehouse, table_name):
    path = table_path(warehouse, table_name)
    with pytest.raises(Exception, match="'nope' is not a top-level column"):
        spark.sql(f"CREATE TABLE {table_name} (k BIGINT, st STRUCT<x: INT>) TBLPROPERTIES ('zonemap_columns' = 'k, nope')")
    spark.sql(f"CREATE TABLE {table_name} (k BIGINT, st STRUCT<x: INT>) TBLPROPERTIES ('zonemap_columns' = 'k')")
    versions = len(lance.dataset(path).versions())
    with pytest.raises(Exception, match="'st' is of type Struct, which has no zone map"):
        spark.sql(f"ALTER TABLE {table_name} SET TBLPROPERTIES ('zonemap_columns' = 'k, st')")
    assert len(lance.dataset(path).versions()) == versions
    assert spark.sql(f"SHOW TBLPROPERTIES {table_name} ('zonemap_columns')").head().value == "k"
