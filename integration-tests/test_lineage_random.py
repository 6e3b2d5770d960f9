"""Stable row ids, randomized: eighty random INSERT / UPDATE / DELETE / MERGE statements on a
table created with enable_stable_row_ids, per seed. A plain-Python oracle tracks logical rows by key (values,
row id, created-at and last-updated-at versions) and logs each commit's changes. After every
statement the table's rows and lineage columns equal the oracle's (pylance reads the same every
few statements); a statement that changes no row commits no version; new rows get row ids never
used before. Every so often CHANGES FROM VERSION a TO VERSION b, in its delete+insert,
computeUpdates and netChanges forms, equals the oracle's diff, and the history table's per-version
counts equal the oracle's.

Statements are built so the oracle can tell which keys each one inserts, updates or deletes with
a small evaluator: predicates are explicit key lists / ranges / residues and simple comparisons of
v and s, evaluated with SQL's three-valued NULL logic; MERGE sources are explicit rows."""
import random
from collections import Counter

import lance
import pytest

import sparklance
from conftest import table_path

STATEMENTS_PER_SEED = 60
CHANGE_PAIRS_FINAL = 15
WORDS = ["a", "b", "cc", "", "zz"]
LINEAGE = ["_rowid", "_row_created_at_version", "_row_last_updated_at_version"]
SELECT_COLS = "id, v, s, " + ", ".join(LINEAGE) + ", _rowaddr, _fragid"
CHANGE_COLS = "id, v, s, _rowid, _change_type, _commit_version"


# ---------------------------------------------------------------------------------------------
# Three-valued logic and a tiny expression language: (sql text, evaluator over an env dict that
# maps "t.v", "s.id", ... to Python values, None being NULL).

def _and(a, b):
    if a is False or b is False:
        return False
    return None if a is None or b is None else True


def _or(a, b):
    if a is True or b is True:
        return True
    return None if a is None or b is None else False


def _not(a):
    return None if a is None else not a


def _null_or(x, f):
    return None if x is None else f(x)


def _lit_v(r):
    return None if r.random() < 0.15 else r.randint(-5, 20)


def _lit_s(r):
    return None if r.random() < 0.15 else r.choice(WORDS)


def _sql(value):
    if value is None:
        return "NULL"
    return f"'{value}'" if isinstance(value, str) else str(value)


def _key_atom(r, a, keys):
    """A predicate on `a.id` naming explicit keys."""
    col = f"{a}.id"
    kind = r.randrange(3)
    if kind == 0 or not keys:
        ks = sorted(set(r.sample(keys, min(len(keys), r.randint(1, 8)))) | {r.randint(0, 10_000)})
        return f"{col} IN ({', '.join(map(str, ks))})", lambda e: _null_or(e[col], lambda x: x in ks)
    if kind == 1:
        lo = r.choice(keys)
        hi = lo + r.randint(0, 12)
        return f"{col} BETWEEN {lo} AND {hi}", lambda e: _null_or(e[col], lambda x: lo <= x <= hi)
    m, k = r.randint(5, 11), r.randint(0, 4)
    return f"{col} % {m} = {k}", lambda e: _null_or(e[col], lambda x: x % m == k)


def _value_atom(r, a):
    v, s = f"{a}.v", f"{a}.s"
    k, k2, w, w2 = r.randint(-5, 25), r.randint(-5, 25), r.choice(WORDS), r.choice(WORDS)
    atoms = [
        (f"{v} > {k}", lambda e: _null_or(e[v], lambda x: x > k)),
        (f"{v} <= {k}", lambda e: _null_or(e[v], lambda x: x <= k)),
        (f"{v} = {k}", lambda e: _null_or(e[v], lambda x: x == k)),
        (f"{v} IS NULL", lambda e: e[v] is None),
        (f"{v} IS NOT NULL", lambda e: e[v] is not None),
        (f"{v} IN ({k}, NULL)", lambda e: _null_or(e[v], lambda x: True if x == k else None)),
        (f"{v} BETWEEN {min(k, k2)} AND {max(k, k2)}",
         lambda e: _null_or(e[v], lambda x: min(k, k2) <= x <= max(k, k2))),
        (f"{s} = '{w}'", lambda e: _null_or(e[s], lambda x: x == w)),
        (f"{s} < '{w}'", lambda e: _null_or(e[s], lambda x: x < w)),
        (f"{s} IS NULL", lambda e: e[s] is None),
        (f"{s} IS NOT NULL", lambda e: e[s] is not None),
        (f"{s} IN ('{w}', '{w2}')", lambda e: _null_or(e[s], lambda x: x in (w, w2))),
    ]
    return r.choice(atoms)


def _combine(r, p, q):
    (ps, pf), (qs, qf) = p, q
    if r.random() < 0.5:
        return f"({ps}) AND ({qs})", lambda e: _and(pf(e), qf(e))
    return f"({ps}) OR ({qs})", lambda e: _or(pf(e), qf(e))


def _maybe_not(r, p):
    if r.random() < 0.1:
        ps, pf = p
        return f"NOT ({ps})", lambda e: _not(pf(e))
    return p


def broad_predicate(r, a, keys):
    """Any mix of key and value predicates on alias `a`."""
    p = _key_atom(r, a, keys) if r.random() < 0.4 else _value_atom(r, a)
    if r.random() < 0.4:
        q = _key_atom(r, a, keys) if r.random() < 0.5 else _value_atom(r, a)
        p = _combine(r, p, q)
    return _maybe_not(r, p)


def narrow_predicate(r, a, keys):
    """A predicate that selects a handful of keys (so DELETEs do not empty the table)."""
    p = _key_atom(r, a, keys)
    x = r.random()
    if x < 0.4:
        ps, pf = p
        qs, qf = _value_atom(r, a)
        return f"({ps}) AND ({qs})", lambda e: _and(pf(e), qf(e))
    if x < 0.55:
        ps, pf = p
        qs, qf = _key_atom(r, a, keys)
        return f"({ps}) OR ({qs})", lambda e: _or(pf(e), qf(e))
    return p


def missing_predicate(r, a, keys, dead):
    """A predicate that matches no live row."""
    options = [(f"{a}.v > 1000000", lambda e: _null_or(e[f"{a}.v"], lambda x: x > 1_000_000)),
               (f"{a}.id < 0", lambda e: e[f"{a}.id"] < 0)]
    if dead:
        ks = sorted(r.sample(dead, min(len(dead), 4)))
        options.append((f"{a}.id IN ({', '.join(map(str, ks))})", lambda e: e[f"{a}.id"] in ks))
    return r.choice(options)


def set_clause(r, src):
    """Assignments for an UPDATE or a MERGE update action; `src` = the source is in scope."""
    k, w, lv, ls = r.randint(1, 3), r.choice(WORDS), _lit_v(r), _lit_s(r)
    v_opts = [("t.v + %d" % k, lambda e: _null_or(e["t.v"], lambda x: x + k)),
              (_sql(lv), lambda e: lv),
              ("t.v", lambda e: e["t.v"])]
    s_opts = [(f"t.s || '{w}'", lambda e: _null_or(e["t.s"], lambda x: x + w)),
              (_sql(ls), lambda e: ls),
              ("t.s", lambda e: e["t.s"])]
    if src:
        v_opts += [("s.v", lambda e: e["s.v"]),
                   ("s.v + t.v", lambda e: None if e["s.v"] is None or e["t.v"] is None else e["s.v"] + e["t.v"]),
                   ("coalesce(s.v, t.v)", lambda e: e["t.v"] if e["s.v"] is None else e["s.v"])]
        s_opts += [("s.s", lambda e: e["s.s"]),
                   ("concat(s.s, t.s)", lambda e: None if e["s.s"] is None or e["t.s"] is None else e["s.s"] + e["t.s"])]
    cols = r.sample(["v", "s"], r.randint(1, 2))
    chosen = {c: r.choice(v_opts if c == "v" else s_opts) for c in cols}
    sql = ", ".join(f"{c} = {chosen[c][0]}" for c in cols)

    def apply(e):
        return (chosen["v"][1](e) if "v" in chosen else e["t.v"],
                chosen["s"][1](e) if "s" in chosen else e["t.s"])
    return sql, apply


def self_set_clause(r):
    cols = r.sample(["v", "s"], r.randint(1, 2))
    return ", ".join(f"{c} = t.{c}" for c in cols), lambda e: (e["t.v"], e["t.s"])


# ---------------------------------------------------------------------------------------------
# The oracle

class Oracle:
    def __init__(self):
        self.rows = {}        # key -> (v, s, rowid, created, updated)
        self.version = 1      # latest table version
        self.events = {}      # commit version -> [(kind, key, old (v, s), new (v, s), rowid)]
        self.history = {1: (0, 0, 0)}   # version -> (rows_added, rows_deleted, rows)
        self.used_rowids = set()
        self.max_rowid = -1
        self.next_key = 0
        self.dead = []        # keys once live, now deleted (may come back as new rows)

    def fresh_keys(self, n):
        keys = list(range(self.next_key, self.next_key + n))
        self.next_key += n
        return keys

    def env(self, key, alias="t"):
        v, s = self.rows[key][:2]
        return {f"{alias}.id": key, f"{alias}.v": v, f"{alias}.s": s}

    def commit(self, effects, new_rowids):
        """Apply effects {key: ("insert"|"update", (v, s)) | ("delete", None)} as one commit."""
        assert effects
        c = self.version + 1
        log, added, deleted = [], 0, 0
        for key, (kind, new) in sorted(effects.items()):
            if kind == "insert":
                rid = new_rowids[key]
                self.rows[key] = (*new, rid, c, c)
                self.used_rowids.add(rid)
                self.max_rowid = max(self.max_rowid, rid)
                if key in self.dead:
                    self.dead.remove(key)
                log.append(("insert", key, None, new, rid))
                added += 1
            elif kind == "update":
                v, s, rid, created, _ = self.rows[key]
                self.rows[key] = (*new, rid, created, c)
                log.append(("update", key, (v, s), new, rid))
                added += 1
                deleted += 1
            else:
                v, s, rid, _, _ = self.rows.pop(key)
                self.dead.append(key)
                log.append(("delete", key, (v, s), None, rid))
                deleted += 1
        self.version = c
        self.events[c] = log
        self.history[c] = (added, deleted, len(self.rows))

    def expected_rows(self):
        return {k: (k, *row) for k, row in self.rows.items()}

    def changes(self, first, last, compute_updates):
        """Multiset of (id, v, s, _rowid, _change_type, _commit_version) of commits first..last."""
        pre, post = ("update_preimage", "update_postimage") if compute_updates else ("delete", "insert")
        out = Counter()
        for c in range(first, last + 1):
            for kind, key, old, new, rid in self.events.get(c, []):
                if kind == "insert":
                    out[(key, *new, rid, "insert", c)] += 1
                elif kind == "delete":
                    out[(key, *old, rid, "delete", c)] += 1
                else:
                    out[(key, *old, rid, pre, c)] += 1
                    out[(key, *new, rid, post, c)] += 1
        return out

    def net_changes(self, first, last, compute_updates):
        """One net change per row over commits first..last: the row before the range (if it existed)
        as of its first commit in range, the row after (if it still exists) as of its last."""
        pre, post = ("update_preimage", "update_postimage") if compute_updates else ("delete", "insert")
        per_row = {}
        for c in range(first, last + 1):
            for kind, key, old, new, rid in self.events.get(c, []):
                per_row.setdefault(rid, []).append((c, kind, key, old, new))
        out = Counter()
        for rid, evs in per_row.items():
            (c0, kind0, key, old0, _), (c1, kind1, _, _, new1) = evs[0], evs[-1]
            existed_before, exists_after = kind0 != "insert", kind1 != "delete"
            if existed_before and exists_after:
                out[(key, *old0, rid, pre, c0)] += 1
                out[(key, *new1, rid, post, c1)] += 1
            elif existed_before:
                out[(key, *old0, rid, "delete", c0)] += 1
            elif exists_after:
                out[(key, *new1, rid, "insert", c1)] += 1
        return out


# ---------------------------------------------------------------------------------------------
# Statements: each returns (sql, effects) with effects computed from the oracle's state before it

def stmt_insert_values(r, o, t, spark):
    n = r.randint(1, 8)
    reuse = r.sample(o.dead, min(len(o.dead), r.randint(0, 2))) if r.random() < 0.3 else []
    keys = reuse + o.fresh_keys(n - len(reuse)) if n > len(reuse) else reuse
    rows = [(k, _lit_v(r), _lit_s(r)) for k in keys]
    r.shuffle(rows)
    if r.random() < 0.3:
        values = ", ".join(f"({k}, {_sql(s)}, {_sql(v)})" for k, v, s in rows)
        sql = f"INSERT INTO {t} (id, s, v) VALUES {values}"
    else:
        values = ", ".join(f"({k}, {_sql(v)}, {_sql(s)})" for k, v, s in rows)
        sql = f"INSERT INTO {t} VALUES {values}"
    return sql, {k: ("insert", (v, s)) for k, v, s in rows}


def _range_row(k):
    return k % 7 - 2, None if k % 4 == 0 else f"r{k % 5}"


RANGE_SELECT = ("SELECT id, id % 7 - 2 AS v, CASE WHEN id % 4 = 0 THEN NULL ELSE concat('r', id % 5) END AS s "
                "FROM range({lo}, {hi})")


def stmt_insert_range(r, o, t, spark):
    keys = o.fresh_keys(r.randint(30, 80))
    sql = f"INSERT INTO {t} " + RANGE_SELECT.format(lo=keys[0], hi=keys[-1] + 1)
    return sql, {k: ("insert", _range_row(k)) for k in keys}


def _where(r, o, keys, narrow):
    x = r.random()
    if x < 0.1:
        return missing_predicate(r, "t", keys, o.dead)
    return narrow_predicate(r, "t", keys) if narrow else broad_predicate(r, "t", keys)


def stmt_update(r, o, t, spark):
    keys = sorted(o.rows)
    set_sql, set_fn = set_clause(r, src=False)
    where_sql, where_fn = _where(r, o, keys, narrow=r.random() < 0.5)
    effects = {k: ("update", set_fn(o.env(k))) for k in keys if where_fn(o.env(k)) is True}
    return f"UPDATE {t} t SET {set_sql} WHERE {where_sql}", effects


def stmt_update_self(r, o, t, spark):
    keys = sorted(o.rows)
    set_sql, set_fn = self_set_clause(r)
    where_sql, where_fn = _where(r, o, keys, narrow=r.random() < 0.5)
    effects = {k: ("update", set_fn(o.env(k))) for k in keys if where_fn(o.env(k)) is True}
    return f"UPDATE {t} t SET {set_sql} WHERE {where_sql}", effects


def stmt_delete(r, o, t, spark):
    keys = sorted(o.rows)
    where_sql, where_fn = _where(r, o, keys, narrow=True)
    effects = {k: ("delete", None) for k in keys if where_fn(o.env(k)) is True}
    return f"DELETE FROM {t} t WHERE {where_sql}", effects


def _clauses(r, count, make_condition, make_action, head):
    """`count` clauses of one kind; only the last may omit its condition (Spark's rule).
    Returns [(sql, condition evaluator or None, action)]."""
    out = []
    for i in range(count):
        cond = make_condition() if (i < count - 1 or r.random() < 0.6) else None
        action_sql, action = make_action()
        out.append((f"{head}{'' if cond is None else ' AND (' + cond[0] + ')'} THEN {action_sql}",
                    None if cond is None else cond[1], action))
    return out


def _first_true(clauses, env):
    for _, cond, action in clauses:
        if cond is None or cond(env) is True:
            return action
    return None


def stmt_merge(r, o, t, spark):
    live = sorted(o.rows)
    source_keys = (r.sample(live, min(len(live), r.randint(0, 12))) +
                   r.sample(o.dead, min(len(o.dead), r.randint(0, 3))) +
                   o.fresh_keys(r.randint(0, 5)))
    source = [(k, _lit_v(r), _lit_s(r)) for k in source_keys]
    r.shuffle(source)
    spark.createDataFrame(source, "id BIGINT, v BIGINT, s STRING").createOrReplaceTempView("src")
    keys_for_preds = live + source_keys

    def matched_action():
        if r.random() < 0.65:
            sql, fn = set_clause(r, src=True)
            return f"UPDATE SET {sql}", ("update", fn)
        return "DELETE", ("delete", None)

    def insert_action():
        x = r.random()
        if x < 0.4:
            return "INSERT *", ("insert", lambda e: (e["s.v"], e["s.s"]))
        if x < 0.8:
            return "INSERT (id, v, s) VALUES (s.id, s.v, s.s)", ("insert", lambda e: (e["s.v"], e["s.s"]))
        return ("INSERT (id, s, v) VALUES (s.id, 'new', coalesce(s.v, 0))",
                ("insert", lambda e: (0 if e["s.v"] is None else e["s.v"], "new")))

    def by_source_action():
        if r.random() < 0.6:
            sql, fn = set_clause(r, src=False)
            return f"UPDATE SET {sql}", ("update", fn)
        return "DELETE", ("delete", None)

    matched = _clauses(r, r.randint(0, 2),
                       lambda: broad_predicate(r, r.choice(["t", "s"]), keys_for_preds),
                       matched_action, "WHEN MATCHED")
    not_matched = _clauses(r, r.randint(0, 2), lambda: broad_predicate(r, "s", keys_for_preds),
                           insert_action, "WHEN NOT MATCHED")
    by_source = []
    if r.random() < 0.4:
        # Conditions name a few keys so a DELETE cannot sweep the table; an unconditional last
        # clause is only allowed to UPDATE.
        by_source = _clauses(r, r.randint(1, 2), lambda: narrow_predicate(r, "t", live),
                             by_source_action, "WHEN NOT MATCHED BY SOURCE")
        if by_source[-1][1] is None and by_source[-1][2][0] == "delete":
            cond_sql, cond_fn = narrow_predicate(r, "t", live)
            by_source[-1] = (by_source[-1][0].replace(" THEN", f" AND ({cond_sql}) THEN"), cond_fn,
                             by_source[-1][2])
    if not (matched or not_matched or by_source):
        not_matched = [("WHEN NOT MATCHED THEN INSERT *", None, ("insert", lambda e: (e["s.v"], e["s.s"])))]

    effects = {}
    src_ids = set()
    for k, v, s in source:
        src_ids.add(k)
        env = {"s.id": k, "s.v": v, "s.s": s}
        if k in o.rows:
            env.update(o.env(k))
            action = _first_true(matched, env)
        else:
            action = _first_true(not_matched, env)
        if action is not None:
            kind, fn = action
            effects[k] = (kind, None if fn is None else fn(env))
    for k in live:
        if k not in src_ids:
            action = _first_true(by_source, o.env(k))
            if action is not None:
                kind, fn = action
                effects[k] = (kind, None if fn is None else fn(o.env(k)))
    clauses = " ".join(c[0] for c in matched + not_matched + by_source)
    return f"MERGE INTO {t} t USING src s ON t.id = s.id {clauses}", effects


STATEMENTS = [(stmt_insert_values, 0.17), (stmt_insert_range, 0.04), (stmt_update, 0.24),
              (stmt_update_self, 0.05), (stmt_delete, 0.14), (stmt_merge, 0.36)]


def pick_statement(r):
    x = r.random() * sum(w for _, w in STATEMENTS)
    for fn, w in STATEMENTS:
        x -= w
        if x < 0:
            return fn
    return STATEMENTS[-1][0]


# ---------------------------------------------------------------------------------------------
# Checks

def _diff(got, want):
    return {k: (got.get(k), want.get(k)) for k in sorted(set(got) | set(want)) if got.get(k) != want.get(k)}


def check_rows(spark, t, o, effects, where):
    rows = spark.sql(f"SELECT {SELECT_COLS} FROM {t}").collect()
    got = {}
    for row in rows:
        assert row.id not in got, f"{where}: key {row.id} twice"
        assert row._rowaddr >> 32 == row._fragid, f"{where}: _rowaddr {row._rowaddr} not in fragment {row._fragid}"
        got[row.id] = tuple(row)[:6]
    rowids = [g[3] for g in got.values()]
    assert len(set(rowids)) == len(rowids), f"{where}: duplicate _rowid among live rows"
    inserted = [k for k, (kind, _) in effects.items() if kind == "insert"]
    missing = [k for k in inserted if k not in got]
    assert not missing, f"{where}: inserted keys missing {missing}"
    new_rowids = {k: got[k][3] for k in inserted}
    fresh = list(new_rowids.values())
    assert len(set(fresh)) == len(fresh), f"{where}: new rows share row ids {new_rowids}"
    reused = set(fresh) & o.used_rowids
    assert not reused, f"{where}: new rows reuse row ids {sorted(reused)}"
    assert all(rid > o.max_rowid for rid in fresh), \
        f"{where}: new row ids {sorted(fresh)} not above the highest id seen {o.max_rowid}"
    if effects:
        o.commit(effects, new_rowids)
    diff = _diff(got, o.expected_rows())
    assert not diff, f"{where}: (spark, oracle) differ for keys {diff}"


def check_pylance(path, o, where):
    tbl = lance.dataset(path).to_table(columns=["id", "v", "s"] + LINEAGE)
    got = {}
    for row in zip(*(tbl.column(c).to_pylist() for c in tbl.column_names)):
        assert row[0] not in got, f"{where}: pylance reads key {row[0]} twice"
        got[row[0]] = row
    diff = _diff(got, o.expected_rows())
    assert not diff, f"{where}: (pylance, oracle) differ for keys {diff}"


def check_history(spark, t, o, where):
    rows = sparklance.history(spark, t).orderBy("version").collect()
    assert [row.version for row in rows] == list(range(1, o.version + 1)), where
    got = {row.version: (row.rows_added, row.rows_deleted, row.rows) for row in rows}
    diff = _diff(got, o.history)
    assert not diff, f"{where}: history (rows_added, rows_deleted, rows) (table, oracle) {diff}"
    stamps = [row.timestamp for row in rows]
    assert stamps == sorted(stamps), f"{where}: history timestamps decrease: {stamps}"
    assert all(row.operation for row in rows), where
    return {row.version: row.timestamp for row in rows}


def _bounds(a, b, a_incl, b_incl):
    return ("" if a_incl is None else " INCLUSIVE" if a_incl else " EXCLUSIVE",
            "" if b_incl is None else " INCLUSIVE" if b_incl else " EXCLUSIVE")


def _counter(rows):
    return Counter(tuple(row)[:6] for row in rows)


def _counter_diff(got, want):
    return {"unexpected": sorted((got - want).items(), key=repr)[:20],
            "missing": sorted((want - got).items(), key=repr)[:20]}


def check_changes(spark, t, o, r, pairs, net_pairs, where):
    latest = o.version
    if latest < 2:
        return 0
    checks = 0
    stamps = check_history(spark, t, o, where)
    for i in range(pairs + net_pairs):
        a = r.randint(1, latest - 1)
        b = r.randint(a + 1, latest)
        a_incl = r.choice([None, True, False])
        b_incl = r.choice([None, True, False])
        open_end = b == latest and r.random() < 0.3
        first = a if a_incl is not False else a + 1
        # Without TO the range ends at the latest version, whatever the end bound says.
        last = b if b_incl is not False or open_end else b - 1
        sa, sb = _bounds(a, b, a_incl, b_incl)
        rng = f"FROM VERSION {a}{sa}" + ("" if open_end else f" TO VERSION {b}{sb}")
        query = f"SELECT {CHANGE_COLS} FROM {t} CHANGES {rng}"
        if i < pairs:
            got = _counter(spark.sql(query).collect())
            want = o.changes(first, last, compute_updates=False)
            assert got == want, f"{where}: {query}: {_counter_diff(got, want)}"
            cu = f"{query} WITH (computeUpdates = 'true')"
            got = _counter(spark.sql(cu).collect())
            want = o.changes(first, last, compute_updates=True)
            assert got == want, f"{where}: {cu}: {_counter_diff(got, want)}"
            checks += 2
        else:
            compute_updates = r.random() < 0.7
            df = sparklance.changes(spark, t, a, None if open_end else b,
                                    start_inclusive=a_incl is not False, end_inclusive=b_incl is not False,
                                    compute_updates=compute_updates, net_changes=True)
            got = _counter(df.select(*CHANGE_COLS.split(", ")).collect())
            want = o.net_changes(first, last, compute_updates)
            assert got == want, (f"{where}: net changes of {t} {rng} computeUpdates={compute_updates}: "
                                 f"{_counter_diff(got, want)}")
            checks += 1
    # Every commit's _commit_timestamp is its history timestamp, so non-decreasing with version.
    rows = spark.sql(f"SELECT DISTINCT _commit_version, _commit_timestamp FROM {t} CHANGES FROM VERSION 1").collect()
    got = {row._commit_version: row._commit_timestamp for row in rows}
    assert len(got) == len(rows), f"{where}: a commit has two timestamps: {sorted(rows)}"
    assert set(got) == {c for c, log in o.events.items() if log}, where
    assert all(got[c] == stamps[c] for c in got), f"{where}: _commit_timestamp {got} vs history {stamps}"
    ordered = [got[c] for c in sorted(got)]
    assert ordered == sorted(ordered), f"{where}: _commit_timestamp decreases: {ordered}"
    return checks + 1


# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [101, 202])
def test_random_dml_lineage_matches_oracle(spark, warehouse, table_name, seed):
    r = random.Random(seed)
    t = table_name
    path = table_path(warehouse, t)
    o = Oracle()
    props = "TBLPROPERTIES ('enable_stable_row_ids' = 'true', 'max_rows_per_file' = '50')"
    if seed % 2:
        spark.sql(f"CREATE TABLE {t} (id BIGINT NOT NULL, v BIGINT, s STRING) {props}")
        assert lance.dataset(path).version == 1
        check_rows(spark, t, o, {}, "after CREATE")
    else:
        # CTAS: version 1 holds the rows, so its commit inserts them.
        keys = o.fresh_keys(120)
        spark.sql(f"CREATE TABLE {t} {props} AS " + RANGE_SELECT.format(lo=keys[0], hi=keys[-1] + 1))
        assert lance.dataset(path).version == 1
        rows = {row.id: row._rowid for row in spark.sql(f"SELECT id, _rowid FROM {t}").collect()}
        o.version = 0
        o.commit({k: ("insert", _range_row(k)) for k in keys}, rows)
        check_rows(spark, t, o, {}, "after CTAS")

    changes_checks = 0
    kinds = Counter()
    for i in range(STATEMENTS_PER_SEED):
        make = stmt_insert_range if i == 0 and not o.rows else pick_statement(r)
        sql, effects = make(r, o, t, spark)
        kinds[(make.__name__, bool(effects))] += 1
        before = lance.dataset(path).version
        assert before == o.version
        spark.sql(sql)
        after = lance.dataset(path).version
        where = f"seed {seed} statement {i} ({len(effects)} rows change): {sql}"
        assert after == before + (1 if effects else 0), \
            f"{where}: version {before} -> {after}, but the oracle says {'some' if effects else 'no'} rows changed"
        check_rows(spark, t, o, effects, where)
        if i % 10 == 9:
            check_pylance(path, o, where)
        if i % 40 == 39 and i != STATEMENTS_PER_SEED - 1:
            changes_checks += check_changes(spark, t, o, r, pairs=4, net_pairs=2, where=where)

    check_pylance(path, o, f"seed {seed} at the end")
    changes_checks += check_changes(spark, t, o, r, pairs=CHANGE_PAIRS_FINAL, net_pairs=5,
                                    where=f"seed {seed} at the end")
    # The run exercised what it claims to: every statement kind, with and without effect.
    assert all(kinds[(fn.__name__, True)] for fn, _ in STATEMENTS if fn is not stmt_insert_range), kinds
    assert sum(n for (_, changed), n in kinds.items() if not changed) >= 3, kinds
    assert changes_checks >= 40
    print(f"seed {seed}: {STATEMENTS_PER_SEED} statements, {o.version} versions, {len(o.rows)} live rows, "
          f"{changes_checks} change queries, kinds {dict(kinds)}")
