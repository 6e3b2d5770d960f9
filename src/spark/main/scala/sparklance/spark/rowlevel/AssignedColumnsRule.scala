package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.plans.logical._
import org.apache.spark.sql.catalyst.rules.Rule

/**
 * Records on a sparklance table which columns an UPDATE or MERGE against it assigns (see
 * [[RowLevelAssignments]]): Spark rewrites the statement into a row-level write that hands the
 * writer whole rows. A resolution rule, so it runs until the analyzer's resolution settles; it
 * reads the resolved statement where it sees one, else (Spark 4.3 analyses a SQL MERGE into its
 * row-level write before this batch ends) the write's MERGE instructions. The plan is not changed.
 */
object AssignedColumnsRule extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = {
    // A new statement: what an earlier one's plan left unread does not hold for it (see CarriedBlobsRule).
    plan.foreach {
      case u: UpdateTable => RowLevelPlans.lanceTable(u.table).foreach(_.unreadBlobs = Set.empty)
      case m: MergeIntoTable => RowLevelPlans.lanceTable(m.targetTable).foreach(_.unreadBlobs = Set.empty)
      case w: WriteDelta => RowLevelPlans.lanceTable(w.originalTable).foreach(_.unreadBlobs = Set.empty)
      case _ =>
    }
    plan.foreach {
      case u: UpdateTable if u.resolved =>
        RowLevelPlans.lanceTable(u.table).foreach(_.assignments = Some(RowLevelAssignments(changed(u.assignments), inserts = false)))
      case m: MergeIntoTable if m.resolved =>
        RowLevelPlans.lanceTable(m.targetTable).foreach { t =>
          val columns = (m.matchedActions ++ m.notMatchedBySourceActions).flatMap {
            case u: UpdateAction => changed(u.assignments)
            case _: UpdateStarAction => t.sparkSchema.fieldNames.toSet
            case _ => Set.empty[String]
          }.toSet
          t.assignments = Some(RowLevelAssignments(columns, inserts = m.notMatchedActions.nonEmpty))
        }
      case w: WriteDelta if w.resolved =>
        for (t <- RowLevelPlans.lanceTable(w.originalTable); rows <- w.query.collectFirst { case r: MergeRows => r }) {
          // An instruction's output is the operation, then the table's columns, then row id and metadata.
          val columns = w.originalTable.output
          val updates = (rows.matchedInstructions ++ rows.notMatchedBySourceInstructions).collect {
            case k: MergeRows.Keep if k.context == MergeRows.Update => k.output.slice(1, 1 + columns.size)
          }
          val assigned = updates.flatMap(_.zip(columns).collect {
            case (value, column) if !value.semanticEquals(column) => column.name
          }).toSet
          val inserts = rows.notMatchedInstructions.exists {
            case k: MergeRows.Keep => k.context == MergeRows.Insert
            case _ => false
          }
          t.assignments = Some(RowLevelAssignments(assigned, inserts))
        }
      case _ =>
    }
    plan
  }

  /** The top-level columns whose assigned value is not the column itself. */
  private def changed(assignments: Seq[Assignment]): Set[String] =
    assignments.filterNot(a => a.value.semanticEquals(a.key)).flatMap(_.key.references.headOption.map(_.name)).toSet
}
