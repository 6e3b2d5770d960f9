"""Schema evolution, randomized and differential: random ALTER TABLE statements (add, drop, rename,
widen a type, drop NOT NULL) interleaved with INSERT / UPDATE / DELETE / MERGE run on a sparklance
table and on a DuckDB table; after every statement both hold the same columns (names, in order)
and rows, and pylance reads the same every few statements. On file formats 2.0 and 2.2, with and
without stable row ids."""
import random

import duckdb
import lance
import pytest

from conftest import table_path

STATEMENTS = 32
WORDS = ["x", "y", "zz", ""]
# Spark and DuckDB spellings of each type, and the widenings ALTER COLUMN ... TYPE makes.
DUCK = {"INT": "INTEGER", "BIGINT": "BIGINT", "FLOAT": "FLOAT", "DOUBLE": "DOUBLE", "STRING": "VARCHAR"}
WIDER = {"INT": "BIGINT", "FLOAT": "DOUBLE"}


def _value(r, kind):
    if r.random() < 0.15:
        return None
    if kind in ("INT", "BIGINT"):
        return r.randint(-5, 30)
    if kind in ("FLOAT", "DOUBLE"):
        return r.randint(-20, 40) / 2   # halves: exact in float and double
    return r.choice(WORDS)


def _sql(v):
    if v is None:
        return "NULL"
    return f"'{v}'" if isinstance(v, str) else repr(v)


def _key(row):
    return tuple((1, 0) if v is None else (0, v) for v in row)


class Table:
    """The schema both engines should have: [(name, spark type)], id first."""

    def __init__(self):
        self.columns = [("id", "BIGINT"), ("a", "INT"), ("b", "STRING"), ("c", "FLOAT")]
        self.next_id = 0
        self.next_name = 0

    def others(self):
        return [c for c in self.columns if c[0] != "id"]

    def fresh_ids(self, n):
        ids = list(range(self.next_id, self.next_id + n))
        self.next_id += n
        return ids


def _alter(r, t):
    """An ALTER TABLE template valid in both engines, and the schema after it."""
    kinds = ["add", "add", "rename", "widen", "nullable"] + (["drop"] if len(t.others()) > 1 else [])
    kind = r.choice(kinds)
    cols = t.others()
    if kind == "add":
        name, tpe = f"n{t.next_name}", r.choice(list(DUCK))
        t.next_name += 1
        t.columns.append((name, tpe))
        return f"ALTER TABLE {{t}} ADD COLUMN {name} {{{tpe}}}"
    if kind == "drop":
        name = r.choice(cols)[0]
        t.columns = [c for c in t.columns if c[0] != name]
        return f"ALTER TABLE {{t}} DROP COLUMN {name}"
    if kind == "rename":
        old = r.choice(cols)[0]
        new = f"r{t.next_name}"
        t.next_name += 1
        t.columns = [(new if n == old else n, k) for n, k in t.columns]
        return f"ALTER TABLE {{t}} RENAME COLUMN {old} TO {new}"
    widenable = [c for c in cols if c[1] in WIDER]
    if kind == "widen" and widenable:
        name, tpe = r.choice(widenable)
        t.columns = [(n, WIDER[k] if n == name else k) for n, k in t.columns]
        return f"ALTER TABLE {{t}} ALTER COLUMN {name} TYPE {{{WIDER[tpe]}}}"
    return "ALTER TABLE {t} ALTER COLUMN id DROP NOT NULL"


def _predicate(r, t, alias="t"):
    name, kind = r.choice(t.columns)
    col = f"{alias}.{name}"
    options = [f"{col} IS NULL", f"{alias}.id % {r.randint(2, 5)} = {r.randint(0, 1)}"]
    if kind == "STRING":
        options.append(f"{col} = '{r.choice(WORDS)}'")
    else:
        options.append(f"{col} > {r.randint(-3, 20)}")
    return r.choice(options)


def _assignment(r, t, source=None):
    name, kind = r.choice(t.others())
    if source and r.random() < 0.5:
        return f"{name} = {source}.{name}"
    if kind == "STRING":
        return r.choice([f"{name} = t.{name} || '{r.choice(WORDS)}'", f"{name} = {_sql(_value(r, kind))}"])
    return r.choice([f"{name} = t.{name} + 1", f"{name} = {_sql(_value(r, kind))}"])


def _dml(r, t, spark, con):
    kind = r.random()
    names = ", ".join(n for n, _ in t.columns)
    if kind < 0.3:
        rows = [[i] + [_value(r, k) for _, k in t.others()] for i in t.fresh_ids(r.randint(1, 8))]
        return f"INSERT INTO {{t}} ({names}) VALUES " + ", ".join("(" + ", ".join(map(_sql, row)) + ")" for row in rows)
    if kind < 0.55:
        return f"UPDATE {{t}} t SET {_assignment(r, t)} WHERE {_predicate(r, t)}"
    if kind < 0.7:
        return f"DELETE FROM {{t}} t WHERE {_predicate(r, t)}"
    # MERGE from a source of the current columns: some existing ids, some new.
    ids = sorted(set(r.sample(range(max(1, t.next_id)), min(t.next_id, 6))) | set(t.fresh_ids(r.randint(0, 4))))
    rows = [tuple([i] + [_value(r, k) for _, k in t.others()]) for i in ids]
    spark.createDataFrame(rows, ", ".join(f"{n} {k}" for n, k in t.columns)).createOrReplaceTempView("evo_src")
    con.execute("DROP TABLE IF EXISTS evo_src")
    con.execute("CREATE TABLE evo_src (" + ", ".join(f"{n} {DUCK[k]}" for n, k in t.columns) + ")")
    if rows:
        con.executemany(f"INSERT INTO evo_src VALUES ({', '.join('?' for _ in t.columns)})", rows)
    values = ", ".join(f"s.{n}" for n, _ in t.columns)
    return (f"MERGE INTO {{t}} t USING evo_src s ON t.id = s.id WHEN MATCHED AND {_predicate(r, t, 's')} THEN DELETE "
            f"WHEN MATCHED THEN UPDATE SET {_assignment(r, t, 's')} "
            f"WHEN NOT MATCHED THEN INSERT ({names}) VALUES ({values})")


def _fill(template, table, dialect):
    return template.format(t=table, **(DUCK if dialect == "duck" else {k: k for k in DUCK}))


@pytest.mark.parametrize("version,stable", [("2.0", False), ("2.0", True), ("2.2", False), ("2.2", True)])
def test_random_schema_evolution_matches_duckdb(spark, warehouse, table_name, version, stable):
    r = random.Random(f"{version}-{stable}")
    t = Table()
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT NOT NULL, a INT, b STRING, c FLOAT) TBLPROPERTIES "
              f"('data_storage_version' = '{version}', 'enable_stable_row_ids' = '{str(stable).lower()}', "
              "'max_rows_per_file' = '16', 'optimize_write' = 'false')")
    con = duckdb.connect()
    con.execute("CREATE TABLE t (id BIGINT NOT NULL, a INTEGER, b VARCHAR, c FLOAT)")
    path = table_path(warehouse, table_name)
    kinds = set()
    for i in range(STATEMENTS):
        template = _alter(r, t) if i > 1 and r.random() < 0.35 else _dml(r, t, spark, con)
        kinds.add(template.split()[0] + (" " + template.split()[3] if template.startswith("ALTER") else ""))
        spark.sql(_fill(template, table_name, "spark"))
        con.execute(_fill(template, "t", "duck"))
        where = f"statement {i}: {template}"
        names = [n for n, _ in t.columns]
        assert spark.table(table_name).columns == names == [c[0] for c in con.execute("DESCRIBE t").fetchall()], where
        assert [f.dataType.simpleString() for f in spark.table(table_name).schema] == \
            [{"STRING": "string", "INT": "int"}.get(k, k.lower()) for _, k in t.columns], where
        want = sorted(con.execute(f"SELECT {', '.join(names)} FROM t").fetchall(), key=_key)
        assert sorted((tuple(row) for row in spark.table(table_name).collect()), key=_key) == want, where
        if i % 6 == 5 or i == STATEMENTS - 1:
            tbl = lance.dataset(path).to_table()
            assert tbl.column_names == names, where
            assert sorted(zip(*(tbl.column(n).to_pylist() for n in names)), key=_key) == want, f"pylance after {where}"
    assert {"ALTER ADD", "INSERT", "UPDATE", "MERGE"} <= kinds and len([k for k in kinds if k.startswith("ALTER")]) >= 3, kinds
