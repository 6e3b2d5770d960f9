package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.expressions.{DynamicPruningSubquery, Expression, NamedExpression}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan

/**
 * Spark's dynamic pruning subquery that filters a scan by the distinct values of one key of
 * another plan, built for the Spark running: 4.3 added a field (an optional broadcast value
 * projection) after the seven of 4.2, against which sparklance compiles.
 */
private[rowlevel] object KeyPruningSubquery {
  private lazy val constructor = {
    val widest = classOf[DynamicPruningSubquery].getConstructors.maxBy(_.getParameterCount)
    val added = widest.getParameterTypes.drop(FieldsOf42)
    if (!added.forall(_ == classOf[Option[_]])) throw new UnsupportedOperationException(
      s"This Spark's DynamicPruningSubquery has fields sparklance does not know: ${added.map(_.getName).mkString(", ")}")
    widest
  }
  private val FieldsOf42 = 7

  /** Keeps the rows of the pruned scan whose `key` equals some value of `buildKey` over `build`'s rows. */
  def apply(key: Expression, build: LogicalPlan, buildKey: Expression): DynamicPruningSubquery = {
    // The keys are gathered by their own aggregate unless a broadcast of `build` can be reused
    // (onlyInBroadcast = false).
    val fields = Seq[AnyRef](key, build, Seq(buildKey), Seq(0), java.lang.Boolean.FALSE, NamedExpression.newExprId, None)
    constructor.newInstance(fields ++ Seq.fill(constructor.getParameterCount - FieldsOf42)(None): _*)
      .asInstanceOf[DynamicPruningSubquery]
  }
}
