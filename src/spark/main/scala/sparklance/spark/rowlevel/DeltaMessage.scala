package sparklance.spark.rowlevel

import org.apache.spark.sql.connector.write.WriterCommitMessage
import org.roaringbitmap.RoaringBitmap
import sparklance.format.deletion.PortableBitmaps
import sparklance.format.proto.TableProtos.DataFragment

/**
 * A row-level write task's report: per fragment the offsets it deleted (portable Roaring bytes),
 * the fragments holding the rows it inserted or rewrote, and counts for the metrics.
 */
final case class DeltaMessage(
    deletes: Map[Long, Array[Byte]],
    fragments: Array[Array[Byte]],
    deletedRows: Long,
    updatedRows: Long,
    insertedRows: Long) extends WriterCommitMessage {
  def deletedOffsets: Map[Long, RoaringBitmap] = deletes.map { case (id, bytes) => id -> PortableBitmaps.fromBytes(bytes) }
  def newFragments: Seq[DataFragment] = fragments.toSeq.map(DataFragment.parseFrom)
}
