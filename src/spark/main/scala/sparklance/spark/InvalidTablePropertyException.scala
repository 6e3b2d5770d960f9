package sparklance.spark

import sparklance.spark.errors.{LanceAnalysisException, LanceErrorCondition}

/**
 * A table property sparklance cannot take: an unknown name in its namespace (a key without a dot,
 * or under `sparklance.`), a value of the wrong kind, or a change only CREATE may make. Names the
 * table and the property. An AnalysisException (LANCE_INVALID_TABLE_PROPERTY), as Spark's own
 * errors about a statement's properties are: PySpark raises its AnalysisException, and Spark does
 * not wrap it at ALTER TABLE (where it turns an IllegalArgumentException into
 * UNSUPPORTED_TABLE_CHANGE, which reaches Python as a bare Py4JJavaError).
 */
class InvalidTablePropertyException(val table: String, val property: String, detail: String)
  extends LanceAnalysisException(LanceErrorCondition.InvalidTableProperty,
    Map("table" -> table, "property" -> property, "detail" -> detail.stripSuffix(".")), null)
