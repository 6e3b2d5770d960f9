"""Random DELETE / UPDATE / MERGE statements valid, with the same meaning, in Spark SQL and DuckDB.

Target table t(id BIGINT NOT NULL, a INT, b STRING, c DOUBLE); source table s of the same shape
with unique ids (so MERGE never hits a cardinality violation). Values are small integers, a few
strings and halves, so arithmetic stays exact in both engines."""
import random

WORDS = ["x", "y", "zz", "", "long-word"]


def _lit_a(r):
    return "NULL" if r.random() < 0.15 else str(r.randint(-3, 12))


def _lit_b(r):
    return "NULL" if r.random() < 0.15 else f"'{r.choice(WORDS)}'"


def _lit_c(r):
    return "NULL" if r.random() < 0.15 else str(r.randint(-10, 20) / 2)


def random_rows(r, ids):
    return [(i,
             None if r.random() < 0.15 else r.randint(-3, 12),
             None if r.random() < 0.15 else r.choice(WORDS),
             None if r.random() < 0.15 else r.randint(-10, 20) / 2) for i in ids]


def predicate(r, alias="t", depth=0, subqueries=True):
    col = lambda name: f"{alias}.{name}" if alias else name
    kinds = [
        lambda: f"{col('a')} > {r.randint(-2, 10)}",
        lambda: f"{col('a')} <= {r.randint(-2, 10)}",
        lambda: f"{col('a')} IS NULL",
        lambda: f"{col('b')} IS NOT NULL",
        lambda: f"{col('b')} = '{r.choice(WORDS)}'",
        lambda: f"{col('c')} < {r.randint(-5, 10)}",
        lambda: f"{col('id')} % {r.randint(2, 7)} = {r.randint(0, 1)}",
        lambda: f"{col('a')} IN ({_lit_a(r)}, {_lit_a(r)}, {r.randint(0, 5)})",
        lambda: f"{col('b')} NOT IN ('{r.choice(WORDS)}', {_lit_b(r)})",
        lambda: f"{col('id')} IN (SELECT id FROM s WHERE s.a > {r.randint(-2, 10)})",
        lambda: f"EXISTS (SELECT 1 FROM s WHERE s.id = {col('id')} AND s.b IS NOT NULL)",
        lambda: f"NOT EXISTS (SELECT 1 FROM s WHERE s.id = {col('id')})",
        lambda: f"{col('c')} + {col('a')} > {r.randint(0, 15)}",
    ]
    if not subqueries:
        kinds = [k for k in kinds if "SELECT" not in k()]
    p = r.choice(kinds)()
    if depth < 1 and r.random() < 0.3:
        p = f"({p}) {r.choice(['AND', 'OR'])} ({predicate(r, alias, depth + 1, subqueries)})"
    if r.random() < 0.1:
        p = f"NOT ({p})"
    return p


def _set_clause(r, src):
    """SET assignments for an update; `src` is the source alias in MERGE or None."""
    options = {
        "a": [f"t.a + {r.randint(1, 3)}", _lit_a(r), "NULL"] + ([f"{src}.a", f"{src}.a - t.a"] if src else []),
        "b": [f"t.b || '{r.choice(WORDS)}'", _lit_b(r)] + ([f"{src}.b"] if src else []),
        "c": [f"t.c * 2", f"t.c + {r.randint(1, 4) / 2}", _lit_c(r)] + ([f"{src}.c"] if src else []),
    }
    cols = r.sample(sorted(options), r.randint(1, 3))
    return ", ".join(f"{c} = {r.choice(options[c])}" for c in cols)


def _clauses(r, count, make_condition, make_action, head):
    """`count` clauses of one kind; only the last may omit its condition (Spark's rule)."""
    out = []
    for k in range(count):
        last = k == count - 1
        cond = f" AND ({make_condition()})" if (not last or r.random() < 0.6) else ""
        out.append(f"{head}{cond} THEN {make_action()}")
    return out


def _merge(r):
    matched_action = lambda: f"UPDATE SET {_set_clause(r, 's')}" if r.random() < 0.6 else "DELETE"
    clauses = _clauses(r, r.randint(0, 2), lambda: predicate(r, r.choice(["t", "s"]), subqueries=False),
                       matched_action, "WHEN MATCHED")
    if r.random() < 0.3 and all(" AND " in c.split(" THEN ")[0] for c in clauses):
        clauses.append("WHEN MATCHED THEN UPDATE SET a = s.a, b = s.b, c = s.c")
    clauses += _clauses(r, r.randint(0, 2), lambda: predicate(r, "s", subqueries=False),
                        lambda: "INSERT (id, a, b, c) VALUES (s.id, s.a, s.b, s.c)", "WHEN NOT MATCHED")
    by_source_action = lambda: f"UPDATE SET {_set_clause(r, None)}" if r.random() < 0.5 else "DELETE"
    clauses += _clauses(r, r.randint(0, 2), lambda: predicate(r, "t", subqueries=False),
                        by_source_action, "WHEN NOT MATCHED BY SOURCE")
    if not clauses:
        clauses.append("WHEN NOT MATCHED THEN INSERT (id, a, b, c) VALUES (s.id, s.a, s.b, s.c)")
    on = "t.id = s.id" if r.random() < 0.8 else f"t.id = s.id AND ({predicate(r, 's', subqueries=False)})"
    return f"MERGE INTO {{t}} t USING {{s}} s ON {on} " + " ".join(clauses)


def statement(r):
    """A template with {t} (target) and {s} (source) to fill per engine; subqueries name `s` too."""
    kind = r.random()
    if kind < 0.25:
        return f"DELETE FROM {{t}} t WHERE {predicate(r)}"
    if kind < 0.5:
        return f"UPDATE {{t}} t SET {_set_clause(r, None)} WHERE {predicate(r)}"
    return _merge(r)
