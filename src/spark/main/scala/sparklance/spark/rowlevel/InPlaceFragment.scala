package sparklance.spark.rowlevel

import org.apache.arrow.memory.BufferAllocator
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, UnsafeRow}
import org.apache.spark.sql.types.DataType
import org.roaringbitmap.RoaringBitmap
import scala.collection.mutable.ArrayBuffer
import sparklance.format.proto.TableProtos.DataFile
import sparklance.format.table.RowAddress
import sparklance.spark.write.WriteTarget

/**
 * The updated rows of one fragment in a write task, written the cheaper way (see
 * [[InPlaceUpdates]]): the first rows are held until enough arrived that updating them in place
 * writes fewer bytes than rewriting them whole; then they, and the rest, go to a
 * [[ColumnRewriter]]. A fragment with fewer updated rows, or whose held rows outgrow
 * [[InPlaceUpdates.BufferBytes]], has them rewritten whole by `rewriteRow(metadata, id, row)`.
 * Rows arrive in offset order (the write is sorted by row address).
 */
final class InPlaceFragment(val fragmentId: Long, plan: InPlaceUpdates, target: WriteTarget, rowTypes: Seq[DataType],
    allocator: BufferAllocator, rewriteRow: (InternalRow, InternalRow, InternalRow) => Unit) extends AutoCloseable {
  private val fragment = plan.fragment(fragmentId)
  private val threshold = plan.threshold(fragment.getPhysicalRows)
  private val held = ArrayBuffer.empty[(InternalRow, InternalRow, InternalRow)]
  private var heldBytes = 0L
  private var whole = false
  private var columns: ColumnRewriter = _
  /** The offsets updated in place. */
  val rows = new RoaringBitmap()

  def update(metadata: InternalRow, id: InternalRow, row: InternalRow): Unit =
    if (columns != null) inPlace(id, row)
    else if (whole) rewriteRow(metadata, id, row)
    else {
      held += ((metadata.copy(), id.copy(), row.copy()))
      heldBytes += (row match { case u: UnsafeRow => u.getSizeInBytes.toLong; case _ => 8L * row.numFields })
      if (held.size >= threshold) {
        columns = new ColumnRewriter(target, fragment, plan.fields, plan.positions.toSeq.map(rowTypes), allocator)
        held.foreach { case (_, i, r) => inPlace(i, r) }
        held.clear()
      } else if (heldBytes > InPlaceUpdates.BufferBytes) rewriteHeld()
    }

  /** The column file when the rows were updated in place; None when they were rewritten whole. */
  def finish(): Option[DataFile] =
    if (columns != null) Some(columns.finish())
    else { rewriteHeld(); None }

  def abort(): Unit = if (columns != null) columns.abort()

  /** Whether the rows are being updated in place (so far). */
  def inPlace: Boolean = columns != null

  private def rewriteHeld(): Unit = {
    whole = true
    held.foreach { case (m, i, r) => rewriteRow(m, i, r) }
    held.clear()
  }

  private def inPlace(id: InternalRow, row: InternalRow): Unit = {
    val offset = RowAddress.offset(id.getLong(0))
    val values = new GenericInternalRow(plan.positions.map(p => row.get(p, rowTypes(p)): Any))
    columns.update(offset, values.copy())
    rows.add(offset.toInt)
  }

  override def close(): Unit = if (columns != null) columns.close()
}
