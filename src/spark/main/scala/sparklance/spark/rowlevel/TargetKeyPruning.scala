package sparklance.spark.rowlevel

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Attribute, DynamicPruningSubquery, EqualTo, Expression, InSubquery, ListQuery, PredicateHelper}
import org.apache.spark.sql.catalyst.plans.{Inner, JoinType, LeftOuter, LeftSemi, RightOuter}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Join, LogicalPlan, WriteDelta}
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * Lets the target scan of a MERGE, or of a DELETE / UPDATE whose condition is `key IN (subquery)`,
 * skip the fragments and zones whose values of the join key cannot equal any of the source's
 * keys, without reading them. Spark plans dynamic pruning only on partition columns; this rule
 * adds Spark's own dynamic pruning subquery on the target's key column where the table holds an
 * index data skipping uses on it (zone map, BTREE, BITMAP). At run time Spark gathers the source's
 * keys (reusing their broadcast to the join where there is one, else by an aggregate of the distinct
 * keys, or, from a source an outer join keeps, collecting them as they are: [[CollectedKeysPlanning]])
 * and hands `key IN (...)` to the scan
 * ([[sparklance.spark.scan.LanceRowLevelScan]]), which plans only the rows those keys may be in
 * and, on an integral or string key, reads the key column first and the other columns only of the
 * rows holding one of the keys
 * ([[sparklance.spark.scan.KeySetFilter]]): the filter is placed only where the join or the
 * condition drops the other rows anyway, so it decides nothing. It also
 * stands in for Spark's runtime group filter, whose subquery would read the key column of every
 * fragment to find the few that hold matches, and for [[MergeSourceKeyFilter]]'s own read of the
 * source's keys. The subquery is one Spark always runs (not only when it can reuse a broadcast),
 * which the tests check on each Spark version.
 *
 * It applies to an equality between a target column and source expression, on a join that may
 * drop the target's unmatched rows (the target is not the side an outer join keeps), or to an
 * uncorrelated IN subquery of a condition, when the source is deterministic and small ([[SourceSize.small]]: its keys travel to the driver), and
 * while dynamic partition pruning is on (`spark.sql.optimizer.dynamicPartitionPruning.enabled`).
 */
final class TargetKeyPruning(session: SparkSession) extends Rule[LogicalPlan] with PredicateHelper {

  override def apply(plan: LogicalPlan): LogicalPlan =
    if (!conf.dynamicPartitionPruningEnabled) plan
    else plan.transformDown {
      case w: WriteDelta => RowLevelPlans.targetRead(w).fold[LogicalPlan](w) { read =>
        val indexed = read.operation.indexedColumns
        // Only on an indexed key: on a table without an index (as pylance writes them) the scan
        // could skip nothing, and keeping the rows of the source's keys in the reader measured
        // slower than Spark's filter of the exact key set (MergeSourceKeyFilter) at 10M rows.
        def targetKey(e: Expression) = e match {
          case a: Attribute => read.relation.outputSet.contains(a) && indexed.contains(a.name)
          case _ => false
        }
        if (indexed.isEmpty) w
        else {
          val query = w.query.transformDown {
            case j: Join if !pruned(j) => joinPruning(j, read, targetKey).getOrElse(j)
            case f: Filter if !pruned(f) && f.child.exists(_ eq read.relation) => subqueryPruning(f, read, targetKey).getOrElse(f)
          }
          if (query ne w.query) read.operation.keyPruned = true
          w.withNewChildren(Seq(query))
        }
      }
    }

  /** The join with a dynamic pruning filter on the target's read, where one applies. */
  private def joinPruning(join: Join, read: RowLevelPlans.TargetRead, targetKey: Expression => Boolean): Option[Join] = {
    def reads(side: LogicalPlan) = side.exists(_ eq read.relation)
    val targetLeft = reads(join.left) && prunable(join.joinType, Seq(Inner, LeftSemi, RightOuter))
    val targetRight = reads(join.right) && prunable(join.joinType, Seq(Inner, LeftOuter))
    val source = if (targetLeft) join.right else if (targetRight) join.left else return None
    if (!source.deterministic || !SourceSize.small(source)) return None
    def sourceKey(e: Expression) = e.deterministic && e.references.nonEmpty && e.references.subsetOf(source.outputSet)
    join.condition.toSeq.flatMap(splitConjunctivePredicates).collectFirst {
      case EqualTo(t: Attribute, s) if targetKey(t) && sourceKey(s) => (t, s)
      case EqualTo(s, t: Attribute) if targetKey(t) && sourceKey(s) => (t, s)
    }.map { case (key, keyOfSource) =>
      // The side an outer join keeps is never broadcast: no broadcast of the source to reuse.
      val sourceKept = join.joinType == RightOuter || join.joinType == LeftOuter
      val filter = if (sourceKept) KeyPruningSubquery.collected(key, source, keyOfSource, optimized)
        else KeyPruningSubquery(key, optimized(source), keyOfSource)
      if (targetLeft) join.copy(left = filtered(join.left, read, filter)) else join.copy(right = filtered(join.right, read, filter))
    }
  }

  /**
   * A DELETE or UPDATE whose condition holds `key IN (uncorrelated subquery)`: Spark turns the
   * IN into a semi join only after this rule has run, so the condition is read as it stands.
   */
  private def subqueryPruning(f: Filter, read: RowLevelPlans.TargetRead, targetKey: Expression => Boolean): Option[Filter] =
    splitConjunctivePredicates(f.condition).collectFirst {
      case InSubquery(Seq(key: Attribute), query: ListQuery)
          if targetKey(key) && query.outerAttrs.isEmpty && query.plan.output.size == 1 &&
            query.plan.deterministic && SourceSize.small(query.plan) =>
        KeyPruningSubquery(key, optimized(query.plan), query.plan.output.head)
    }.map(filter => f.copy(child = filtered(f.child, read, filter)))

  /**
   * The source's plan as Spark plans a subquery: this rule runs before scans are built, and
   * Spark optimizes subqueries in an earlier batch, so the rule optimizes its own.
   */
  private def optimized(plan: LogicalPlan): LogicalPlan = session.sessionState.optimizer.execute(plan)

  private def filtered(side: LogicalPlan, read: RowLevelPlans.TargetRead, filter: DynamicPruningSubquery): LogicalPlan =
    side.transformUp { case r if r eq read.relation => Filter(filter, r) }

  private def prunable(joinType: JoinType, types: Seq[JoinType]): Boolean = types.contains(joinType)

  private def pruned(plan: LogicalPlan): Boolean =
    plan.children.exists(_.exists(_.expressions.exists(_.exists(_.isInstanceOf[DynamicPruningSubquery]))))
}
