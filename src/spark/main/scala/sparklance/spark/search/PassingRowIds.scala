package sparklance.spark.search

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, DataInputStream, DataOutputStream}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.classic.SparkSession
import org.roaringbitmap.longlong.Roaring64NavigableMap

/**
 * The row ids a prefilter lets through (a vector search's `filter`, the table side's WHERE of a
 * nearest join), as one bitmap. Each task folds the ids it reads into a compressed bitmap and the
 * driver ORs those: the driver holds bitmaps, never one row per passing id, so a filter that
 * passes most of a large table costs about a bit a row (runs of consecutive row addresses
 * compress further), not the tens of bytes a collected row takes.
 */
object PassingRowIds {
  /** The ids `plan` returns; its single column is `_rowid`. */
  def of(session: SparkSession, plan: LogicalPlan): Roaring64NavigableMap = {
    val all = new Roaring64NavigableMap()
    bitmaps(session.sessionState.executePlan(plan).toRdd).foreach(bytes => all.or(read(bytes)))
    all
  }

  // Separate so the closure Spark ships captures nothing of the caller.
  private def bitmaps(rows: org.apache.spark.rdd.RDD[InternalRow]): Array[Array[Byte]] =
    rows.mapPartitions { it =>
      val ids = new Roaring64NavigableMap()
      it.foreach(r => ids.addLong(r.getLong(0)))
      ids.runOptimize()
      Iterator(write(ids))
    }.collect()

  private def write(ids: Roaring64NavigableMap): Array[Byte] = {
    val bytes = new ByteArrayOutputStream()
    val out = new DataOutputStream(bytes)
    ids.serialize(out)
    out.flush()
    bytes.toByteArray
  }

  private def read(bytes: Array[Byte]): Roaring64NavigableMap = {
    val ids = new Roaring64NavigableMap()
    ids.deserialize(new DataInputStream(new ByteArrayInputStream(bytes)))
    ids
  }
}
