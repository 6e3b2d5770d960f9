package sparklance.spark

import org.apache.spark.sql.AnalysisException

/**
 * A table property sparklance cannot take: an unknown name in its namespace (a key without a dot,
 * or under `sparklance.`), a value of the wrong kind, or a change only CREATE may make. Names the
 * table and the property. An AnalysisException, as Spark's own errors about a statement's
 * properties are: PySpark raises its AnalysisException, and Spark does not wrap it at ALTER TABLE
 * (where it turns an IllegalArgumentException into UNSUPPORTED_TABLE_CHANGE, which reaches
 * Python as a bare Py4JJavaError).
 */
class InvalidTablePropertyException(val table: String, val property: String, detail: String)
  extends AnalysisException(s"Table property '$property' of $table: $detail", None, None, None, None, Map.empty, Array.empty)
