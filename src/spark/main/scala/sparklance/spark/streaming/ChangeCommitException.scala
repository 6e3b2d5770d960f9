package sparklance.spark.streaming

import sparklance.format.LanceException

/**
 * A version that changed or removed rows (a delete, update, overwrite, restore), met by a stream
 * that emits appended rows only: the query stops there rather than leave its readers with rows
 * the table no longer holds, unless [[LanceSourceOptions.SkipChangeCommits]] says to skip such
 * versions.
 */
class ChangeCommitException(val table: String, val version: Long, val operation: String, what: String)
  extends LanceException(s"Version $version of $table $what (a Lance $operation commit); a stream of $table emits the " +
    s"rows versions append and cannot emit rows changed or removed. Set the option " +
    s"${LanceSourceOptions.SkipChangeCommits} to true to skip such versions (none of their rows are emitted, added ones " +
    s"neither), or read the table's change data with the option ${LanceSourceOptions.ReadChangeFeed}")
