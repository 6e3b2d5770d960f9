package sparklance.spark.search

import org.apache.spark.sql.{Column, DataFrame, Encoders, Row}
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic.{Dataset, SparkSession}
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.{ArrayType, DoubleType, FloatType, StructField, StructType}
import scala.util.Using
import sparklance.format.index.vector.{VectorQuery, VectorSearch, VectorSearchResult}
import sparklance.spark.{Allocators, LanceTable, SparkTypes}

/**
 * How `vector_search` finds its rows. With a vector index of the column and metric (pylance's or
 * sparklance's), the driver searches it as pylance's `nearest` does ([[VectorSearch]]: probed
 * partitions of each segment, refine, the exact distances of fragments no segment covers) and the
 * rows of its answer are read by row id: on the driver, with the scan's own readers and no Spark
 * job, when they are few and small ([[HitRows.fits]]), else by a scan of those rows joined with
 * their distances ([[HitRows.plan]]). Without one the search is exact: every row that passes
 * the filter gets its distance and Spark plans ORDER BY ... LIMIT k as a top-k (each task keeps its
 * k nearest, the driver merges them), never a sort of every row.
 */
final case class VectorSearchPlan(spark: SparkSession, args: VectorSearchArguments) {
  import VectorSearchPlan._

  private val searched = SearchedTable(spark, VectorSearchFunction.name, args.table, args.version)

  /** The Lance table (at the version searched). */
  private def table: LanceTable = searched.table

  /** The table's rows, as a DataFrame: for a prefilter, and an exact search. */
  private def rows: DataFrame = searched.rows

  private def field: StructField = searched.field(args.column)

  /** The columns of the answer before `_distance`: `args.columns`, by default every column. */
  private lazy val selected: StructType = args.columns.fold(searched.schema)(searched.fields)

  /** Checks that the column is a vector of the query's dimension. */
  private def checkColumn(): Unit = {
    val f = field
    f.dataType match {
      case ArrayType(FloatType | DoubleType, _) =>
      case other => throw new IllegalArgumentException(
        s"vector_search: column '${f.name}' of ${args.table} is ${other.sql}, not a vector (an array of floats)")
    }
    if (f.metadata.contains(SparkTypes.VectorDimension) && f.metadata.getLong(SparkTypes.VectorDimension) != args.query.length)
      throw new IllegalArgumentException(s"vector_search: column '${f.name}' of ${args.table} holds vectors of " +
        s"${f.metadata.getLong(SparkTypes.VectorDimension)} items; the query vector has ${args.query.length}")
  }

  private def filtered: DataFrame = args.filter.fold(rows)(f => rows.where(f))

  private def columns: Seq[Column] = selected.fieldNames.toIndexedSeq.map(c => col(s"`$c`"))

  /** The index search, where an index of the column and metric exists; None: search exactly. */
  private def indexed: Option[VectorSearchResult] = Using.resource(Allocators.child("vector_search")) { allocator =>
    Using.resource(new VectorSearch(table.dataset.storage, table.snapshot, field.name, allocator)) { search =>
      if (!search.plan(Some(args.metric)).indexed) None
      else {
        // A prefilter: the ids of the rows that pass it, as the index stores them.
        val allowed = args.filter.map { f =>
          val ids = PassingRowIds.of(spark, rows.where(f).select(col(LanceTable.RowId)).queryExecution.analyzed)
          (id: Long) => ids.contains(id)
        }
        Some(search.search(VectorQuery(field.name, args.query, args.k, args.nprobes, args.refineFactor, Some(args.metric), allowed)))
      }
    }
  }

  /**
   * The answer: an index search's rows by row id ([[HitRows.plan]], nearest first as pylance orders
   * them: distance, then row id), else the exact search.
   */
  def logicalPlan: LogicalPlan = {
    selected
    checkColumn()
    indexed match {
      case Some(result) =>
        HitRows.plan(searched, selected, result.hits.map(h => HitRows.Hit(h.rowId, h.address, h.distance)), DistanceColumn)
      case None =>
        val distance = VectorDistanceColumn(args.metric, col(s"`${field.name}`"), args.query)
        filtered.select(columns :+ distance.as(DistanceColumn) :+ col(LanceTable.RowId).as(TieBreak): _*)
          .where(col(DistanceColumn).isNotNull)
          .orderBy(col(DistanceColumn), col(TieBreak))
          .limit(args.k)
          .drop(TieBreak)
          .queryExecution.analyzed
    }
  }
}

object VectorSearchPlan {
  /** `plan` (resolved) as a DataFrame of `spark`. */
  def dataFrame(spark: SparkSession, plan: LogicalPlan): DataFrame = new Dataset[Row](spark, plan, Encoders.row(plan.schema))

  /** The distance column of the answer, as pylance and lance-spark name it. */
  val DistanceColumn = "_distance"
  private val TieBreak = "__vector_search_rowid"
}
