package sparklance.spark.search

import org.apache.spark.sql.catalyst.expressions.{ApplyFunctionExpression, AttributeReference, ExprId}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format.UnsupportedFeatureException
import sparklance.format.index.Indices
import sparklance.format.index.text.TextIndexSegment
import sparklance.format.skipping.DataSkipping
import sparklance.spark.{Allocators, LanceTable}
import sparklance.spark.errors.LanceErrors

/**
 * Binds each `lance_match` call on a column of a Lance table to the column's INVERTED index: the
 * call then tokenizes as the index does (its `params`), so that it keeps the rows pylance's
 * `full_text_query` finds, and the scan can read only the rows the index names
 * ([[sparklance.spark.scan.DataFilters]]). A call on a column without one, or on anything but a
 * table's column as it is read (an expression of it, a column renamed in a view Spark does not
 * see through), keeps pylance's default analyzer. It runs before Spark pushes filters into scans,
 * among the operator optimizations, which bring a filter down to its table.
 */
object TextMatchIndexRule extends Rule[LogicalPlan] {
  private def unbound(plan: LogicalPlan): Boolean = plan.exists(_.expressions.exists(_.exists {
    case ApplyFunctionExpression(f: TextMatchFunction, _) => !f.checked
    case _ => false
  }))

  override def apply(plan: LogicalPlan): LogicalPlan = if (!unbound(plan)) plan else LanceErrors.converting {
    val columns: Map[ExprId, (LanceTable, String)] = plan.collect {
      case r: DataSourceV2Relation if r.table.isInstanceOf[LanceTable] =>
        r.output.map(a => a.exprId -> (r.table.asInstanceOf[LanceTable], a.name))
    }.flatten.toMap
    val found = mutable.Map.empty[ExprId, TextMatchFunction.Binding]
    plan.transformAllExpressions {
      case ApplyFunctionExpression(f: TextMatchFunction, children @ Seq(a: AttributeReference, _))
          if !f.checked && columns.contains(a.exprId) =>
        val (table, column) = columns(a.exprId)
        ApplyFunctionExpression(TextMatchFunction(found.getOrElseUpdate(a.exprId, binding(table, column)), checked = true), children)
    }
  }

  /** The analyzer of the INVERTED index on `column` (the first by name, as text_search takes), else the defaults. */
  def binding(table: LanceTable, column: String): TextMatchFunction.Binding = {
    val snapshot = table.snapshot
    val field = snapshot.schema.field(column).getOrElse(return TextMatchFunction.Default)
    val segments = Indices.parse(snapshot.file.indexSection, s"${table.tableName} version ${snapshot.version}")
      .filter(i => DataSkipping.isInverted(i) && i.getFieldsList.asScala.map(_.intValue) == Seq(field.id))
    segments.headOption.fold(TextMatchFunction.Default) { first =>
      val named = segments.filter(_.getName == first.getName)
      val params = Using.resource(Allocators.child(s"INVERTED index params of ${table.tableName}")) { allocator =>
        named.map(s => TextIndexSegment.params(table.dataset.storage, snapshot.files, snapshot.tablePath, s, allocator)).distinct
      }
      val analyzers = params.map(p => TextMatchFunction.Binding(Some(first.getName), p)).map(b => b -> b.analyzer)
      if (analyzers.map(_._2).distinct.size > 1) throw new UnsupportedFeatureException(
        s"Segments of index '${first.getName}' of ${table.tableName} tokenize differently: ${params.mkString("; ")}")
      analyzers.head._1
    }
  }
}
