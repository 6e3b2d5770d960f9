"""Shared fixtures: one local SparkSession with the sparklance catalog `lance` per test run."""
import shutil
import tempfile
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

import sparklance


@pytest.fixture(scope="session")
def warehouse():
    root = Path(tempfile.mkdtemp(prefix="sparklance-it-"))
    yield root / "warehouse"
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def spark(warehouse):
    session = (sparklance.configure(SparkSession.builder.master("local[2]").appName("sparklance-it"),
                                    warehouse=str(warehouse))
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.memory", "2g")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    session.sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    yield session
    session.stop()


@pytest.fixture
def table_name(request):
    """A fresh table identifier per test, and its dataset path."""
    name = request.node.name.replace("[", "_").replace("]", "").replace("-", "_").replace(".", "_").lower()
    return f"lance.db.{name}"


def table_path(warehouse, ident):
    _, ns, name = ident.split(".")
    return str(warehouse / ns / f"{name}.lance")


def pylance_append_retrying(path, table, errors, attempts=50, pause=0.02):
    """Appends `table` with pylance as a racing writer does: a commit conflict is retried after a
    pause, any other error is recorded in `errors`. Returns whether the append landed."""
    import time
    import lance
    for _ in range(attempts):
        try:
            lance.write_dataset(table, path, mode="append")
            return True
        except OSError as e:
            if "conflict" not in str(e).lower():
                errors.append(e)
                return False
            time.sleep(pause)
    return False
