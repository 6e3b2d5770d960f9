package sparklance.spark

import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Cast, Coalesce, Expression, NamedExpression}
import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.apache.spark.sql.catalyst.plans.logical.{Assignment, Filter, LogicalPlan, Project, UpdateTable, V2WriteCommand}
import sparklance.spark.rowlevel.RowLevelPlans
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.types.{MetadataBuilder, StructField}

/**
 * Computes generated columns in appends and overwrites of a sparklance table (INSERT, INSERT
 * OVERWRITE, DataFrame writes; see [[GeneratedColumns]]): a DataFrame written by name without the
 * column gets it, computed from the row's other columns; where the statement gives it NULL (an
 * INSERT with a column list that leaves it out, or a NULL value) it is computed too. A value the
 * statement gives is kept, and then the generated column's CHECK constraint (which Spark adds
 * to the write) refuses it if it is not the expression's value. An UPDATE that changes a column a
 * generated column reads sets the generated column too; a MERGE does not (its rows must give the
 * value, which the check verifies).
 */
object GeneratedColumnsRule extends Rule[LogicalPlan] {
  /** Marks the values this rule put in, so that it does not put them in twice. */
  private val Marker = "sparklance.generated"

  override def apply(plan: LogicalPlan): LogicalPlan = plan.resolveOperators {
    case w: V2WriteCommand if w.query.resolved && !marked(w.query) => lanceTable(w.table) match {
      case Some(t) if GeneratedColumns.of(t.sparkSchema).nonEmpty =>
        val generated = GeneratedColumns.of(t.sparkSchema)
        if (!w.outputResolved && w.isByName) {
          // Columns the data lacks (matched by name, case-insensitively, as Spark's resolution matches them).
          val missing = generated.filterNot { case (f, _) => w.query.output.exists(_.name.equalsIgnoreCase(f.name)) }
          if (missing.isEmpty) w
          else w.withNewQuery(Project(w.query.output ++ missing.map { case (f, e) => computed(f, parse(e)) }, w.query))
        } else if (w.outputResolved && w.query.output.size == t.sparkSchema.size) {
          // By position: the i-th value is the table's i-th column. A check Spark put on top stays on top.
          val (checks, data) = w.query match {
            case Filter(cond, child) => (Some(cond), child)
            case other => (None, other)
          }
          val byColumn = t.sparkSchema.fieldNames.map(_.toLowerCase).zip(data.output).toMap
          val filled = data.output.zip(t.sparkSchema.fields).map { case (a, f) =>
            GeneratedColumns.expression(f).fold[NamedExpression](a) { e =>
              val bound = parse(e).transform { case u: UnresolvedAttribute if byColumn.contains(u.nameParts.head.toLowerCase) &&
                  u.nameParts.size == 1 => byColumn(u.nameParts.head.toLowerCase) }
              Alias(Coalesce(Seq(a, Cast(bound, f.dataType))), a.name)(exprId = a.exprId, explicitMetadata = Some(marker))
            }
          }
          val project = Project(filled, data)
          w.withNewQuery(checks.fold[LogicalPlan](project)(Filter(_, project)))
        } else w
      case _ => w
    }
    case u: UpdateTable if u.resolved => RowLevelPlans.lanceTable(u.table) match {
      case Some(t) if GeneratedColumns.of(t.sparkSchema).nonEmpty => recomputed(u, t)
      case _ => u
    }
  }

  /**
   * An UPDATE that assigns a column a generated column's expression reads, and not the generated
   * column itself, assigns it the expression of the new values (Spark has aligned the assignments:
   * every column has one, the column itself where the statement left it as it was).
   */
  private def recomputed(u: UpdateTable, t: LanceTable): LogicalPlan = {
    val byColumn = u.assignments.flatMap(a => a.key match {
      case k: Attribute => Some(k.name.toLowerCase -> a)
      case _ => None
    }).toMap
    def unchanged(a: Assignment) = a.value.semanticEquals(a.key)
    val changed = byColumn.filterNot { case (_, a) => unchanged(a) }.keySet
    val columns = u.table.output.map(a => a.name.toLowerCase -> a).toMap
    val generated = GeneratedColumns.of(t.sparkSchema).flatMap { case (f, e) =>
      val expr = parse(e)
      val reads = expr.collect { case a: UnresolvedAttribute => a.nameParts.head.toLowerCase }.toSet
      val own = byColumn.get(f.name.toLowerCase)
      if (own.exists(a => !unchanged(a) || isMarked(a.value)) || (reads & changed).isEmpty) None
      else columns.get(f.name.toLowerCase).map { key =>
        // The expression of the row's new values: an assigned column's value, else the column as it is.
        val bound = expr.transform { case x: UnresolvedAttribute if x.nameParts.size == 1 && byColumn.contains(x.nameParts.head.toLowerCase) =>
          byColumn(x.nameParts.head.toLowerCase).value }
        own -> Assignment(key, Alias(Cast(bound, f.dataType), f.name)(explicitMetadata = Some(marker)))
      }
    }
    if (generated.isEmpty) u
    else {
      val replaced = generated.collect { case (Some(old), now) => old -> now }.toMap
      val assignments = u.assignments.map(a => replaced.getOrElse(a, a)) ++ generated.collect { case (None, now) => now }
      // makeCopy, not copy: UpdateTable has other fields in other Spark versions.
      u.makeCopy(u.productIterator.map {
        case s: Seq[_] if s eq u.assignments => assignments
        case other => other.asInstanceOf[AnyRef]
      }.toArray)
    }
  }

  private def isMarked(e: Expression): Boolean = e match {
    case a: Alias => a.metadata.contains(Marker)
    case _ => false
  }

  private def parse(sql: String): Expression = CatalystSqlParser.parseExpression(sql)

  private def computed(f: StructField, e: Expression): NamedExpression =
    Alias(Cast(e, f.dataType), f.name)(explicitMetadata = Some(marker))

  private lazy val marker = new MetadataBuilder().putBoolean(Marker, true).build()

  private def marked(plan: LogicalPlan): Boolean = plan.exists {
    case p: Project => p.projectList.exists { case a: Alias => a.metadata.contains(Marker); case _ => false }
    case _ => false
  }

  private def lanceTable(table: org.apache.spark.sql.catalyst.analysis.NamedRelation): Option[LanceTable] = table match {
    case r: DataSourceV2Relation => r.table match { case t: LanceTable => Some(t); case _ => None }
    case _ => None
  }
}
