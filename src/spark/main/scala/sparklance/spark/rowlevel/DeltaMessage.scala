package sparklance.spark.rowlevel

import org.apache.spark.sql.connector.write.WriterCommitMessage
import org.roaringbitmap.RoaringBitmap
import sparklance.format.deletion.PortableBitmaps
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}
import sparklance.format.skipping.WrittenZones

/**
 * A row-level write task's report: per fragment the offsets it deleted (portable Roaring bytes),
 * the fragments holding the rows it inserted or rewrote, per fragment updated in place its new
 * column file and the offsets updated, counts for the metrics, the zones of the new fragments,
 * and the furthest value its inserted rows hold in each identity column (see [[sparklance.spark.write.IdentityValues]]).
 */
final case class DeltaMessage(
    deletes: Map[Long, Array[Byte]],
    fragments: Array[Array[Byte]],
    deletedRows: Long,
    updatedRows: Long,
    insertedRows: Long,
    inPlace: Map[Long, (Array[Byte], Array[Byte])] = Map.empty,
    zones: WrittenZones = WrittenZones.Empty,
    identity: Map[String, Long] = Map.empty) extends WriterCommitMessage {
  def deletedOffsets: Map[Long, RoaringBitmap] = deletes.map { case (id, bytes) => id -> PortableBitmaps.fromBytes(bytes) }
  def newFragments: Seq[DataFragment] = fragments.toSeq.map(DataFragment.parseFrom)
  def columnFiles: Map[Long, (DataFile, RoaringBitmap)] =
    inPlace.map { case (id, (file, rows)) => id -> (DataFile.parseFrom(file), PortableBitmaps.fromBytes(rows)) }
}
