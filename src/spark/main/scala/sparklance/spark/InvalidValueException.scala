package sparklance.spark

import sparklance.format.LanceException

/**
 * A value a column cannot hold, met while a task writes or reads rows: a number beyond the range
 * of the column's Lance type, a vector of another dimension, text that is not JSON, a time beyond
 * what Spark's microseconds hold. Found row by row in the tasks, so it fails the statement and
 * nothing of it is committed. `message` names the column (and the table, where known).
 */
class InvalidValueException(val column: String, message: String, cause: Throwable = null) extends LanceException(message, cause) {
  def this(table: String, column: String, detail: String, cause: Throwable) = this(column, s"Column '$column' of $table: $detail", cause)
  def this(table: String, column: String, detail: String) = this(table, column, detail, null)
}

/** A NULL written into a column the table declares NOT NULL. */
class NotNullViolationException(val table: String, val column: String)
  extends LanceException(s"NULL value in non-nullable column '$column' of $table")

/**
 * A value a statement gave an identity column that takes none (GENERATED ALWAYS AS IDENTITY), or an
 * UPDATE of such a column: refused, naming the column, and nothing of the statement is committed.
 */
class IdentityViolationException(val table: String, val column: String, detail: String)
  extends LanceException(s"Identity column '$column' of $table: $detail")
