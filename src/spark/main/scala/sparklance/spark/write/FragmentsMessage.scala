package sparklance.spark.write

import org.apache.spark.sql.connector.write.WriterCommitMessage
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.skipping.WrittenZones

/** What a write task reports to the driver: the fragments it wrote, as protobuf bytes, and their zones. */
final case class FragmentsMessage(fragments: Array[Array[Byte]], rows: Long, zones: WrittenZones = WrittenZones.Empty)
    extends WriterCommitMessage {
  def decoded: Seq[DataFragment] = fragments.toSeq.map(DataFragment.parseFrom)
}

object FragmentsMessage {
  def of(fragments: Seq[DataFragment], zones: WrittenZones): FragmentsMessage =
    FragmentsMessage(fragments.map(_.toByteArray).toArray, fragments.map(_.getPhysicalRows).sum, zones)
}
