"""Writers racing on one table, each owning the rows whose column `w` is its number, so that its
committed operations commute with everyone else's: the expected table is every writer's committed
operations replayed in its own order (see `replay`). Shared by the concurrency and vacuum tests."""
import os
import random
import re


# A commit conflict: its condition as PySpark raises it, or (wrapped in a job failure) its class and message.
CONFLICT = ("LANCE_CONCURRENT_COMMIT_CONFLICT", "CommitConflictException", "Concurrent commit")


def spark_writer(spark, table, k, results, ops, allowed=CONFLICT):
    """Writer k's `ops` random statements (UPDATE, DELETE, INSERT, MERGE of its own rows), each recorded in
    `results` as (k, i, kind, m, next_id, status): 'ok', or 'conflict: <why>' (or the exception's name) for a failure whose message
    names one of `allowed` (a commit conflict by default); any other failure fails the test."""
    r = random.Random(k)
    next_id = 100_000 * (k + 1)
    for i in range(ops):
        kind = r.choice(["update", "delete", "insert", "merge"])
        m = r.randint(0, 6)
        if kind == "update":
            sql = f"UPDATE {table} SET v = v + 1 WHERE w = {k} AND id % 7 = {m}"
        elif kind == "delete":
            sql = f"DELETE FROM {table} WHERE w = {k} AND id % 13 = {m}"
        elif kind == "insert":
            sql = f"INSERT INTO {table} VALUES ({next_id}, {k}, 0), ({next_id + 1}, {k}, 0)"
            next_id += 2
        else:
            sql = (f"MERGE INTO {table} t USING (SELECT id, w FROM {table} WHERE w = {k} AND id % 5 = {m % 5} "
                   f"UNION ALL SELECT {next_id} AS id, {k} AS w) s ON t.id = s.id "
                   f"WHEN MATCHED THEN UPDATE SET v = t.v + 10 "
                   f"WHEN NOT MATCHED THEN INSERT (id, w, v) VALUES (s.id, s.w, 0)")
            next_id += 1
        try:
            spark.sql(sql)
            results.append((k, i, kind, m, next_id, "ok"))
        except Exception as e:  # noqa: BLE001 - classified below
            msg = str(e)
            assert any(a in msg for a in allowed), msg[:2000]
            results.append((k, i, kind, m, next_id, "conflict: " + reason(msg)))


def reason(message):
    """Why a commit conflicted, without the versions and fragments that vary from run to run."""
    found = re.search(r"committed as version \d+: ([^;]*);", message)
    if found:
        return re.sub(r"\d+", "N", found.group(1))
    typed = re.search(r"\[(LANCE_[A-Z_]+)\]", message) or re.search(r"sparklance\.format\.(\w+Exception)", message)
    return typed.group(1) if typed else message[:120]


def replay(results, initial):
    """The expected rows: each writer's committed operations applied in order to its own rows."""
    rows = dict(initial)  # id -> (w, v)
    for k, i, kind, m, next_id, status in sorted(results, key=lambda x: (x[0], x[1])):
        if status != "ok":
            continue
        mine = [rid for rid, (w, _) in rows.items() if w == k]
        if kind == "update":
            for rid in mine:
                if rid % 7 == m:
                    rows[rid] = (k, rows[rid][1] + 1)
        elif kind == "delete":
            for rid in mine:
                if rid % 13 == m:
                    del rows[rid]
        elif kind == "insert":
            rows[next_id - 2] = (k, 0)
            rows[next_id - 1] = (k, 0)
        else:  # merge: matched rows +10, one new row
            for rid in mine:
                if rid % 5 == m % 5:
                    rows[rid] = (k, rows[rid][1] + 10)
            rows[next_id - 1] = (k, 0)
    return sorted((rid, w, v) for rid, (w, v) in rows.items())


def task_gate(directory):
    """A Python UDF that marks the gate reached (a file in `directory`), then holds its task until
    the test opens the gate (creates the other file); returns (udf, reached path, open path)."""
    reached, opened = os.path.join(directory, "reached"), os.path.join(directory, "open")

    def gate(_):
        import os as os_, time as time_
        open(reached, "a").close()
        deadline = time_.monotonic() + 120
        while not os_.path.exists(opened):
            if time_.monotonic() > deadline:
                raise TimeoutError("the test never opened the gate")
            time_.sleep(0.01)
        return True
    return gate, reached, opened
