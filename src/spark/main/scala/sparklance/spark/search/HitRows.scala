package sparklance.spark.search

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, LogicalPlan}
import org.apache.spark.sql.catalyst.types.DataTypeUtils
import org.apache.spark.sql.functions.{broadcast, col}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, InterpretedUnsafeProjection, JoinedRow}
import org.apache.spark.sql.connector.expressions.Expressions
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.read.{SupportsPushDownRequiredColumns, SupportsPushDownV2Filters}
import org.apache.spark.sql.types.{FloatType, IntegerType, LongType, StructField, StructType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import scala.jdk.CollectionConverters._
import sparklance.format.table.RowAddress
import sparklance.spark.LanceTable
import sparklance.spark.scan.SplitPacking

/**
 * The rows of an index search's answer (`vector_search`'s, `text_search`'s), read on the driver:
 * the table's own scan (the `_rowid IN (...)` scan a Spark job would run, its readers called
 * here), with no job, no task and no broadcast. Only for small answers: [[fits]] bounds the rows
 * and their stored bytes, above which the rows are read by a Spark job as any scan ([[plan]]).
 */
object HitRows {
  /**
   * A row of a search's answer: its id as `_rowid` holds it, where it is (row address, for the
   * size of its fragment's rows), and the search's value for it (a distance, a score).
   */
  final case class Hit(rowId: Long, address: Long, value: Float)

  /** Session settings bounding a driver-side read: rows (default 1,000) and stored bytes (default 16 MiB). */
  val MaxRowsConf: String = SearchSettings.Prefix + "driver_read_rows"
  val MaxBytesConf: String = SearchSettings.Prefix + "driver_read_bytes"
  val DefaultMaxRows = 1000L
  val DefaultMaxBytes: Long = 16L << 20

  /**
   * Whether the rows of `hits` (their `columns`) are few and small enough to read on the driver:
   * by their fragments' stored bytes per row of those columns, blobs included.
   */
  def fits(session: SparkSession, table: LanceTable, columns: Set[String], hits: Seq[Hit]): Boolean = {
    def setting(conf: String, default: Long) = SearchSettings.number(session, conf.stripPrefix(SearchSettings.Prefix)).getOrElse(default)
    if (hits.size > setting(MaxRowsConf, DefaultMaxRows)) return false
    val fragments = table.snapshot.fragments.map(f => f.getId -> f).toMap
    val perFragment = scala.collection.mutable.Map.empty[Long, Double]
    val bytes = hits.map { h =>
      val id = RowAddress.fragmentId(h.address)
      perFragment.getOrElseUpdate(id, fragments.get(id).fold(0.0)(f => SplitPacking.rowBytes(f, table.snapshot.schema, columns)))
    }.sum + hits.size * table.blobBytesPerRow
    bytes <= setting(MaxBytesConf, DefaultMaxBytes)
  }

  // Made once: Expressions.column runs Spark's SQL parser on the name.
  private lazy val RowIdColumn = Expressions.column(LanceTable.RowId)

  /**
   * The rows of `hits` (of `table`'s version), as `schema` (columns of the table) followed by the
   * hit's value, in the order of `hits`. A hit whose row the scan does not find (none: the
   * search skips deleted rows) is left out.
   */
  def read(table: LanceTable, schema: StructType, hits: Seq[Hit]): Seq[InternalRow] = {
    if (hits.isEmpty) return Nil
    val readSchema = StructType(schema.fields :+ StructField(LanceTable.RowId, LongType, nullable = false))
    val builder = table.newScanBuilder(CaseInsensitiveStringMap.empty())
    builder.asInstanceOf[SupportsPushDownRequiredColumns].pruneColumns(readSchema)
    builder.asInstanceOf[SupportsPushDownV2Filters].pushPredicates(Array(new Predicate("IN",
      (RowIdColumn +: hits.map(h => Expressions.literal(Long.box(h.rowId)))).toArray)))
    val batch = builder.build().toBatch
    val factory = batch.createReaderFactory()
    val n = schema.size
    // Columns of the schema, then the value (after the row id, which the join puts at n).
    // Interpreted: generating and compiling code took longer than copying k rows.
    val project = InterpretedUnsafeProjection.createProjection(
      schema.fields.toSeq.zipWithIndex.map { case (f, i) => BoundReference(i, f.dataType, f.nullable) } :+
        BoundReference(n + 1, FloatType, nullable = false))
    val value = hits.map(h => h.rowId -> h.value).toMap
    val found = scala.collection.mutable.Map.empty[Long, InternalRow]
    for (partition <- batch.planInputPartitions()) {
      val reader = factory.createColumnarReader(partition)
      try while (reader.next()) {
        reader.get().rowIterator().asScala.foreach { row =>
          val id = row.getLong(n)
          found(id) = project(new JoinedRow(row, new GenericInternalRow(Array[Any](value(id))))).copy()
        }
      } finally reader.close()
    }
    hits.flatMap(h => found.get(h.rowId))
  }

  /**
   * The answer of a search of `searched` whose `hits` are in the answer's order: the `selected`
   * columns of their rows and each hit's value as `valueColumn`. Read on the driver, as a
   * LocalRelation Spark answers with no job, when [[fits]]; else a scan of those rows, joined with
   * the hits and ordered as they are.
   */
  def plan(searched: SearchedTable, selected: StructType, hits: Seq[Hit], valueColumn: String): LogicalPlan = {
    val spark = searched.spark
    if (fits(spark, searched.table, selected.fieldNames.toSet, hits))
      LocalRelation(DataTypeUtils.toAttributes(StructType(selected.fields :+
        StructField(valueColumn, FloatType, nullable = false))), read(searched.table, selected, hits))
    else {
      val columns = selected.fieldNames.toIndexedSeq.map(c => col(s"`$c`"))
      val ranked = spark.createDataFrame(spark.sparkContext.parallelize(
        hits.zipWithIndex.map { case (h, rank) => Row(h.rowId, h.value, rank) }, 1),
        StructType(Seq(StructField(HitId, LongType, nullable = false), StructField(valueColumn, FloatType, nullable = false),
          StructField(Rank, IntegerType, nullable = false))))
      searched.rows.where(col(LanceTable.RowId).isin(hits.map(_.rowId): _*))
        .select(columns :+ col(LanceTable.RowId).as(RowIdAlias): _*)
        .join(broadcast(ranked), col(RowIdAlias) === col(HitId))
        .orderBy(col(Rank))
        .select(columns :+ col(valueColumn): _*)
        .queryExecution.analyzed
    }
  }

  private val RowIdAlias = "__search_rowid"
  private val HitId = "__search_hit"
  private val Rank = "__search_rank"
}
