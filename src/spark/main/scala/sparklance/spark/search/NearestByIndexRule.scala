package sparklance.spark.search

import org.apache.spark.sql.catalyst.expressions.{Alias, Ascending, Attribute, AttributeReference, Descending, Expression, In, Literal, RuntimeReplaceable}
import org.apache.spark.sql.catalyst.expressions.objects.StaticInvoke
import org.apache.spark.sql.catalyst.plans.logical.{Filter, GlobalLimit, LocalLimit, LogicalPlan, Project, Sort}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.types.{ArrayType, DoubleType, FloatType, LongType}
import org.roaringbitmap.longlong.Roaring64NavigableMap
import scala.util.Using
import sparklance.format.index.vector.{VectorMetric, VectorQuery, VectorSearch}
import sparklance.spark.{Allocators, LanceTable}

/**
 * `SELECT ... FROM t [WHERE ...] ORDER BY vector_l2_distance(emb, <constant>) LIMIT k` (or
 * `vector_cosine_similarity(...) DESC`, `vector_inner_product(...) DESC`) on a table with a vector
 * index of `emb` and that distance: the index names the candidates, as `vector_search` would (its
 * WHERE a prefilter: the ids of the rows that pass it are found first), and the scan reads only
 * those rows; Spark then orders them by the statement's own exact expression and keeps k. Without
 * such an index the statement runs as Spark plans it, a top-k over every row.
 * `spark.sparklance.vector_search.nprobes` and `.refine_factor` set the index search's options.
 */
final class NearestByIndexRule(session: org.apache.spark.sql.SparkSession) extends Rule[LogicalPlan] {
  import NearestByIndexRule._

  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformDown {
    case limit @ GlobalLimit(Literal(k: Int, _), LocalLimit(_, child)) if k > 0 => rewrite(k, child).fold[LogicalPlan](limit) { c =>
      GlobalLimit(limit.limitExpr, LocalLimit(limit.limitExpr, c))
    }
  }

  /** `child` (Project? over Sort over Projects and Filters over a Lance relation) reading only the index's candidates. */
  private def rewrite(k: Int, child: LogicalPlan): Option[LogicalPlan] = {
    val (top, sort) = child match {
      case p @ Project(_, s: Sort) => (Some(p), s)
      case s: Sort => (None, s)
      case _ => return None
    }
    if (!sort.global || sort.order.size != 1) return None
    // The Projects and Filters under the Sort, down to the relation.
    val chain = Iterator.iterate[Option[LogicalPlan]](Some(sort.child)) {
      case Some(p @ (_: Project | _: Filter)) => Some(p.children.head)
      case _ => None
    }.takeWhile(_.isDefined).flatten.toSeq
    val relation = chain.lastOption.collect { case r: DataSourceV2Relation if r.table.isInstanceOf[LanceTable] => r }.getOrElse(return None)
    // Already rewritten (or the user names rows by id): nothing to do.
    if (chain.exists { case Filter(condition, _) => condition.exists {
        case In(a: Attribute, _) => a.name == LanceTable.RowId
        case _ => false
      }
      case _ => false
    }) return None
    val aliases = chain.collect { case Project(list, _) => list.collect { case a: Alias => a.exprId -> a.child } }.flatten.toMap
    def unalias(e: Expression): Expression = e match {
      case a: Attribute => aliases.get(a.exprId).map(unalias).getOrElse(a)
      case other => other
    }
    val (metric, column, query) = distance(unalias(sort.order.head.child), sort.order.head.direction).getOrElse(return None)
    if (!relation.outputSet.contains(column)) return None
    val rowId = relation.metadataOutput.find(_.name == LanceTable.RowId).getOrElse(return None)
    val table = relation.table.asInstanceOf[LanceTable]
    val hits = Using.resource(Allocators.child("nearest")) { allocator =>
      Using.resource(new VectorSearch(table.dataset.storage, table.snapshot, column.name, allocator)) { search =>
        if (!search.plan(Some(metric)).indexed || query.length != search.dim) return None
        val filters = chain.collect { case Filter(condition, _) => condition }
        val allowed = if (filters.isEmpty) None else Some(passing(session, relation, rowId, filters))
        search.search(VectorQuery(column.name, query, k, SearchSettings.searchOption(session, "nprobes"),
          SearchSettings.searchOption(session, "refine_factor"), Some(metric),
          allowed.map(ids => (id: Long) => ids.contains(id)))).hits
      }
    }
    val candidates = Filter(In(rowId, hits.map(h => Literal(h.rowId, LongType))), withRowId(relation, rowId))
    val newChild = sort.child.transformUp { case r: DataSourceV2Relation if r eq relation => candidates }
    val newSort = sort.copy(child = keepOutput(newChild, sort.child.output))
    Some(top.fold[LogicalPlan](newSort)(p => p.copy(child = newSort)))
  }

  /** `plan` projected to `output` where the relation's added row id column would otherwise show. */
  private def keepOutput(plan: LogicalPlan, output: Seq[Attribute]): LogicalPlan =
    if (plan.output == output) plan else Project(output, plan)
}

object NearestByIndexRule {
  /** The ids of the relation's rows that pass `filters`: the index's prefilter. */
  def passing(session: org.apache.spark.sql.SparkSession, relation: DataSourceV2Relation, rowId: AttributeReference,
      filters: Seq[Expression]): Roaring64NavigableMap = {
    val plan = Project(Seq(rowId), filters.foldLeft[LogicalPlan](withRowId(relation, rowId))((p, c) => Filter(c, p)))
    PassingRowIds.of(session.asInstanceOf[SparkSession], plan)
  }

  /** The relation with its `_rowid` column, which a query that selects `_rowid` already reads. */
  def withRowId(relation: DataSourceV2Relation, rowId: AttributeReference): DataSourceV2Relation =
    if (relation.output.exists(_.exprId == rowId.exprId)) relation else relation.copy(output = relation.output :+ rowId)

  /**
   * The metric, vector column and query of an ordering by one of Spark's vector functions, in the
   * direction that puts the nearest rows first; None for any other ordering. Spark's functions are
   * replaced by static calls of VectorFunctionImplUtils before optimization.
   */
  def distance(e: Expression, direction: org.apache.spark.sql.catalyst.expressions.SortDirection): Option[(VectorMetric, Attribute, Array[Float])] =
    vectorCall(e, direction).flatMap { case (metric, call) =>
      val (column, constant) = call.arguments.take(2) match {
        case Seq(a: Attribute, c) if c.foldable => (a, c)
        case Seq(c, a: Attribute) if c.foldable => (a, c)
        case _ => return None
      }
      val query = (constant.dataType, constant.eval()) match {
        case (ArrayType(FloatType, _), a: ArrayData) => a.toFloatArray()
        case (ArrayType(DoubleType, _), a: ArrayData) => a.toDoubleArray().map(_.toFloat)
        case _ => return None
      }
      Some((metric, column, query))
    }

  /**
   * The metric and the static call (its first two arguments the vectors) of one of Spark's vector
   * functions whose order in `direction` puts the nearest rows first; None for any other
   * expression. Before optimization the call is Spark's RuntimeReplaceable expression, after it
   * the static call that replaces it.
   */
  def vectorCall(e: Expression, direction: org.apache.spark.sql.catalyst.expressions.SortDirection): Option[(VectorMetric, StaticInvoke)] = e match {
    case r: RuntimeReplaceable => vectorCall(r.replacement, direction)
    case s: StaticInvoke if s.staticObject.getName.endsWith("VectorFunctionImplUtils") && s.arguments.size >= 2 =>
      val metric = (s.functionName, direction) match {
        case ("vectorL2Distance", Ascending) => VectorMetric.L2
        case ("vectorCosineSimilarity", Descending) => VectorMetric.Cosine
        case ("vectorInnerProduct", Descending) => VectorMetric.Dot
        case _ => return None
      }
      Some((metric, s))
    case _ => None
  }
}
