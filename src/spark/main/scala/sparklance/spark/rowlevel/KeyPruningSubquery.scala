package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.expressions.{Alias, DynamicPruningSubquery, Expression, NamedExpression}
import org.apache.spark.sql.catalyst.plans.logical.{LogicalPlan, Project}

/**
 * Spark's dynamic pruning subquery that filters a scan by the values of one key of another plan,
 * built for the Spark running: 4.3 added a field (an optional broadcast value projection) after
 * the seven of 4.2, against which sparklance compiles.
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

  /**
   * The name of the one column of a build plan whose keys are collected as they are
   * ([[collected]], [[CollectedKeysPlanning]]).
   */
  val CollectedKey = "sparklance_collected_key"

  /**
   * Keeps the rows of the pruned scan whose `key` equals some value of `buildKey` over `build`'s
   * rows. Spark gathers the distinct values with an aggregate of their own (a shuffle: two jobs),
   * unless a broadcast of `build` to a join can be reused (onlyInBroadcast = false).
   */
  def apply(key: Expression, build: LogicalPlan, buildKey: Expression): DynamicPruningSubquery = {
    val fields = Seq[AnyRef](key, build, Seq(buildKey), Seq(0), java.lang.Boolean.FALSE, NamedExpression.newExprId, None)
    constructor.newInstance(fields ++ Seq.fill(constructor.getParameterCount - FieldsOf42)(None): _*)
      .asInstanceOf[DynamicPruningSubquery]
  }

  /**
   * As [[apply]], for a `build` side no join broadcasts (the side an outer join keeps, so there
   * is no broadcast to reuse): its keys, repeats and all, are collected by one read of `build`
   * (none where `build` is local rows), without Spark's aggregate ([[CollectedKeysPlanning]]).
   * The scan's filter holds each key once however often it comes. `optimize` plans the key's
   * projection as Spark would (a local relation of the keys alone).
   */
  def collected(key: Expression, build: LogicalPlan, buildKey: Expression, optimize: LogicalPlan => LogicalPlan): DynamicPruningSubquery = {
    val keys = optimize(Project(Seq(Alias(buildKey, CollectedKey)()), build))
    apply(key, keys, keys.output.head)
  }
}
