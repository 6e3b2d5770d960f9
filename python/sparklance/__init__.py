"""sparklance: Spark SQL on Lance tables, including DELETE, UPDATE and MERGE INTO.

The catalog itself is a JVM plugin; this package ships its jar and configures a SparkSession.
"""
import re
from pathlib import Path

from ._version import __version__  # the bundled jar's version, written by ./dev/setup

__all__ = ["configure", "jar_path", "history", "changes", "CATALOG_CLASS"]

CATALOG_CLASS = "sparklance.spark.LanceCatalog"


def jar_path() -> str:
    """Path of the sparklance jar bundled in this package."""
    jar = Path(__file__).parent / "jars" / "sparklance.jar"
    if not jar.is_file():
        raise FileNotFoundError(
            f"{jar} is missing: build it with the README's set-up command (it runs the sbt assembly)")
    return str(jar)


# A URI scheme, as the catalog reads one: a letter, then letters, digits, "+", "-" or ".", then ":".
# A single letter is a Windows drive ("C:\\wh"), not a scheme.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")


def configure(builder, warehouse, name="lance"):
    """Return `builder` with the sparklance jar on the classpath and catalog `name` over `warehouse`.

    `warehouse` is a local directory (made absolute) or a URI kept as given: ``file:``,
    ``hdfs://namenode:8020/warehouse``, ``s3a://bucket/warehouse`` ... The jar is added to any
    ``spark.jars`` the builder already has. Tables of the catalog live at
    ``<warehouse>/<namespace>/<table>.lance``, where pylance's ``lance.dataset(path)`` opens them too.
    """
    warehouse = str(warehouse)
    if not _SCHEME.match(warehouse):
        warehouse = str(Path(warehouse).expanduser().resolve())
    return (builder
            .config("spark.jars", _with_jar(getattr(builder, "_options", {}).get("spark.jars"), jar_path()))
            .config(f"spark.sql.catalog.{name}", CATALOG_CLASS)
            .config(f"spark.sql.catalog.{name}.warehouse", warehouse))


def _with_jar(jars, jar):
    """The comma-separated `jars` (None or empty: none) with `jar` appended unless already there."""
    listed = [j.strip() for j in (jars or "").split(",") if j.strip()]
    return ",".join(listed if jar in listed else listed + [jar])


def history(spark, table):
    """The versions of `table` (e.g. ``"lance.db.t"``), oldest first, as a DataFrame.

    Columns: version, timestamp (commit time), operation (Append, Update, Delete, Overwrite, ...),
    rows_added, rows_deleted (an update counts in both) and rows (live rows after the commit).
    The same rows are ``SELECT * FROM <table>.history`` in SQL.
    """
    return spark.table(f"{table}.history")


def changes(spark, table, start, end=None, *, start_inclusive=True, end_inclusive=True,
            compute_updates=True, net_changes=False):
    """The rows commits `start` to `end` of `table` inserted, updated and deleted, as a DataFrame.

    Needs a table created with ``TBLPROPERTIES ('enable_stable_row_ids'='true')``. Each row holds
    the table's columns, ``_rowid``, ``_change_type`` (insert, delete, update_preimage,
    update_postimage), ``_commit_version`` and ``_commit_timestamp``. Commit ``v`` is the change
    from version ``v-1`` to ``v``; `end` defaults to the latest version (then always included). With
    ``compute_updates=False`` an update is a delete and an insert sharing ``_rowid``; with
    ``net_changes=True`` each row appears once, with its net change over the range.
    This is ``SELECT * FROM <table> CHANGES FROM VERSION ... TO VERSION ...`` in SQL.
    """
    reader = (spark.read
              .option("startingVersion", str(int(start)))
              .option("startingBoundInclusive", str(bool(start_inclusive)).lower())
              .option("computeUpdates", str(bool(compute_updates)).lower())
              .option("deduplicationMode", "netChanges" if net_changes else "dropCarryovers"))
    if end is not None:
        reader = (reader.option("endingVersion", str(int(end)))
                  .option("endingBoundInclusive", str(bool(end_inclusive)).lower()))
    return reader.changes(table)
