package sparklance.spark.write

/** What an append or overwrite does with the rows already in the table. */
sealed trait WriteMode {
  /** Whether the write replaces the table's rows, given whether it brings any. */
  def replaces(hasRows: Boolean): Boolean
}

object WriteMode {
  /** INSERT INTO, `writeTo(t).append()`: the rows are added. */
  case object Append extends WriteMode {
    override def replaces(hasRows: Boolean): Boolean = false
  }

  /** INSERT OVERWRITE, `writeTo(t).overwrite(...)`: the rows replace the table, even when there are none. */
  case object Replace extends WriteMode {
    override def replaces(hasRows: Boolean): Boolean = true
  }

  /**
   * `writeTo(t).overwritePartitions()`, INSERT OVERWRITE under dynamic partition overwrite: the
   * rows replace the partitions they fall in. A Lance table is one partition, so rows replace the
   * table and no rows replace nothing.
   */
  case object ReplacePartitions extends WriteMode {
    override def replaces(hasRows: Boolean): Boolean = hasRows
  }
}
