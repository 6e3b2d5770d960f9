package sparklance.spark.search

import org.apache.spark.sql.catalyst.expressions.{Ascending, Attribute, AttributeReference, Descending, EqualTo, Expression}
import org.apache.spark.sql.catalyst.plans.{LeftOuter, NearestByDistance}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Generate, Join, JoinHint, LogicalPlan, NearestByJoin, Project, SubqueryAlias}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.types.{FloatType, LongType}
import scala.util.Using
import sparklance.format.index.vector.VectorSearch
import sparklance.spark.{Allocators, LanceTable}

/**
 * `q JOIN lance.db.t APPROX NEAREST k BY DISTANCE vector_l2_distance(q.v, t.emb)` (or `BY
 * SIMILARITY vector_cosine_similarity(...)` / `vector_inner_product(...)`, or the DataFrame's
 * `nearestByJoin(..., "approx", ...)`) on a Lance table with a vector index of `emb` and that
 * distance: each task of the query side searches the index for each of its rows
 * ([[IndexProbe]]: the k ids and distances `vector_search` would return for that vector), and the
 * ids are then joined to the table's rows by `_rowid`, an equi-join Spark runs as a hash or
 * sort-merge join. Spark's own plan (RewriteNearestByJoin, in the optimizer's first batch) is a
 * cross join of every query with every row; this rule runs before it, after analysis.
 *
 * Memory: a task holds one open index search (its centroids and the partitions it scans, as a
 * single `vector_search` does) and k hits of the row at hand; the join by id is Spark's, which
 * spills (sort-merge) or broadcasts only under Spark's size threshold.
 *
 * Filters of the table side (`JOIN (SELECT * FROM t WHERE ...) t`) are a prefilter, as
 * `vector_search`'s: the ids of the rows that pass them are found first, on the driver (a bitmap
 * of ids, shipped to the tasks), and each query gets the k nearest rows that pass.
 * EXACT NEAREST, a table side that computes anything else (a join, an aggregate, a computed
 * column), or a table without an index of that column and distance keep Spark's plan.
 */
final class NearestJoinRule(session: org.apache.spark.sql.SparkSession) extends Rule[LogicalPlan] {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case j: NearestByJoin if j.approx && j.resolved => rewrite(j).getOrElse(j)
  }

  private def rewrite(j: NearestByJoin): Option[LogicalPlan] = {
    val (relation, filters) = lanceRelation(j.right).getOrElse(return None)
    val direction = if (j.direction == NearestByDistance) Ascending else Descending
    val (metric, arguments) = NearestByIndexRule.vectorCall(j.rankingExpression, direction).getOrElse(return None)
    def queryOf(query: Expression, column: Expression) = column match {
      case c: Attribute if relation.outputSet.contains(c) && j.right.outputSet.contains(c) && query.deterministic && query.references.subsetOf(j.left.outputSet) =>
        Some((query, c))
      case _ => None
    }
    val (query, column) = queryOf(arguments.head, arguments(1)).orElse(queryOf(arguments(1), arguments.head)).getOrElse(return None)
    val rowId = relation.metadataOutput.find(_.name == LanceTable.RowId).getOrElse(return None)
    val table = relation.table.asInstanceOf[LanceTable]
    val indexed = Using.resource(Allocators.child("nearest_join")) { allocator =>
      Using.resource(new VectorSearch(table.dataset.storage, table.snapshot, column.name, allocator))(_.plan(Some(metric)).indexed)
    }
    if (!indexed) return None
    val allowed = if (filters.isEmpty) None else Some(NearestByIndexRule.passing(session, relation, rowId, filters))
    val target = ProbeTarget(table.snapshot.tablePath, table.snapshot.version, table.settings.storageConf, column.name, metric,
      j.numResults, SearchSettings.searchOption(session, "nprobes"), SearchSettings.searchOption(session, "refine_factor"), allowed)
    val hit = AttributeReference(IndexProbe.HitColumn, LongType)()
    val distance = AttributeReference(IndexProbe.DistanceColumn, FloatType)()
    // LEFT OUTER: a query row the index finds nothing for keeps one row, with a NULL id that matches no table row.
    val probes = Generate(IndexProbe(query, target), Nil, outer = j.joinType == LeftOuter, None, Seq(hit, distance), j.left)
    // The table side with its row ids, carried up through its projections.
    val rows = j.right.transformUp {
      case r: DataSourceV2Relation if r eq relation => NearestByIndexRule.withRowId(r, rowId)
      case p @ Project(list, _) if !list.exists(_.exprId == rowId.exprId) => p.copy(projectList = list :+ rowId)
    }
    Some(Project(j.output, Join(probes, rows, j.joinType, Some(EqualTo(hit, rowId)), JoinHint.NONE)))
  }

  /**
   * The Lance table `plan` reads and the conditions its rows must pass, where `plan` is the table
   * under aliases, column selections and deterministic filters only.
   */
  private def lanceRelation(plan: LogicalPlan): Option[(DataSourceV2Relation, Seq[Expression])] = plan match {
    case SubqueryAlias(_, child) => lanceRelation(child)
    case Project(list, child) if list.forall(_.isInstanceOf[Attribute]) => lanceRelation(child)
    case Filter(condition, child) if condition.deterministic => lanceRelation(child).map { case (r, fs) => (r, fs :+ condition) }
    case r: DataSourceV2Relation if r.table.isInstanceOf[LanceTable] => Some((r, Nil))
    case _ => None
  }
}
