"""sparklance: Spark SQL on Lance tables, including DELETE, UPDATE and MERGE INTO.

The catalog itself is a JVM plugin; this package ships its jar and configures a SparkSession.
"""
import array
import json
import re
import sys
import warnings
from pathlib import Path

from ._version import __version__  # the bundled jar's version, written by ./dev/setup
from . import errors

__all__ = ["configure", "jar_path", "history", "last_commit_metrics", "changes", "compact", "vacuum", "restore", "create_tag",
           "delete_tag", "tags", "create_branch", "delete_branch", "branches", "add_columns", "update_columns", "set_not_null",
           "vector_search", "CATALOG_CLASS", "EXTENSIONS_CLASS", "JarNotLoadedError", "ExtensionMissingWarning", "errors"]

CATALOG_CLASS = "sparklance.spark.LanceCatalog"
EXTENSIONS_CLASS = "sparklance.spark.LanceSparkSessionExtensions"


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


def configure(builder, warehouse, name="lance", hadoop=None):
    """Return `builder` with the sparklance jar on the classpath and catalog `name` over `warehouse`.

    `warehouse` is a local directory (made absolute) or a URI kept as given: ``file:``,
    ``hdfs://namenode:8020/warehouse``, ``s3a://bucket/warehouse`` ... The jar is added to any
    ``spark.jars`` the builder already has, and sparklance's session extension (which lets UPDATE
    and MERGE rewrite only the columns they assign) to any ``spark.sql.extensions``. Tables of the
    catalog live at ``<warehouse>/<namespace>/<table>.lance``, where pylance's
    ``lance.dataset(path)`` opens them too.

    `hadoop` is a dict of Hadoop settings for the warehouse's file system, such as S3A's
    ``{"fs.s3a.endpoint": ..., "fs.s3a.access.key": ...}``; each is set as ``spark.hadoop.<key>``,
    which the driver and every executor apply (the connector's jars must be on the classpath: for
    ``s3a://``, hadoop-aws matching Spark's Hadoop and the AWS SDK v2; see docs/storage.md).

    If a classic Spark session (or its SparkContext) is already running in this process, as in a
    notebook, the jar and the extension cannot be added to it: Spark reads them only when its JVM
    starts. Then the catalog is registered on the running session at once (catalog settings apply
    at run time, ``hadoop`` as the catalog's own ``hadoop.<key>`` settings) when its JVM has the jar,
    with an :class:`ExtensionMissingWarning` if the session lacks the extension; if the JVM lacks
    the jar, :class:`JarNotLoadedError` says what to do.
    """
    warehouse = str(warehouse)
    if not _SCHEME.match(warehouse):
        warehouse = str(Path(warehouse).expanduser().resolve())
    _configure_running(name, warehouse, hadoop or {})
    options = getattr(builder, "_options", {})
    builder = (builder
               .config("spark.jars", _appended(options.get("spark.jars"), jar_path()))
               .config("spark.sql.extensions", _appended(options.get("spark.sql.extensions"), EXTENSIONS_CLASS))
               .config(f"spark.sql.catalog.{name}", CATALOG_CLASS)
               .config(f"spark.sql.catalog.{name}.warehouse", warehouse))
    for key, value in (hadoop or {}).items():
        builder = builder.config(f"spark.hadoop.{key}", str(value))
    return builder


class JarNotLoadedError(RuntimeError):
    """The Spark JVM running in this process was started without the sparklance jar.

    Raised by :func:`configure` when a session already runs (a notebook created one): Spark puts
    ``spark.jars`` on the classpath only when its JVM starts, so no setting of a running session,
    nor stopping it and building another in the same process, can load the catalog.
    """


class ExtensionMissingWarning(UserWarning):
    """The running session lacks sparklance's session extension (see :func:`configure`)."""


def _configure_running(name, warehouse, hadoop):
    """Registers catalog `name` on the classic session running in this process, if any (see configure)."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    # The JVM outlives a stopped SparkContext, and a new one in the same process keeps its classpath.
    jvm = SparkContext._jvm
    if jvm is None:  # no JVM yet (or a Spark Connect client, whose server owns the catalogs)
        return
    try:
        jvm.java.lang.Class.forName(CATALOG_CLASS, False, jvm.org.apache.spark.util.Utils.getContextOrSparkClassLoader())
    except Exception as e:
        if "ClassNotFoundException" not in str(e):
            raise
        raise JarNotLoadedError(
            f"A Spark session is already running in this process without the sparklance jar, so catalog '{name}' "
            f"cannot load {CATALOG_CLASS}: Spark adds spark.jars to the classpath only when its JVM starts (stopping "
            "the session and building a new one in the same process does not help). Restart the Python process (the "
            "notebook's kernel) and call sparklance.configure(SparkSession.builder, ...).getOrCreate() before anything "
            f"creates a session, or start Spark with the jar: --jars {jar_path()} and --conf "
            f"spark.sql.extensions={EXTENSIONS_CLASS} (spark-submit, PYSPARK_SUBMIT_ARGS, spark-defaults.conf)") from None
    session = SparkSession._instantiatedSession
    if session is not None and session._sc._jsc is not None:
        # Runtime settings: the catalog is loaded from them on its first use.
        session.conf.set(f"spark.sql.catalog.{name}", CATALOG_CLASS)
        session.conf.set(f"spark.sql.catalog.{name}.warehouse", warehouse)
        for key, value in hadoop.items():
            session.conf.set(f"spark.sql.catalog.{name}.hadoop.{key}", str(value))
    # A session's extensions come from its SparkContext's settings when the session is built.
    sc = SparkContext._active_spark_context
    extensions = [e.strip() for e in sc._jsc.sc().conf().get("spark.sql.extensions", "").split(",")] if sc else None
    if extensions is not None and EXTENSIONS_CLASS not in extensions:
        warnings.warn(
            f"The running Spark session has no sparklance session extension ({EXTENSIONS_CLASS} is not in "
            "spark.sql.extensions, which Spark reads only when it starts): catalog '{name}' works, but UPDATE and "
            "MERGE rewrite whole rows instead of the assigned columns (rewrite_mode = columns is an error), copy "
            "blob columns by value, cannot touch tables with columns of unsupported types, and MERGE does not "
            "prefilter the target by the source's keys. For those, restart the Python process and build the "
            "session with sparklance.configure".replace("{name}", name), ExtensionMissingWarning, stacklevel=3)


def _appended(items, item):
    """The comma-separated `items` (None or empty: none) with `item` appended unless already there."""
    listed = [j.strip() for j in (items or "").split(",") if j.strip()]
    return ",".join(listed if item in listed else listed + [item])


def history(spark, table):
    """The versions of `table` (e.g. ``"lance.db.t"``), oldest first, as a DataFrame.

    Columns: version, timestamp (commit time), operation as Lance names it (Append, Update,
    Delete, Overwrite, Rewrite for a compaction, Restore, ...), read_version, rows_added and
    rows_deleted (an update counts in both, a compaction in neither; NULL for the oldest version
    left after a vacuum), rows (live rows after the commit), operation_parameters (what the
    operation did: a compaction's groups, a restore's version, ...; ``statement`` names the
    statement that made the version: INSERT, MERGE, ALTER ADD COLUMNS, COMPACT, ...), tags (on
    that version) and operation_metrics (the rows a sparklance DML statement inserted, updated
    and deleted: num_inserted_rows, num_updated_rows, num_deleted_rows).
    Versions a vacuum removed are not listed. The same rows are ``SELECT * FROM <table>.history``.
    """
    return spark.table(f"{table}.history")


def last_commit_metrics(spark, table):
    """The rows the statement that made `table`'s latest version inserted, updated and deleted.

    Spark returns no rows from DELETE, UPDATE or MERGE on a DataSource V2 table, so sparklance
    records the counts with the commit. Returns a dict with ``version``, ``statement`` (e.g.
    ``"MERGE"``; None for a version another writer made), ``num_inserted_rows``,
    ``num_updated_rows`` and ``num_deleted_rows`` (None where the statement counted no rows, as
    for ALTER TABLE or a commit of pylance). An updated row counts once, as updated. Call it right
    after the statement: another writer's commit would be the latest.
    """
    last = spark.sql(f"SELECT version, operation_parameters, operation_metrics FROM {table}.history "
                     "ORDER BY version DESC LIMIT 1").first()
    metrics = last.operation_metrics or {}
    return {"version": last.version, "statement": (last.operation_parameters or {}).get("statement"),
            **{k: metrics.get(k) for k in ("num_inserted_rows", "num_updated_rows", "num_deleted_rows")}}


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


def _sql_literal(value):
    """`value` as a Spark SQL literal: strings quoted, booleans and numbers as they are."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("\\", "\\\\").replace("'", "\\'") + "'"


def _call(spark, procedure, table, **arguments):
    """Runs ``CALL <catalog>.system.<procedure>(table => '<rest of table>', ...)``; returns its one row.

    `table` is the full name (``"lance.db.t"``): its first part is the catalog. Arguments left as
    None are not passed, so the procedure's defaults (and the table's config) apply. A value of
    type `_Sql` is passed as the SQL it holds.
    """
    catalog, _, inner = table.partition(".")
    if not inner:
        raise ValueError(f"table {table!r} must be <catalog>.<namespace>.<table>, e.g. 'lance.db.t'")
    named = [f"table => {_sql_literal(inner)}"] + [
        f"`{name}` => {value.text if isinstance(value, _Sql) else _sql_literal(value)}"
        for name, value in arguments.items() if value is not None]
    return spark.sql(f"CALL `{catalog}`.system.{procedure}({', '.join(named)})").collect()[0]


def _map_literal(mapping):
    """A dict of strings as a Spark SQL ``map(...)`` argument; None stays None (not passed)."""
    if mapping is None:
        return None
    return _Sql("map(" + ", ".join(f"{_sql_literal(k)}, {_sql_literal(v)}" for k, v in mapping.items()) + ")")


class _Sql:
    """A procedure argument written as SQL, such as a TIMESTAMP literal."""
    def __init__(self, text):
        self.text = text


def compact(spark, table, target_rows_per_fragment=None, materialize_deletions=None,
            materialize_deletions_threshold=None, max_source_fragments=None, where=None,
            sort_by=None, zorder_by=None, recluster=None):
    """Compacts `table` (e.g. ``"lance.db.t"``) as pylance's ``compact_files`` does, as a Spark job.

    Small fragments are merged and fragments with more than the threshold of deleted rows are
    rewritten; rows keep their ``_rowid`` and versions. `where` limits it to fragments matching a
    predicate on ``_fragid``. `sort_by` / `zorder_by` (column names separated by commas) rewrite
    every fragment with its rows sorted or Z-ordered across them; `recluster=True` does that by
    the table's clustering columns (docs/clustering.md). Returns the procedure's row: read_version, version (None when there
    was nothing to do), fragments_removed, fragments_added, files_removed, files_added,
    rows_rewritten, groups_replanned, left_alone.
    """
    return _call(spark, "compact", table, target_rows_per_fragment=target_rows_per_fragment,
                 materialize_deletions=materialize_deletions,
                 materialize_deletions_threshold=materialize_deletions_threshold,
                 max_source_fragments=max_source_fragments, where=where, sort_by=sort_by,
                 zorder_by=zorder_by, recluster=recluster)


def add_columns(spark, table, expressions=None, source=None, on=None):
    """Adds columns with values to `table`, writing only the new columns (pylance's ``add_columns`` / ``merge``).

    Either `expressions`, a dict of new column name -> Spark SQL expression over the table's
    columns (``{"twice": "id * 2"}``), or `source` (a table or view name) joined on the key column
    `on`: its other columns become the new ones (NULL where no row matches). One commit; per
    fragment one new file holding only the new columns. Returns the row (version, columns,
    files_written, bytes_written).
    """
    return _call(spark, "add_columns", table, expressions=_map_literal(expressions), source=source, on=on)


def update_columns(spark, table, expressions=None, source=None, on=None):
    """Rewrites existing columns of every row of `table`, writing only those columns (pylance's ``update_columns``).

    `expressions` maps column names to Spark SQL expressions over the table's columns
    (``{"score": "score * 2"}``); or `source` joined on the key column `on` gives the new values
    (NULL where no row matches). Per fragment one file holds the rewritten columns for all rows;
    rows keep their addresses and ids and are stamped as updated. Returns the row (version,
    columns, files_written, bytes_written).
    """
    return _call(spark, "update_columns", table, expressions=_map_literal(expressions), source=source, on=on)


def set_not_null(spark, table, *columns):
    """Makes `columns` of `table` NOT NULL (``CALL <catalog>.system.set_not_null``), one commit.

    Spark's analyzer refuses ``ALTER COLUMN ... SET NOT NULL``; this checks the data first and
    refuses a column that holds NULLs, naming how many. Nested fields as ``"s.b"``. Returns the
    row (version).
    """
    if not columns:
        raise ValueError("set_not_null needs at least one column")
    return _call(spark, "set_not_null", table,
                 columns=_Sql("array(" + ", ".join(_sql_literal(c) for c in columns) + ")"))


def vacuum(spark, table, older_than=None, retain_versions=None, dry_run=None, delete_unverified=None,
           error_if_tagged_old_versions=None):
    """Removes old versions of `table` and the files only they need, as pylance's ``cleanup_old_versions``.

    Versions committed more than `older_than` ago (an interval such as ``"7 days"`` or
    ``"12 hours"``; a ``datetime.timedelta`` works too) and outside the newest `retain_versions`
    go; with neither, versions older than 14 days. The newest version and tagged versions always
    stay (a tagged version that would go fails the call unless `error_if_tagged_old_versions` is
    False). Files no version names are removed once 7 days old (orphans of failed writes), or at
    once with `delete_unverified` (only safe when nothing else writes the table). With `dry_run`
    nothing is deleted, and tagged old versions do not fail the call: they stay, and their tags are
    listed in tags_in_the_way. Returns the procedure's row: read_version, oldest_version, old_versions,
    data_files_removed, deletion_files_removed, transaction_files_removed, index_files_removed,
    bytes_removed, failed_deletes, dry_run, files, tags_in_the_way.
    """
    if hasattr(older_than, "total_seconds"):
        older_than = f"{older_than.total_seconds()} seconds"
    return _call(spark, "vacuum", table, older_than=older_than, retain_versions=retain_versions, dry_run=dry_run,
                 delete_unverified=delete_unverified, error_if_tagged_old_versions=error_if_tagged_old_versions)


def restore(spark, table, version=None, timestamp=None, tag=None):
    """Makes `version` (or the version current at `timestamp`, or the one `tag` names) of `table` newest again.

    Commits a Lance Restore, as pylance's ``restore``: rows, schema, config and indices of that
    version, as a new version. Give exactly one of `version`, `timestamp` (a ``datetime`` or a
    string Spark reads as a timestamp) and `tag`. Returns the row (restored_version, version).
    """
    stamp = None if timestamp is None else _Sql(f"TIMESTAMP {_sql_literal(str(timestamp))}")
    return _call(spark, "restore", table, version=None if version is None else int(version), timestamp=stamp, tag=tag)


def create_tag(spark, table, tag, version=None):
    """Names `version` of `table` (the newest when None) `tag`, in pylance's layout.

    A tagged version is kept by vacuum, read with ``VERSION AS OF 'tag'`` and restored with
    ``restore(..., tag=...)``. Returns the row (tag, version).
    """
    return _call(spark, "create_tag", table, tag=tag, version=None if version is None else int(version))


def delete_tag(spark, table, tag):
    """Removes `tag` from `table`; returns the row (tag, version) it named."""
    return _call(spark, "delete_tag", table, tag=tag)


def tags(spark, table):
    """The tags of `table` as a DataFrame (tag, version, branch, created_at, updated_at, manifest_size).

    The same rows are ``SELECT * FROM <table>.tags`` in SQL.
    """
    return spark.table(f"{table}.tags")


def create_branch(spark, table, branch, version=None):
    """Makes `branch` of `table` from `version` (the newest when None), in pylance's layout.

    The branch is then read and written as ``<table>.branch_<name>`` (quote a name holding '/').
    `table` may itself name a branch (``lance.db.t.branch_dev``) to branch from it. Returns the
    row (branch, parent_branch, parent_version).
    """
    return _call(spark, "create_branch", table, branch=branch, version=None if version is None else int(version))


def delete_branch(spark, table, branch):
    """Deletes `branch` of `table` and the files written on it; returns the row it was."""
    return _call(spark, "delete_branch", table, branch=branch)


def branches(spark, table):
    """The branches of `table` as a DataFrame (branch, parent_branch, parent_version, created_at,
    latest_version, manifest_size); ``SELECT * FROM <table>.branches`` in SQL."""
    return spark.table(f"{table}.branches")


def vector_search(spark, table, vector_column, query_vector, k=10, distance_type=None, filter=None, nprobes=None,
                  refine_factor=None, version=None, columns=None):
    """The `k` rows of `table` (e.g. ``"lance.db.t"``) nearest `query_vector` by `vector_column`, as a DataFrame.

    The table function ``vector_search(...)`` (docs/vector-search.md) as a call: the same argument
    names, checks, rows and ``_distance`` column (nearest first), with `query_vector` passed as a
    value (a list of numbers, a one-dimensional numpy array or an ``array.array``) instead of SQL
    text that Spark would parse. `distance_type` (``l2``, ``cosine``, ``dot``), `filter` (a SQL
    prefilter), `nprobes`, `refine_factor` and `version` (a version number or tag) as in the table
    function; left as None, their defaults. `columns`: the table's columns to return before
    ``_distance`` (default: all of them; reading fewer, such as ``["id"]``, is quicker).

    When a vector index answers and the rows are few (as for a small `k`), the search runs and the
    rows are read when this is called, on the driver, and ``collect()`` runs no Spark job. Bad
    arguments raise ``LANCE_INVALID_ARGUMENT`` as the table function does.

    In a Spark Connect session (no JVM in this process) this runs the table function with the
    vector written as SQL literals: the same rows, at the cost of Spark parsing them.
    """
    vector = _float32_vector(query_vector)
    if columns is not None:
        columns = [columns] if isinstance(columns, str) else [str(c) for c in columns]
    options = {"distance_type": distance_type, "filter": filter, "nprobes": _whole(nprobes, "nprobes"),
               "refine_factor": _whole(refine_factor, "refine_factor"),
               "version": None if version is None else str(version)}
    options = {name: value for name, value in options.items() if value is not None}
    if columns is not None:
        options["columns"] = columns
    jsession = getattr(spark, "_jsparkSession", None)
    if jsession is None:  # Spark Connect: no JVM to hand the vector to
        return _vector_search_sql(spark, table, vector_column, vector, k, options)
    from pyspark.errors.exceptions.captured import capture_sql_exception
    from pyspark.sql import DataFrame
    k = 10 if k is None else _whole(k, "k")
    # One py4j call: bytes, not a list of boxed floats; the options as JSON, not a Java map built entry by entry.
    jdf = capture_sql_exception(_jvm_search(spark))(jsession, table, vector_column, bytearray(vector.tobytes()), k,
                                                    json.dumps(options))
    return DataFrame(jdf, spark)


_JVM_SEARCH = [None, None]  # the py4j client, VectorSearches.searchFloat32 through it


def _jvm_search(spark):
    """VectorSearches.searchFloat32 of the JVM, looked up once: `spark._jvm.sparklance...` asks the JVM
    for each part of the name in turn, a class-path search each, which took longer than the search."""
    from py4j.java_gateway import JavaClass
    client = spark.sparkContext._gateway._gateway_client
    if _JVM_SEARCH[0] is not client:
        _JVM_SEARCH[:] = [client, JavaClass("sparklance.spark.search.VectorSearches", client).searchFloat32]
    return _JVM_SEARCH[1]


def _float32_vector(query):
    """`query` (numbers, a 1-D numpy array, an array.array) as an ``array('f')`` in little-endian order."""
    if isinstance(query, (str, bytes, bytearray)) or query is None:
        raise TypeError(f"vector_search: query_vector must be a sequence of numbers, got {type(query).__name__}")
    if hasattr(query, "__array__"):  # numpy and the like, without importing numpy
        shape = getattr(query, "shape", None)
        if shape is not None and len(shape) != 1:
            raise ValueError(f"vector_search: query_vector must be one vector (one dimension), got shape {tuple(shape)}")
        if getattr(getattr(query, "dtype", None), "str", None) == "<f4":
            vector = array.array("f")
            vector.frombytes(query.tobytes())
            return vector
    try:
        vector = query if isinstance(query, array.array) and query.typecode == "f" else array.array("f", query)
    except TypeError as e:
        raise TypeError(f"vector_search: query_vector must be a sequence of numbers: {e}") from None
    if sys.byteorder == "big":
        vector = array.array("f", vector)
        vector.byteswap()
    return vector


def _whole(value, name):
    """`value` as an int for a count argument (None stays None); True, 2.5 or "3" are refused."""
    if value is None:
        return None
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise TypeError(f"vector_search: {name} must be an integer, got {value!r}")
    return value.__index__()


def _vector_search_sql(spark, table, vector_column, vector, k, options):
    """The table function with the vector as SQL literals (Spark Connect); the same answer."""
    options = dict(options)
    columns = options.pop("columns", None)
    def number(x):
        return repr(x) + "D" if x == x and abs(x) != float("inf") else f"CAST('{x}' AS DOUBLE)"
    arguments = [f"table => {_sql_literal(table)}", f"vector_column => {_sql_literal(vector_column)}",
                 f"query_vector => array({', '.join(number(x) for x in vector.tolist())})", f"k => {_whole(k, 'k')}"]
    arguments += [f"{name} => {_sql_literal(value)}" for name, value in options.items()]
    selected = "*" if columns is None else ", ".join(["`" + c.replace("`", "``") + "`" for c in columns] + ["_distance"])
    return spark.sql(f"SELECT {selected} FROM vector_search({', '.join(arguments)})")
