package sparklance.spark.scan

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.sql.execution.vectorized.OnHeapColumnVector
import org.apache.spark.sql.types.{IntegerType, LongType}
import org.apache.spark.sql.vectorized.{ArrowColumnVector, ColumnVector, ColumnarBatch}
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{FragmentScanner, ScanBatch}
import sparklance.spark.{Allocators, LanceTable}

final class LanceReaderFactory(target: ReadTarget) extends PartitionReaderFactory {
  override def supportColumnarReads(partition: InputPartition): Boolean = true

  override def createColumnarReader(partition: InputPartition): PartitionReader[ColumnarBatch] =
    new LanceColumnarReader(target, partition.asInstanceOf[LanceInputPartition])

  override def createReader(partition: InputPartition): PartitionReader[InternalRow] =
    throw new UnsupportedOperationException("Lance scans are columnar")
}

/**
 * Decodes a fragment range into ColumnarBatches: fixed-width columns as Spark's off-heap vectors,
 * the others as Arrow vectors; metadata columns (_rowaddr, _fragid) are filled from the physical
 * offsets of the live rows.
 */
final class LanceColumnarReader(target: ReadTarget, partition: LanceInputPartition) extends PartitionReader[ColumnarBatch] {
  private val fragment = DataFragment.parseFrom(partition.fragment)
  private val allocator = Allocators.child(s"scan-${fragment.getId}-${partition.start}")
  private val fields = target.fields
  private val scanner = new FragmentScanner(target.storage, target.tablePath, fragment, fields, allocator,
    partition.start, partition.end)
  private var current: ScanBatch = _
  private var adapted: Seq[AutoCloseable] = Nil
  private var batch: ColumnarBatch = _
  private val primitives = new PrimitiveColumns

  private var remaining: Long = partition.limit.fold(Long.MaxValue)(_.toLong)

  override def next(): Boolean = {
    release()
    if (remaining <= 0 || !scanner.hasNext) return false
    current = scanner.next()
    remaining -= current.numRows
    val byName = fields.map(_.name).zip(current.vectors).toMap
    val n = current.numRows
    val columns: Array[ColumnVector] = target.readSchema.fields.zipWithIndex.map { case (f, ordinal) =>
      f.name match {
        case LanceTable.RowAddress =>
          val v = new OnHeapColumnVector(n, LongType)
          val base = fragment.getId << 32
          var i = 0
          while (i < n) { v.putLong(i, base | current.offsets(i).toLong); i += 1 }
          adapted :+= v; v
        case LanceTable.FragmentId =>
          val v = new OnHeapColumnVector(n, IntegerType)
          v.putInts(0, n, fragment.getId.toInt)
          adapted :+= v; v
        case name =>
          val vec = SparkVectors.adapt(byName(name), f.dataType, allocator)
          if (vec ne byName(name)) adapted :+= vec
          primitives.load(ordinal, vec, f.dataType).getOrElse(new ArrowColumnVector(vec))
      }
    }
    batch = new ColumnarBatch(columns, n)
    true
  }

  override def get(): ColumnarBatch = batch

  private def release(): Unit = {
    adapted.foreach(_.close()); adapted = Nil
    if (current != null) { current.close(); current = null }
    batch = null
  }

  override def close(): Unit = {
    release()
    primitives.close()
    scanner.close()
    allocator.close()
  }
}
