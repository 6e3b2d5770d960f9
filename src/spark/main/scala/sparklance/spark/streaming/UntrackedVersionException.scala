package sparklance.spark.streaming

import sparklance.format.LanceException

/**
 * A version a stream cannot classify: its transaction (which says what it did) is missing or
 * unreadable, or names an operation this sparklance does not know. The query stops rather than
 * guess whether it added rows.
 */
class UntrackedVersionException(val table: String, val version: Long, why: String)
  extends LanceException(s"Version $version of $table: $why, so a stream cannot tell which rows it added. Nothing was " +
    s"skipped: to read on past it, start a new query (a new checkpoint location) with " +
    s"${LanceSourceOptions.StartingVersion} ${version + 1}")
