package sparklance.spark.rowlevel

/**
 * What an UPDATE or MERGE writes into the rows it updates: the top-level columns it assigns a new
 * value (the others keep theirs), and whether a MERGE also inserts rows.
 */
final case class RowLevelAssignments(changed: Set[String], inserts: Boolean)
