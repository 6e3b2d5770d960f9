package sparklance.spark.errors

import scala.jdk.CollectionConverters._
import org.apache.spark.{BreakingChangeInfo, QueryContext, SparkThrowable}
import org.apache.spark.sql.AnalysisException
import org.apache.spark.sql.execution.QueryExecutionException

/**
 * A sparklance error in Spark's error framework. Spark looks a condition's SQLSTATE and template up
 * in its own error-conditions.json, which cannot hold a connector's conditions, so these come from
 * the [[LanceErrorCondition]] instead. The original error (of `sparklance.format`, which does not
 * depend on Spark) is the cause.
 */
trait LanceThrowable extends SparkThrowable {
  def condition: LanceErrorCondition
  def parameters: Map[String, String]

  override def getCondition: String = condition.name
  override def getSqlState: String = condition.sqlState
  override def getMessageParameters: java.util.Map[String, String] = parameters.asJava
  override def getDefaultMessageTemplate: String = condition.template
  override def isInternalError: Boolean = false
  // Spark's default looks the condition up in its own file, which does not have it.
  override def getBreakingChangeInfo: BreakingChangeInfo = null
  override def getQueryContext: Array[QueryContext] = Array.empty
}

/**
 * Raised in PySpark as AnalysisException. Spark re-creates an AnalysisException (`copy`) as a plain
 * one, so the SQLSTATE and template also go into its own fields.
 */
class LanceAnalysisException(val condition: LanceErrorCondition, val parameters: Map[String, String], cause: Throwable)
  extends AnalysisException(condition.fullMessage(parameters), None, None, Option(cause), Some(condition.name), parameters,
    Array.empty[QueryContext], Some(condition.sqlState), Some(condition.template)) with LanceThrowable {
  override def getQueryContext: Array[QueryContext] = context

  /**
   * Itself, without the statement's position: PySpark logs an exception with a SQL query context
   * by looking its condition's message up in Spark's own error-conditions file, which has no
   * `LANCE_` condition, and raises Spark's INTERNAL_ERROR instead of this one (an error of a
   * table function's arguments, thrown while Spark resolves the function, gets a position).
   */
  override def withPosition(origin: org.apache.spark.sql.catalyst.trees.Origin): AnalysisException = this
}

/** Raised in PySpark as IllegalArgumentException. */
class LanceIllegalArgumentException(val condition: LanceErrorCondition, val parameters: Map[String, String], cause: Throwable)
  extends IllegalArgumentException(condition.fullMessage(parameters), cause) with LanceThrowable

/** Raised in PySpark as QueryExecutionException (see [[ErrorKind.Execution]]). */
class LanceExecutionException(val condition: LanceErrorCondition, val parameters: Map[String, String], cause: Throwable)
  extends QueryExecutionException(condition.fullMessage(parameters), cause) with LanceThrowable
