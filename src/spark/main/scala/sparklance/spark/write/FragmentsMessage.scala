package sparklance.spark.write

import org.apache.spark.sql.connector.write.WriterCommitMessage
import sparklance.format.proto.TableProtos.DataFragment

/** What a write task reports to the driver: the fragments it wrote, as protobuf bytes. */
final case class FragmentsMessage(fragments: Array[Array[Byte]], rows: Long) extends WriterCommitMessage {
  def decoded: Seq[DataFragment] = fragments.toSeq.map(DataFragment.parseFrom)
}

object FragmentsMessage {
  def of(fragments: Seq[DataFragment]): FragmentsMessage =
    FragmentsMessage(fragments.map(_.toByteArray).toArray, fragments.map(_.getPhysicalRows).sum)
}
