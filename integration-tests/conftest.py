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


def s3_connector_jars():
    """The S3A connector's jars, which ./dev/setup resolves into target/s3-connector/."""
    jars = sorted(str(j) for j in (Path(__file__).resolve().parent.parent / "target" / "s3-connector").glob("*.jar"))
    if not jars:
        raise RuntimeError("target/s3-connector/ holds no jars: run ./dev/setup")
    return jars


@pytest.fixture(scope="session")
def spark(warehouse):
    # With the S3A connector on the classpath, as a user of s3a:// warehouses has it.
    builder = (SparkSession.builder.master("local[2]").appName("sparklance-it")
               .config("spark.jars", ",".join(s3_connector_jars())))
    session = (sparklance.configure(builder, warehouse=str(warehouse))
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.memory", "2g")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    session.sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def s3():
    """An S3 API on loopback (see s3_server.py), with a bucket `lakehouse`."""
    from s3_server import S3Server
    server = S3Server()
    server.create_bucket("lakehouse")
    yield server
    server.close()


@pytest.fixture(scope="session")
def s3_catalog(spark, s3):
    """Catalog `s3lance` of the shared session over s3a://lakehouse/warehouse on the loopback S3
    (its settings as catalog options, the per-catalog form of spark.hadoop.*), namespace `db`.
    Retries are few so that injected failures surface quickly."""
    name = "s3lance"
    spark.conf.set(f"spark.sql.catalog.{name}", sparklance.CATALOG_CLASS)
    spark.conf.set(f"spark.sql.catalog.{name}.warehouse", "s3a://lakehouse/warehouse")
    settings = dict(s3.hadoop_conf(), **{"fs.s3a.retry.limit": "2", "fs.s3a.retry.interval": "50ms",
                                          "fs.s3a.attempts.maximum": "2"})
    for key, value in settings.items():
        spark.conf.set(f"spark.sql.catalog.{name}.hadoop.{key}", value)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {name}.db")
    return name


@pytest.fixture
def table_name(request):
    """A fresh table identifier per test, and its dataset path."""
    name = request.node.name.replace("[", "_").replace("]", "").replace("-", "_").replace(".", "_").lower()
    return f"lance.db.{name}"


def table_path(warehouse, ident):
    _, ns, name = ident.split(".")
    return str(warehouse / ns / f"{name}.lance")


def _plan_leaves(node):
    """The leaves of a Java physical plan, looking into adaptive plans and their query stages."""
    kind = node.getClass().getSimpleName()
    if kind == "AdaptiveSparkPlanExec":
        return _plan_leaves(node.executedPlan())
    if kind.endswith("QueryStageExec"):
        return _plan_leaves(node.plan())
    children = node.children()
    if children.size() == 0:
        return [node]
    return [leaf for i in range(children.size()) for leaf in _plan_leaves(children.apply(i))]


def scan_metrics(df):
    """Runs `df`; returns its rows and its Lance scans' UI metrics summed by name
    (`dataBytesRead`, `splitsRead`; `numOutputRows`: the rows the scans produced, before Spark's filters)."""
    rows = df.collect()
    sums = {"dataBytesRead": 0, "splitsRead": 0, "numOutputRows": 0}
    for leaf in _plan_leaves(df._jdf.queryExecution().executedPlan()):
        for name in sums:
            metric = leaf.metrics().get(name)
            if metric.isDefined():
                sums[name] += metric.get().value()
    return rows, sums


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
