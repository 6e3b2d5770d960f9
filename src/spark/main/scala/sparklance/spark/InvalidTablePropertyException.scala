package sparklance.spark

/**
 * A table property sparklance cannot take: an unknown name in its namespace (a key without a dot,
 * or under `sparklance.`), a value of the wrong kind, or a change only CREATE may make. Names the
 * table and the property; an IllegalArgumentException, so PySpark raises its IllegalArgumentException.
 */
class InvalidTablePropertyException(val table: String, val property: String, detail: String)
  extends IllegalArgumentException(s"Table property '$property' of $table: $detail")
