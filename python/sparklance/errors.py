"""sparklance's error conditions, as PySpark raises them (see docs/errors.md for the full list).

Each sparklance error reaches Python as a PySpark exception (``AnalysisException``,
``IllegalArgumentException`` or ``QueryExecutionException``) whose ``getCondition()`` is the name
of a condition below (``LANCE_...``) and whose ``getSqlState()`` its SQLSTATE, in classic and in
Spark Connect sessions alike::

    from pyspark.errors import PySparkException
    from sparklance import errors

    for attempt in range(3):
        try:
            spark.sql("MERGE INTO lance.db.t ...")
            break
        except PySparkException as e:
            if not errors.is_retryable(e):
                raise
"""

CONCURRENT_COMMIT_CONFLICT = "LANCE_CONCURRENT_COMMIT_CONFLICT"
"""Another writer committed a version this statement cannot be reconciled with; nothing of it was
written, and running it again (against the new version) can succeed. SQLSTATE 40001."""

CONCURRENT_TABLE_REPLACED = "LANCE_CONCURRENT_TABLE_REPLACED"
"""The table was replaced or restored while the statement ran; nothing of it was written. SQLSTATE 40000."""

COMMIT_STATE_UNKNOWN = "LANCE_COMMIT_STATE_UNKNOWN"
"""The commit may or may not have landed: read the table's history before running it again. SQLSTATE 40003."""

FILE_GONE = "LANCE_FILE_GONE"
"""A file of the version being read was removed (a vacuum) while the statement ran; nothing was
written and running it again reads the newest version. SQLSTATE 58P01."""

RETRYABLE = frozenset({CONCURRENT_COMMIT_CONFLICT, FILE_GONE})
"""The conditions where running the same statement again can succeed."""


def condition(error):
    """The error condition of `error` (a PySpark exception, e.g. ``"LANCE_VERSION_NOT_FOUND"``), or None."""
    get = getattr(error, "getCondition", None)
    return get() if callable(get) else None


def is_retryable(error):
    """Whether running the statement that raised `error` again, unchanged, can succeed: a
    concurrent commit conflict, or a file a concurrent vacuum removed."""
    return condition(error) in RETRYABLE
