"""sparklance behind a Spark Connect server: the server is started as the README shows
(start-connect-server.sh of the pyspark package, with the jar and the catalog settings), and a
Connect client runs the quickstart, MERGEs and the Python helpers; pylance reads the results."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import lance
import pyspark
import pytest

import sparklance

HERE = Path(__file__).resolve().parent
# The pyspark package is a Spark installation: bin/, sbin/ and jars/ (the Connect server's too).
SPARK_HOME = Path(pyspark.__file__).resolve().parent


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


def _log(logs):
    return "\n".join(p.read_text()[-5000:] for p in sorted(logs.glob("*.out")))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """(URL, warehouse) of a Connect server with the catalog `lance`, stopped after the module."""
    root = tmp_path_factory.mktemp("connect")
    port, logs, warehouse = _free_port(), root / "logs", root / "warehouse"
    # Its log and pid file go to the temp directory, not into the pyspark package and /tmp.
    # Python UDFs of its clients (error_cases.py) run with the interpreter that pickled them.
    env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOG_DIR=str(logs), SPARK_PID_DIR=str(root),
               PYSPARK_PYTHON=sys.executable)
    subprocess.run([str(SPARK_HOME / "sbin" / "start-connect-server.sh"),
                    "--jars", sparklance.jar_path(),
                    "--conf", f"spark.sql.extensions={sparklance.EXTENSIONS_CLASS}",
                    "--conf", f"spark.sql.catalog.lance={sparklance.CATALOG_CLASS}",
                    "--conf", f"spark.sql.catalog.lance.warehouse={warehouse}",
                    "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
                    "--conf", f"spark.connect.grpc.binding.port={port}"],
                   env=env, check=True, capture_output=True)
    pid = int(next(root.glob("*.pid")).read_text())
    try:
        deadline = time.monotonic() + 300
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert _alive(pid) and time.monotonic() < deadline, f"no Connect server on {port}:\n{_log(logs)}"
                time.sleep(0.5)
        yield f"sc://127.0.0.1:{port}", warehouse
    finally:
        subprocess.run([str(SPARK_HOME / "sbin" / "stop-connect-server.sh")], env=env, capture_output=True)
        deadline = time.monotonic() + 60
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.5)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _client(url, scenario, *args):
    done = subprocess.run([sys.executable, str(HERE / "connect_client.py"), url, scenario, *map(str, args)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_quickstart_and_merges(server):
    url, warehouse = server
    out = _client(url, "people")
    assert out["over_40"] == [2] + [i for i in range(3, 100) if i % 80 > 40]
    # The SQL MERGE updated 1 and inserted 500; mergeInto updated 2, inserted 600 and deleted 90-99.
    want = ([[1, "Ada Lovelace", 37], [2, "Grace Hopper", 46]] + [[i, f"user_{i}", i % 80] for i in range(3, 90)]
            + [[500, "Edsger", 72], [600, "Barbara", 68]])
    assert out["rows"] == want
    table = lance.dataset(str(warehouse / "db" / "people.lance")).to_table().sort_by("id")
    assert [list(r.values()) for r in table.to_pylist()] == want


def test_history_and_changes(server):
    url, warehouse = server
    out = _client(url, "lineage")
    history = out["history"]  # version, timestamp, operation, read_version, rows_added, rows_deleted, rows, parameters, tags
    stamps = [h[1] for h in history]
    assert [[h[0], h[2], h[4], h[5], h[6]] for h in history] == [
        [1, "Overwrite", 0, 0, 0], [2, "Append", 3, 0, 3], [3, "Update", 1, 1, 3], [4, "Delete", 0, 1, 2]]
    assert [h[3] for h in history] == [0, 1, 2, 3] and all(h[8] == [] for h in history)
    assert history[3][7] == {"fragments_removed": "0", "fragments_updated": "1", "statement": "DELETE"}

    def changes(*rows):  # (id, name, _rowid, _change_type, _commit_version), stamped and ordered
        return sorted(([*r, stamps[r[4] - 1]] for r in rows), key=lambda r: (r[4], r[2], r[3]))

    inserts = [(1, "a", 0, "insert", 2), (2, "b", 1, "insert", 2), (3, "c", 2, "insert", 2)]
    update = [(2, "b", 1, "update_preimage", 3), (2, "B", 1, "update_postimage", 3)]
    assert out["changes"] == changes(*inserts, *update, (3, "c", 2, "delete", 4))
    assert out["split_updates"] == changes(*inserts, (2, "b", 1, "delete", 3), (2, "B", 1, "insert", 3))
    assert out["exclusive"] == changes(*update)
    assert out["net"] == changes((1, "a", 0, "insert", 2), (2, "B", 1, "insert", 3))

    users = lance.dataset(str(warehouse / "db" / "users.lance"))
    assert users.version == 4
    assert users.to_table().sort_by([("id", "ascending"), ("name", "ascending")]).to_pylist() == [{"id": 1, "name": "a"}, {"id": 2, "name": "B"}]
    assert users.checkout_version(3).to_table().num_rows == 3


def test_table_property_errors_are_analysis_exceptions(server):
    url, _ = server
    out = _client(url, "properties")
    assert out["typo"][0] == "AnalysisException" and "did you mean 'enable_stable_row_ids'?" in out["typo"][1], out
    assert out["alter"][0] == "AnalysisException" and "'optimize_write'" in out["alter"][1] and "'yes'" in out["alter"][1], out
    refused = out["set_not_null_refused"]
    assert refused[0] == "AnalysisException" and "LANCE_SCHEMA_CHANGE_REFUSED" in refused[1] and "'name'" in refused[1], out
    assert out["nullable_after"] == [False, False]
    nn = lance.dataset(str(server[1] / "db" / "nn.lance"))
    assert [nn.schema.field(c).nullable for c in ("id", "name")] == [False, False] and nn.version == 5


def test_errors_have_pyspark_classes_conditions_and_sqlstates(server):
    """The cases test_errors.py runs in a classic session raise the same over Connect."""
    from error_cases import EXPECTED
    url, warehouse = server
    assert _client(url, "errors", warehouse) == EXPECTED
    rows = lance.dataset(str(warehouse / "db" / "connect_errors.lance")).to_table().sort_by([("id", "ascending"), ("name", "ascending")]).to_pylist()
    assert rows == [{"id": 1, "name": "a"}, {"id": 1, "name": "racer"}, {"id": 2, "name": "b"}]
