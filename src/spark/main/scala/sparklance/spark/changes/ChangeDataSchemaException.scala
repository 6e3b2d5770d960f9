package sparklance.spark.changes

import sparklance.spark.errors.{LanceAnalysisException, LanceErrorCondition}

/**
 * A change-data range across a schema change whose older rows have no place in the schema of the
 * range's end (a drop, a rename, a type change that is no widening): names the table, the range,
 * the version that made the change and the column. An AnalysisException
 * (LANCE_CHANGE_DATA_ACROSS_SCHEMA_CHANGE), as the range is part of the statement: PySpark raises
 * its own AnalysisException. `stream`: raised by a change-data stream, which says how to restart.
 */
class ChangeDataSchemaException(val table: String, val first: Long, val last: Long, val version: Long, val column: String,
    what: String, stream: Boolean = false)
  extends LanceAnalysisException(LanceErrorCondition.ChangeDataAcrossSchemaChange, Map("table" -> table,
    "first" -> first.toString, "last" -> last.toString, "version" -> version.toString, "change" -> what,
    "next" -> (version + 1).toString, "column" -> column,
    // A stream restarted from its checkpoint would stop at the same place.
    "advice" -> (if (stream) s"; a change-data stream stops here: restart the query from a new checkpoint location " +
      s"with startingVersion ${version + 1}" else "")), null)
