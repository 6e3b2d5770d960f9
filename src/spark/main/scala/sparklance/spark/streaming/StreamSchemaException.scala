package sparklance.spark.streaming

import sparklance.format.LanceException

/**
 * A version whose schema is not the one a stream reads: that schema is fixed when the query starts
 * (the table's at that time, version `streamVersion`). A change after the start needs a restart,
 * which reads in the new schema; versions before the start are read in it where they lack only
 * columns added since (which read as NULL), and refused otherwise.
 */
class StreamSchemaException(val table: String, val version: Long, val streamVersion: Long)
  extends LanceException(s"Version $version of $table has another schema than the one this stream reads (that of " +
    s"version $streamVersion, when the query started): " + (
      if (version > streamVersion) "the schema changed while the query ran. Restart the query to read the table in " +
        "its new schema; it goes on from where it stopped"
      else s"a stream reads every version in the schema it started with, and rows of version $version have no place in it " +
        s"(a column was dropped, renamed or retyped since; columns added since read as NULL). Start a new query (a new " +
        s"checkpoint location) with ${LanceSourceOptions.StartingVersion} at or after the version of that change"))
