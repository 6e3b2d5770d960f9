package sparklance.spark.search

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, GenericInternalRow, InterpretedUnsafeProjection, JoinedRow}
import org.apache.spark.sql.connector.expressions.Expressions
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.read.{SupportsPushDownRequiredColumns, SupportsPushDownV2Filters}
import org.apache.spark.sql.types.{FloatType, LongType, StructField, StructType}
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import scala.jdk.CollectionConverters._
import sparklance.format.index.vector.VectorHit
import sparklance.format.table.RowAddress
import sparklance.spark.LanceTable
import sparklance.spark.scan.SplitPacking

/**
 * The rows of an index search's answer, read on the driver: the table's own scan (the `_rowid IN
 * (...)` scan a Spark job would run, its readers called here), with no job, no task and no
 * broadcast. Only for small answers: [[fits]] bounds the rows and their stored bytes, above which
 * the rows are read by a Spark job as any scan.
 */
object HitRows {
  /** Session settings bounding a driver-side read: rows (default 1,000) and stored bytes (default 16 MiB). */
  val MaxRowsConf: String = SearchSettings.Prefix + "driver_read_rows"
  val MaxBytesConf: String = SearchSettings.Prefix + "driver_read_bytes"
  val DefaultMaxRows = 1000L
  val DefaultMaxBytes: Long = 16L << 20

  /**
   * Whether the rows of `hits` (their `columns`) are few and small enough to read on the driver:
   * by their fragments' stored bytes per row of those columns, blobs included.
   */
  def fits(session: SparkSession, table: LanceTable, columns: Set[String], hits: Seq[VectorHit]): Boolean = {
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
   * hit's distance, in the order of `hits`. A hit whose row the scan does not find (none: the
   * search skips deleted rows) is left out.
   */
  def read(table: LanceTable, schema: StructType, hits: Seq[VectorHit]): Seq[InternalRow] = {
    if (hits.isEmpty) return Nil
    val readSchema = StructType(schema.fields :+ StructField(LanceTable.RowId, LongType, nullable = false))
    val builder = table.newScanBuilder(CaseInsensitiveStringMap.empty())
    builder.asInstanceOf[SupportsPushDownRequiredColumns].pruneColumns(readSchema)
    builder.asInstanceOf[SupportsPushDownV2Filters].pushPredicates(Array(new Predicate("IN",
      (RowIdColumn +: hits.map(h => Expressions.literal(Long.box(h.rowId)))).toArray)))
    val batch = builder.build().toBatch
    val factory = batch.createReaderFactory()
    val n = schema.size
    // Columns of the schema, then the distance (after the row id, which the join puts at n).
    // Interpreted: generating and compiling code took longer than copying k rows.
    val project = InterpretedUnsafeProjection.createProjection(
      schema.fields.toSeq.zipWithIndex.map { case (f, i) => BoundReference(i, f.dataType, f.nullable) } :+
        BoundReference(n + 1, FloatType, nullable = false))
    val distance = hits.map(h => h.rowId -> h.distance).toMap
    val found = scala.collection.mutable.Map.empty[Long, InternalRow]
    for (partition <- batch.planInputPartitions()) {
      val reader = factory.createColumnarReader(partition)
      try while (reader.next()) {
        reader.get().rowIterator().asScala.foreach { row =>
          val id = row.getLong(n)
          found(id) = project(new JoinedRow(row, new GenericInternalRow(Array[Any](distance(id))))).copy()
        }
      } finally reader.close()
    }
    hits.flatMap(h => found.get(h.rowId))
  }
}
