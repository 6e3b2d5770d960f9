package sparklance.spark.search

import org.apache.spark.sql.SparkSessionExtensions
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.{Expression, ExpressionInfo}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic.SparkSession
import sparklance.spark.errors.LanceErrors

/**
 * A search table function of sparklance's session extension, named `name`, `usage` its
 * `DESCRIBE FUNCTION` line: its plan is made once, from constant arguments, when Spark resolves
 * the call; a bad argument is LANCE_INVALID_ARGUMENT.
 */
abstract class SearchTableFunction(val name: String, usage: String) {
  /** The answer to the call with arguments `args`, in the active session. */
  protected def plan(spark: SparkSession, args: Seq[Expression]): LogicalPlan

  def build(args: Seq[Expression]): LogicalPlan = LanceErrors.convertingArguments()(plan(SparkSession.active, args))

  def register(extensions: SparkSessionExtensions): Unit = extensions.injectTableFunction((FunctionIdentifier(name),
    new ExpressionInfo(getClass.getName.stripSuffix("$"), null, name, usage, ""), build _))
}
