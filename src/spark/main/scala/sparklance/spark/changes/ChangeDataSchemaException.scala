package sparklance.spark.changes

import org.apache.spark.sql.AnalysisException

/**
 * A change-data range across a schema change whose older rows have no place in the schema of the
 * range's end (a drop, a rename, a type change that is no widening): names the table, the range,
 * the version that made the change and the column. An AnalysisException, as the range is part of
 * the statement: PySpark raises its own AnalysisException.
 */
class ChangeDataSchemaException(val table: String, val first: Long, val last: Long, val version: Long, val column: String,
    what: String)
  extends AnalysisException(s"Change data of $table for versions $first to $last cannot be served in the schema of " +
    s"version $last: version $version $what, and rows of the versions before it have no place in that schema. Read " +
    s"change data from version ${version + 1} on, or in ranges that end before version $version",
    None, None, None, None, Map.empty, Array.empty)
