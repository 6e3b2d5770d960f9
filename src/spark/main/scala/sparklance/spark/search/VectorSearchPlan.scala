package sparklance.spark.search

import org.apache.spark.sql.{Column, DataFrame, Row}
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.classic.SparkSession
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.{ArrayType, DoubleType, FloatType, LongType, StructField, StructType}
import scala.util.Using
import sparklance.format.index.vector.{VectorQuery, VectorSearch, VectorSearchResult}
import sparklance.spark.{Allocators, LanceTable, SparkTypes}

/**
 * How `vector_search` finds its rows. With a vector index of the column and metric (pylance's or
 * sparklance's), the driver searches it as pylance's `nearest` does ([[VectorSearch]]: probed
 * partitions of each segment, refine, the exact distances of fragments no segment covers) and the
 * rows of its answer are read by row id: on the driver, with the scan's own readers and no Spark
 * job, when they are few and small ([[HitRows.fits]]), else by a scan of those rows joined with
 * their distances. Without one the search is exact: every row that passes
 * the filter gets its distance and Spark plans ORDER BY ... LIMIT k as a top-k (each task keeps its
 * k nearest, the driver merges them), never a sort of every row.
 */
final case class VectorSearchPlan(spark: SparkSession, args: VectorSearchArguments) {
  import VectorSearchPlan._

  private lazy val rows: DataFrame = args.version match {
    case None => spark.table(args.table)
    case Some(v) if v.nonEmpty && v.forall(_.isDigit) => spark.sql(s"SELECT * FROM ${args.table} VERSION AS OF $v")
    case Some(tag) => spark.sql(s"SELECT * FROM ${args.table} VERSION AS OF '${tag.replace("\\", "\\\\").replace("'", "\\'")}'")
  }

  /** The Lance table (at the version searched) behind `rows`. */
  private lazy val table: LanceTable = rows.queryExecution.analyzed.collectFirst {
    case r: DataSourceV2Relation if r.table.isInstanceOf[LanceTable] => r.table.asInstanceOf[LanceTable]
  }.getOrElse(throw new IllegalArgumentException(s"vector_search: ${args.table} is not a Lance table"))

  private lazy val field: StructField = {
    val f = rows.schema.find(_.name.equalsIgnoreCase(args.column)).getOrElse(throw new IllegalArgumentException(
      s"vector_search: ${args.table} has no column '${args.column}'; its columns are ${rows.columns.mkString(", ")}"))
    f.dataType match {
      case ArrayType(FloatType | DoubleType, _) =>
      case other => throw new IllegalArgumentException(
        s"vector_search: column '${f.name}' of ${args.table} is ${other.sql}, not a vector (an array of floats)")
    }
    if (f.metadata.contains(SparkTypes.VectorDimension) && f.metadata.getLong(SparkTypes.VectorDimension) != args.query.length)
      throw new IllegalArgumentException(s"vector_search: column '${f.name}' of ${args.table} holds vectors of " +
        s"${f.metadata.getLong(SparkTypes.VectorDimension)} items; the query vector has ${args.query.length}")
    f
  }

  private def filtered: DataFrame = args.filter.fold(rows)(f => rows.where(f))

  private def columns: Seq[Column] = rows.columns.toIndexedSeq.map(c => col(s"`$c`"))

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
   * The answer: for an index search whose rows may be read on the driver, a LocalRelation of them
   * (nearest first, as pylance orders them: distance, then row id), which Spark answers with no job.
   */
  def logicalPlan: LogicalPlan = {
    field
    indexed match {
      case Some(result) if HitRows.fits(spark, table, rows.columns.toSet, result.hits) =>
        val schema = rows.schema
        LocalRelation(DataTypeUtils.toAttributes(StructType(schema.fields :+
          StructField(DistanceColumn, FloatType, nullable = false))), HitRows.read(table, schema, result.hits))
      case found => dataFrame(found).queryExecution.analyzed
    }
  }

  private def dataFrame(found: Option[VectorSearchResult]): DataFrame =
    found match {
      case Some(result) =>
        // The answer's rows, read by row id (the scan reads only those), with the search's distances.
        val hits = spark.createDataFrame(spark.sparkContext.parallelize(result.hits.map(h => Row(h.rowId, h.distance)), 1),
          StructType(Seq(StructField(HitId, LongType, nullable = false), StructField(DistanceColumn, FloatType, nullable = false))))
        rows.where(col(LanceTable.RowId).isin(result.hits.map(_.rowId): _*))
          .select(columns :+ col(LanceTable.RowId).as(TieBreak): _*)
          .join(org.apache.spark.sql.functions.broadcast(hits), col(TieBreak) === col(HitId))
          .select(columns :+ col(DistanceColumn) :+ col(TieBreak): _*)
          .orderBy(col(DistanceColumn), col(TieBreak))
          .drop(TieBreak)
      case None =>
        val distance = VectorDistanceColumn(args.metric, col(s"`${field.name}`"), args.query)
        filtered.select(columns :+ distance.as(DistanceColumn) :+ col(LanceTable.RowId).as(TieBreak): _*)
          .where(col(DistanceColumn).isNotNull)
          .orderBy(col(DistanceColumn), col(TieBreak))
          .limit(args.k)
          .drop(TieBreak)
    }
}

object VectorSearchPlan {
  /** The distance column of the answer, as pylance and lance-spark name it. */
  val DistanceColumn = "_distance"
  private val TieBreak = "__vector_search_rowid"
  private val HitId = "__vector_search_hit"
}
