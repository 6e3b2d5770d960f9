package sparklance.spark.streaming

import sparklance.format.LanceException

/**
 * A version whose schema is not the one a stream reads: that schema is fixed when the query starts
 * (the table's at that time, version `streamVersion`). A change after the start needs a restart,
 * which reads in the new schema; versions before the start in another schema cannot be read in it.
 */
class StreamSchemaException(val table: String, val version: Long, val streamVersion: Long)
  extends LanceException(s"Version $version of $table has another schema than the one this stream reads (that of " +
    s"version $streamVersion, when the query started): " + (
      if (version > streamVersion) "the schema changed while the query ran. Restart the query to read the table in " +
        "its new schema; it goes on from where it stopped"
      else s"a stream reads every version in the schema it started with. Start a new query (a new checkpoint location) " +
        s"with ${LanceSourceOptions.StartingVersion} at or after the version that made the schema the latest's"))
