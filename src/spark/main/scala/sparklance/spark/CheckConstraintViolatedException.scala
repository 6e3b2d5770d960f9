package sparklance.spark

/** Rows of the table violate a CHECK constraint being added: it is not added. */
final class CheckConstraintViolatedException(val table: String, val constraint: String, predicate: String, val rows: Long,
    val version: Long) extends RuntimeException(s"Cannot add CHECK constraint $constraint ($predicate) to $table: $rows row(s) " +
  s"of version $version violate it (the predicate is false for them); update or delete them first. The table is unchanged")
