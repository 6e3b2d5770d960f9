package sparklance.format.index.vector

import com.google.protobuf.InvalidProtocolBufferException
import scala.jdk.CollectionConverters._
import sparklance.format.CorruptFileException
import sparklance.format.proto.VectorIndexProtos.IVF

/**
 * The IVF message of an index file (LANCE-VECTOR-INDICES.md §2): in index.idx the centroids, in
 * auxiliary.idx the row range `[offsets(p), offsets(p) + lengths(p))` of each partition.
 */
final case class IvfModel(offsets: Array[Long], lengths: Array[Int], centroids: Option[F32Tensor]) {
  def numPartitions: Int = lengths.length
}

object IvfModel {
  def parse(bytes: Array[Byte], path: String): IvfModel = {
    val ivf = try IVF.parseFrom(bytes)
      catch { case e: InvalidProtocolBufferException => throw new CorruptFileException(path, "the IVF message is malformed", e) }
    val offsets = ivf.getOffsetsList.asScala.map(_.longValue).toArray
    val lengths = ivf.getLengthsList.asScala.map(_.intValue).toArray
    if (offsets.length != lengths.length)
      throw new CorruptFileException(path, s"the IVF message has ${offsets.length} offsets and ${lengths.length} lengths")
    val centroids = if (ivf.hasCentroidsTensor) Some(F32Tensor.of(ivf.getCentroidsTensor, path, "IVF centroids")) else None
    IvfModel(offsets, lengths, centroids)
  }
}
