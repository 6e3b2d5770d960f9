package sparklance.spark.search

import org.apache.arrow.memory.BufferAllocator
import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{Expression, Generator, UnaryExpression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.types.{ArrayType, DoubleType, FloatType, LongType, StructField, StructType}
import sparklance.format.Resources
import sparklance.format.index.vector.{VectorMetric, VectorQuery, VectorSearch}
import sparklance.format.table.Dataset
import sparklance.hadoop.Storages
import sparklance.spark.Allocators

/**
 * What a task needs to search one table version's vector index: where the table is (and how to
 * reach its storage), its version, the column, and the search's options.
 */
final case class ProbeTarget(tablePath: String, version: Long, storageConf: Map[String, String], column: String,
    metric: VectorMetric, k: Int, nprobes: Option[Int], refineFactor: Option[Int]) {
  /** This version's search, with the allocator it reads into; closing it closes both. */
  def open(): ProbeTarget.Opened = {
    val allocator = Allocators.child("nearest_join")
    Resources.closeOnFailure(Seq(allocator)) {
      val storage = Storages.forPath(tablePath, storageConf)
      ProbeTarget.Opened(new VectorSearch(storage, new Dataset(storage, tablePath).snapshot(Some(version)), column, allocator), allocator)
    }
  }

  def query(vector: Array[Float]): VectorQuery = VectorQuery(column, vector, k, nprobes, refineFactor, Some(metric))
}

object ProbeTarget {
  final case class Opened(search: VectorSearch, allocator: BufferAllocator) extends AutoCloseable {
    override def close(): Unit = Resources.closeAll(Seq(search, allocator))
  }
}

/**
 * The generator of a nearest join planned as index probes ([[NearestJoinRule]]): for each row of
 * the query side, the ids (as the index stores them, i.e. `_rowid`) and distances of the k rows the
 * index search of `target` names for the row's query vector, nearest first; none for a NULL vector.
 * Each task opens the search once, when its first row comes, and closes it when the task ends:
 * the index's partitions, deletion vectors and row id index are then read once per task, not once
 * per row.
 */
final case class IndexProbe(child: Expression, target: ProbeTarget) extends UnaryExpression with Generator with CodegenFallback {
  override def elementSchema: StructType = StructType(Seq(
    StructField(IndexProbe.HitColumn, LongType, nullable = false),
    StructField(IndexProbe.DistanceColumn, FloatType, nullable = false)))

  override def prettyName: String = "lance_index_probe"

  override def supportCodegen: Boolean = false

  // One search per deserialized copy of this expression, i.e. per task.
  @transient private lazy val opened: ProbeTarget.Opened = {
    val opened = target.open()
    Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit](_ => opened.close()))
    opened
  }

  override def eval(input: InternalRow): IterableOnce[InternalRow] = {
    val value = child.eval(input)
    if (value == null) return Nil
    val array = value.asInstanceOf[ArrayData]
    if (array.numElements() == 0 || (0 until array.numElements()).exists(array.isNullAt)) return Nil
    val vector = child.dataType match {
      case ArrayType(DoubleType, _) => array.toDoubleArray().map(_.toFloat)
      case _ => array.toFloatArray()
    }
    def probe(o: ProbeTarget.Opened) = o.search.search(target.query(vector)).hits.map(h => InternalRow(h.rowId, h.distance))
    // Evaluated outside a task (a driver-side evaluation), the search is opened for this row only.
    if (TaskContext.get() == null) scala.util.Using.resource(target.open())(probe) else probe(opened)
  }

  override protected def withNewChildInternal(newChild: Expression): IndexProbe = copy(child = newChild)
}

object IndexProbe {
  val HitColumn = "__lance_hit_rowid"
  val DistanceColumn = "__lance_hit_distance"
}
