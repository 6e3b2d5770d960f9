package sparklance.spark.write

import org.apache.spark.sql.connector.write.WriterCommitMessage
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.skipping.WrittenZones

/**
 * What a write task reports to the driver: the fragments it wrote, as protobuf bytes, their zones,
 * and the furthest value it wrote into each identity column (by name; see [[IdentityValues]]).
 */
final case class FragmentsMessage(fragments: Array[Array[Byte]], rows: Long, zones: WrittenZones = WrittenZones.Empty,
    identity: Map[String, Long] = Map.empty)
    extends WriterCommitMessage {
  def decoded: Seq[DataFragment] = fragments.toSeq.map(DataFragment.parseFrom)
}

object FragmentsMessage {
  def of(fragments: Seq[DataFragment], zones: WrittenZones, identity: Map[String, Long] = Map.empty): FragmentsMessage =
    FragmentsMessage(fragments.map(_.toByteArray).toArray, fragments.map(_.getPhysicalRows).sum, zones, identity)
}
