package sparklance.spark.write

import org.apache.spark.sql.catalyst.expressions.SortOrder
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.connector.catalog.Table
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import sparklance.spark.{LanceTable, StagedLanceTable}

/**
 * Optimized writes keep the order the user gave the rows. The write's own rebalance hashes rows
 * on a few columns, which spreads every key range over all the new fragments (an append sorted by
 * `id` became runs of ids in every fragment, so a zone map on `id` could skip little). Before
 * Spark adds that rebalance (V2Writes runs after this rule), an append or overwrite into a Lance
 * table whose input is
 *  - sorted (`orderBy`, `ORDER BY`, under projections and filters): its sort's range shuffle is
 *    given the fragment-sized advisory partition size of the optimized write, so adaptive
 *    execution merges neighbouring ranges into partitions of about one fragment, each task
 *    writing one contiguous run of the order;
 *  - range partitioned (`repartitionByRange`, perhaps sorted within partitions): kept as it is;
 * and the write is marked ([[OrderedInputRule.Kept]]) to ask for no distribution of its own.
 */
object OrderedInputRule extends Rule[LogicalPlan] {
  /** Write option marking an input this rule arranged, so the write adds no rebalance. */
  val Kept = "sparklance.internal.input_order_kept"

  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformDown {
    case w: AppendData if w.write.isEmpty => arrange(w.table, w.query, w.writeOptions).fold(w)(a => w.copy(query = a._1, writeOptions = a._2))
    case w: OverwriteByExpression if w.write.isEmpty =>
      arrange(w.table, w.query, w.writeOptions).fold(w)(a => w.copy(query = a._1, writeOptions = a._2))
    case w: OverwritePartitionsDynamic if w.write.isEmpty =>
      arrange(w.table, w.query, w.writeOptions).fold(w)(a => w.copy(query = a._1, writeOptions = a._2))
  }

  private def arrange(target: LogicalPlan, query: LogicalPlan, options: Map[String, String])
      : Option[(LogicalPlan, Map[String, String])] = target match {
    case r: DataSourceV2Relation if !options.contains(Kept) =>
      optimized(r.table, query, options).flatMap(o => ordered(query, o.advisoryPartitionBytes)).map(_ -> (options + (Kept -> "true")))
    case _ => None
  }

  private def optimized(table: Table, query: LogicalPlan, options: Map[String, String]): Option[OptimizedWrite] = table match {
    case t: LanceTable => OptimizedWrite.plan(query.schema, t.snapshot.config, options, t.bytesPerRow)
    case t: StagedLanceTable => t.optimizedWrite(query.schema, options)
    case _ => None
  }

  private def range(expressions: Seq[org.apache.spark.sql.catalyst.expressions.Expression]): Boolean =
    expressions.nonEmpty && expressions.forall(_.isInstanceOf[SortOrder])

  /** `plan` with its order kept into fragments of about `advisory` bytes; None when it has no order to keep. */
  private def ordered(plan: LogicalPlan, advisory: Long): Option[LogicalPlan] = plan match {
    case s: Sort if s.global => Some(s.copy(child = RepartitionByExpression(s.order, s.child, None, Some(advisory))))
    case s: Sort => s.child match {
      case r: RepartitionByExpression if range(r.partitionExpressions) => Some(plan)
      case _ => None
    }
    case r: RepartitionByExpression if range(r.partitionExpressions) => Some(plan)
    case p: Project => ordered(p.child, advisory).map(c => p.copy(child = c))
    case f: Filter => ordered(f.child, advisory).map(c => f.copy(child = c))
    case a: SubqueryAlias => ordered(a.child, advisory).map(c => a.copy(child = c))
    case _ => None
  }
}
