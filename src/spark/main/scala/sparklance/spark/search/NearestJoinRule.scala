package sparklance.spark.search

import org.apache.spark.sql.catalyst.expressions.{Ascending, Attribute, AttributeReference, Descending, EqualTo, Expression}
import org.apache.spark.sql.catalyst.plans.{LeftOuter, NearestByDistance}
import org.apache.spark.sql.catalyst.plans.logical.{Filter, Generate, Join, JoinHint, LogicalPlan, NearestByJoin, Project, SubqueryAlias}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.types.{FloatType, LongType}
import scala.util.Using
import sparklance.format.index.vector.{VectorIndexSegment, VectorSearch}
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
 * `EXACT NEAREST` (and APPROX without such an index), where `emb` is a column of float vectors:
 * each task of the query side reads the table's vectors once per block of its rows
 * ([[ExactNearestScan]]) and keeps each query's k best rows by Spark's own value of the function,
 * ties by `_rowid`; the ids are joined to the rows as above. The answer is Spark's plan's, up to
 * which of equal values it keeps. `spark.sparklance.vector_search.exact_join = false` keeps Spark's plan.
 *
 * Memory: a task holds one open index search (its centroids and the partitions it scans, as a
 * single `vector_search` does) and k hits of the row at hand, or, exact, one block of rows and
 * their hits ([[ExactNearestExec]]); the join by id is Spark's, which spills (sort-merge) or
 * broadcasts only under Spark's size threshold.
 *
 * Filters of the table side (`JOIN (SELECT * FROM t WHERE ...) t`) are a prefilter, as
 * `vector_search`'s: the ids of the rows that pass them are found first, on the driver (a bitmap
 * of ids, shipped to the tasks), and each query gets the k nearest rows that pass.
 * A table side that computes anything else (a join, an aggregate, a computed column), a column
 * of other vectors, or another ranking than the three functions nearest first keep Spark's plan.
 */
final class NearestJoinRule(session: org.apache.spark.sql.SparkSession) extends Rule[LogicalPlan] {
  import NearestJoinRule._

  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case j: NearestByJoin if j.resolved => rewrite(j).getOrElse(j)
  }

  private def rewrite(j: NearestByJoin): Option[LogicalPlan] = {
    val (relation, filters) = lanceRelation(j.right).getOrElse(return None)
    val direction = if (j.direction == NearestByDistance) Ascending else Descending
    val (metric, call) = NearestByIndexRule.vectorCall(j.rankingExpression, direction).getOrElse(return None)
    val arguments = call.children.take(2)
    def queryOf(query: Expression, column: Expression) = column match {
      case c: Attribute if relation.outputSet.contains(c) && j.right.outputSet.contains(c) && query.deterministic && query.references.subsetOf(j.left.outputSet) =>
        Some((query, c))
      case _ => None
    }
    val (query, column) = queryOf(arguments.head, arguments(1)).orElse(queryOf(arguments(1), arguments.head)).getOrElse(return None)
    val rowId = relation.metadataOutput.find(_.name == LanceTable.RowId).getOrElse(return None)
    val table = relation.table.asInstanceOf[LanceTable]
    // An index of this column and distance for APPROX; else, for either, an exact search of a
    // column of float vectors (the only one the scan reads as Spark's function does).
    val indexed = j.approx && Using.resource(Allocators.child("nearest_join")) { allocator =>
      Using.resource(new VectorSearch(table.dataset.storage, table.snapshot, column.name, allocator))(_.plan(Some(metric)).indexed)
    }
    if (!indexed && !(SearchSettings.flag(session, ExactJoinConf.stripPrefix(SearchSettings.Prefix)).getOrElse(true) && floatVectors(table, column.name))) return None
    val allowed = if (filters.isEmpty) None else Some(NearestByIndexRule.passing(session, relation, rowId, filters))
    val target = ProbeTarget(table.snapshot.tablePath, table.snapshot.version, table.settings.storageConf, column.name, metric,
      j.numResults, SearchSettings.searchOption(session, "nprobes"), SearchSettings.searchOption(session, "refine_factor"), allowed)
    val outer = j.joinType == LeftOuter
    // LEFT OUTER: a query row with no match keeps one row, with a NULL id that matches no table row.
    val hit = AttributeReference(IndexProbe.HitColumn, LongType, nullable = outer)()
    val distance = AttributeReference(IndexProbe.DistanceColumn, FloatType, nullable = outer)()
    val probes =
      if (indexed) Generate(IndexProbe(query, target), Nil, outer, None, Seq(hit, distance), j.left)
      else {
        val block = SearchSettings.number(session, ExactBlockConf.stripPrefix(SearchSettings.Prefix)).filter(_ > 0).getOrElse(DefaultBlockRows)
        val rows = math.max(1L, math.min(block, MaxBlockHits / j.numResults)).toInt
        ExactNearestScan(query, NearestRanking(NearestRanking.bind(call, query eq arguments.head), metric, direction == Descending),
          target, outer, rows, hit, distance, j.left)
      }
    // The table side with its row ids, carried up through its projections.
    val rows = j.right.transformUp {
      case r: DataSourceV2Relation if r eq relation => NearestByIndexRule.withRowId(r, rowId)
      case p @ Project(list, _) if !list.exists(_.exprId == rowId.exprId) => p.copy(projectList = list :+ rowId)
    }
    Some(Project(j.output, Join(probes, rows, j.joinType, Some(EqualTo(hit, rowId)), JoinHint.NONE)))
  }

  private def floatVectors(table: LanceTable, column: String): Boolean =
    table.snapshot.schema.field(column).exists(f => scala.util.Try(VectorIndexSegment.dimension(f)).isSuccess)

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

object NearestJoinRule {
  /** `false` turns the exact search off: EXACT NEAREST, and APPROX without an index, keep Spark's brute-force plan. */
  val ExactJoinConf: String = SearchSettings.Prefix + "exact_join"
  /** Query rows an exact search answers per pass over the table (default 256). */
  val ExactBlockConf: String = SearchSettings.Prefix + "exact_join_block_rows"
  val DefaultBlockRows = 256L
  /** Bound on block rows × k, the hits a task holds. */
  val MaxBlockHits: Long = 1L << 20
}
