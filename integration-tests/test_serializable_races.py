"""Serializable isolation against a real concurrent writer, on the Spark of .venv.

Each statement reads the table, then stops at a gate (a Python UDF Spark cannot push into the
scan) while pylance appends a row the statement's reads could have returned; when the gate opens,
the statement must fail with sparklance's CommitConflictException and the table must keep
pylance's row. Spark 4.3 loads the target of INSERT ... SELECT from the same table apart from the
table its query reads, so what the statement read has to be found by the table it names, not by
the object Spark handed the write."""
import os
import threading
import time

import lance
import pyarrow as pa
import pytest

from conftest import table_path
from racing_writers import task_gate

INITIAL = sorted((i, "eu" if i % 2 == 0 else "us") for i in range(20))
CONCURRENT = (100, "us")

STATEMENTS = {
    "insert_select_self": "INSERT INTO {t} SELECT id + 1000, region FROM {t} WHERE region = 'us' AND gate(id)",
    "insert_overwrite_select_self": "INSERT OVERWRITE {t} SELECT id, region FROM {t} WHERE region = 'us' AND gate(id)",
    # The source names key 100: had the MERGE seen pylance's row it would have updated it.
    "merge": ("MERGE INTO {t} t USING (SELECT id FROM range(98, 102, 1, 1) WHERE gate(id)) s ON t.id = s.id "
              "WHEN MATCHED THEN UPDATE SET region = 'merged' WHEN NOT MATCHED THEN INSERT (id, region) VALUES (s.id, 'merged')"),
    "update": "UPDATE {t} SET region = 'updated' WHERE region = 'us' AND gate(id)",
    "delete": "DELETE FROM {t} WHERE region = 'us' AND gate(id)",
}


def _conflict(error):
    """The CommitConflictException among the causes of a Spark error raised in Python, or None."""
    java = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    while java is not None:
        if java.getClass().getName() == "sparklance.format.CommitConflictException":
            return java
        java = java.getCause()
    return None


@pytest.mark.parametrize("statement", sorted(STATEMENTS))
def test_statement_fails_over_a_concurrent_insert_it_could_have_read(spark, warehouse, table_name, tmp_path, statement):
    spark.sql(f"CREATE TABLE {table_name} (id BIGINT, region STRING) TBLPROPERTIES ('isolation_level' = 'serializable')")
    values = ", ".join(f"({i}, '{r}')" for i, r in INITIAL)
    spark.sql(f"INSERT INTO {table_name} SELECT /*+ COALESCE(1) */ * FROM VALUES {values} AS v(id, region)")
    path = table_path(warehouse, table_name)
    versions = len(lance.dataset(path).versions())

    gate, reached, opened = task_gate(str(tmp_path))
    spark.udf.register("gate", gate, "boolean")
    outcome = {}

    def run():
        try:
            spark.sql(STATEMENTS[statement].format(t=table_name))
            outcome["landed"] = True
        except Exception as e:  # noqa: BLE001 - judged below
            outcome["error"] = e

    runner = threading.Thread(target=run)
    runner.start()
    try:
        while not os.path.exists(reached):
            assert runner.is_alive(), f"the statement ended before its gate: {outcome}"
            time.sleep(0.02)
        dataset = lance.dataset(path)
        row = pa.table({"id": [CONCURRENT[0]], "region": [CONCURRENT[1]]}, schema=dataset.schema)
        lance.write_dataset(row, path, mode="append")
    finally:
        open(opened, "w").close()
        runner.join(timeout=300)
    assert not runner.is_alive()

    assert "error" in outcome, f"{statement} landed over a row it could have read"
    conflict = _conflict(outcome["error"])
    assert conflict is not None, str(outcome["error"])[:3000]
    assert "serializable" in conflict.getMessage() and "never saw" in conflict.getMessage()
    # Nothing of the statement landed: pylance's append is the last version, and the rows are the
    # initial ones and pylance's.
    after = lance.dataset(path)
    assert len(after.versions()) == versions + 1
    got = after.to_table()
    assert sorted(zip(got.column("id").to_pylist(), got.column("region").to_pylist())) == sorted(INITIAL + [CONCURRENT])
    assert spark.sql(f"SELECT count(*) FROM {table_name}").first()[0] == len(INITIAL) + 1
