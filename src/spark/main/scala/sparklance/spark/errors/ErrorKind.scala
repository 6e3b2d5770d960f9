package sparklance.spark.errors

/**
 * Which Java class an error condition is raised as, which decides the class PySpark raises: its
 * classic session (`captured.py`) and its Connect client (`connect.py`) both pick the Python class
 * by the JVM class (Spark's own classes and a few java.lang ones), and an unknown class arrives in
 * classic PySpark as a bare Py4JJavaError. The condition's name and SQLSTATE reach Python either way.
 */
sealed trait ErrorKind

object ErrorKind {
  /** A statement that names something missing or gives a bad option: `pyspark.errors.AnalysisException`. */
  case object Analysis extends ErrorKind
  /** A bad argument of a procedure or setting: `pyspark.errors.IllegalArgumentException`. */
  case object InvalidArgument extends ErrorKind
  /**
   * A statement that failed while it ran against the table (a concurrent commit, a damaged or
   * vanished file): `pyspark.errors.QueryExecutionException`, the only Spark class PySpark maps
   * that a connector can raise with a condition of its own (SparkRuntimeException takes only
   * Spark's own conditions).
   */
  case object Execution extends ErrorKind
}
