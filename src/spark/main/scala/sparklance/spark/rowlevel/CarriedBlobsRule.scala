package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Expression, Literal}
import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * Keeps an UPDATE or MERGE from reading the bytes of the blob columns it leaves alone. Such a
 * statement updates its rows in place (see [[InPlaceUpdates.carriedBlobs]]), where those columns
 * are never written, yet Spark hands the writer whole rows and so reads every blob of every updated
 * row (an external object's too). Where a row's value of such a column is only passed through,
 * it is replaced by NULL; column pruning then drops the column from the target scan unless a
 * condition or an assignment reads it. The table records which columns were dropped, and the
 * write refuses to rewrite rows whole without them.
 */
object CarriedBlobsRule extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformDown {
    case w: WriteDelta if w.resolved => RowLevelPlans.lanceTable(w.originalTable) match {
      case Some(t) =>
        val command = RowLevelPlans.targetRead(w).map(_.operation.command())
        val carried = command.fold(Set.empty[String])(InPlaceUpdates.carriedBlobs(t, _))
        val columns = w.originalTable.output
        val positions = columns.zipWithIndex.collect { case (c, i) if carried.contains(c.name) => i -> c }
        if (positions.isEmpty) { t.unreadBlobs = Set.empty; w }
        else {
          val query = w.query match {
            case p: Project => p.copy(projectList = dropped(p.projectList, positions, named = true))
            case m: MergeRows => m.copy(
              matchedInstructions = m.matchedInstructions.map(instruction(_, positions)),
              notMatchedBySourceInstructions = m.notMatchedBySourceInstructions.map(instruction(_, positions)))
            case other => other
          }
          if (query == w.query) w
          else {
            t.unreadBlobs = carried
            w.copy(query = query)
          }
        }
      case None => w
    }
  }

  private def instruction(i: MergeRows.Instruction, positions: Seq[(Int, Attribute)]): MergeRows.Instruction = i match {
    case k: MergeRows.Keep if k.context == MergeRows.Update => k.copy(output = dropped(k.output, positions, named = false))
    case other => other
  }

  /**
   * `values` (the operation, then the table's columns in order, then row id and metadata) with
   * each carried column's value that is the column itself replaced by NULL, under the same name
   * and id.
   */
  private def dropped[E <: Expression](values: Seq[E], positions: Seq[(Int, Attribute)], named: Boolean): Seq[E] = {
    var out = values
    positions.foreach { case (i, column) =>
      val at = 1 + i
      val nothing = Literal(null, column.dataType)
      if (at < out.size) out(at) match {
        case a: Alias if a.child.semanticEquals(column) => out = out.updated(at, Alias(nothing, a.name)(a.exprId).asInstanceOf[E])
        case a: Attribute if a.semanticEquals(column) =>
          out = out.updated(at, (if (named) Alias(nothing, a.name)(a.exprId) else nothing).asInstanceOf[E])
        case e if !named && e.semanticEquals(column) => out = out.updated(at, nothing.asInstanceOf[E])
        case _ =>
      }
    }
    out
  }

}
