package sparklance.spark.search

import org.apache.spark.sql.{Column, DataFrame, Encoders, Row}
import org.apache.spark.sql.catalyst.analysis.AsOfVersion
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.classic.{Dataset, SparkSession}
import org.apache.spark.sql.connector.catalog.TableCatalog
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.functions.col
import org.apache.spark.sql.types.{ArrayType, DoubleType, FloatType, LongType, StructField, StructType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
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

  /**
   * The table, loaded from its catalog as `args.table` names it (at `version`): no query is
   * analyzed, the name is all there is to resolve. A temporary view is not a table.
   */
  private lazy val relation: DataSourceV2Relation = {
    val parts = nameParts(args.table)
    if (spark.sessionState.catalog.isTempView(parts)) notLance("a temporary view, not a Lance table")
    val (catalog, ident) = sparklance.spark.CatalogNames.resolve(spark, parts)
    val tables = catalog match {
      case t: TableCatalog => t
      case _ => notLance(s"in catalog ${catalog.name()}, which holds no tables")
    }
    args.version.fold(tables.loadTable(ident))(tables.loadTable(ident, _)) match {
      case t: LanceTable => DataSourceV2Relation.create(t, Some(catalog), Some(ident), CaseInsensitiveStringMap.empty(),
        args.version.map(AsOfVersion(_)))
      case _ => notLance("not a Lance table")
    }
  }

  /** The parts of a table name as Spark's parser splits it; plain names (`lance.db.t`) without running the parser. */
  private def nameParts(name: String): Seq[String] = {
    val plain = name.split("\\.", -1).toSeq
    def simple(part: String) = part.nonEmpty && (part.head.isLetter || part.head == '_') &&
      part.forall(c => c < 128 && (c.isLetterOrDigit || c == '_'))
    if (plain.forall(simple)) plain else spark.sessionState.sqlParser.parseMultipartIdentifier(name)
  }

  private def notLance(why: String): Nothing = throw new IllegalArgumentException(s"vector_search: ${args.table} is $why")

  /** The Lance table (at the version searched). */
  private lazy val table: LanceTable = relation.table.asInstanceOf[LanceTable]

  /** The table's rows, as a DataFrame: for a prefilter, and a search whose rows a Spark job reads. */
  private lazy val rows: DataFrame = VectorSearchPlan.dataFrame(spark, relation)

  private def field: StructField = schema.find(_.name.equalsIgnoreCase(args.column)).getOrElse(throw new IllegalArgumentException(
    s"vector_search: ${args.table} has no column '${args.column}'; its columns are ${schema.fieldNames.mkString(", ")}"))

  private lazy val schema: StructType = relation.schema

  /** The columns of the answer before `_distance`: `args.columns`, by default every column. */
  private lazy val selected: StructType = args.columns.fold(schema) { names =>
    names.groupBy(_.toLowerCase(java.util.Locale.ROOT)).collectFirst { case (_, same) if same.size > 1 =>
      throw new IllegalArgumentException(s"vector_search: column '${same.head}' is selected twice")
    }
    StructType(names.map(n => schema.find(_.name.equalsIgnoreCase(n)).getOrElse(throw new IllegalArgumentException(
      s"vector_search: ${args.table} has no column '$n'; its columns are ${schema.fieldNames.mkString(", ")}"))))
  }

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
   * The answer: for an index search whose rows may be read on the driver, a LocalRelation of them
   * (nearest first, as pylance orders them: distance, then row id), which Spark answers with no job.
   */
  def logicalPlan: LogicalPlan = {
    selected
    checkColumn()
    indexed match {
      case Some(result) if HitRows.fits(spark, table, selected.fieldNames.toSet, result.hits) =>
        LocalRelation(DataTypeUtils.toAttributes(StructType(selected.fields :+
          StructField(DistanceColumn, FloatType, nullable = false))), HitRows.read(table, selected, result.hits))
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
  /** `plan` (resolved) as a DataFrame of `spark`. */
  def dataFrame(spark: SparkSession, plan: LogicalPlan): DataFrame = new Dataset[Row](spark, plan, Encoders.row(plan.schema))

  /** The distance column of the answer, as pylance and lance-spark name it. */
  val DistanceColumn = "_distance"
  private val TieBreak = "__vector_search_rowid"
  private val HitId = "__vector_search_hit"
}
