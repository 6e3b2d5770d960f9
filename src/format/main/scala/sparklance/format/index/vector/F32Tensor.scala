package sparklance.format.index.vector

import java.nio.{ByteBuffer, ByteOrder}
import scala.jdk.CollectionConverters._
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.proto.VectorIndexProtos.Tensor

/** A float32 tensor of a vector index (IVF centroids, PQ codebook), flattened row-major. */
final case class F32Tensor(shape: IndexedSeq[Int], values: Array[Float])

object F32Tensor {
  def of(t: Tensor, path: String, what: String): F32Tensor = {
    if (t.getDataType != Tensor.DataType.FLOAT32)
      throw new UnsupportedFeatureException(s"The $what of vector index file $path is ${t.getDataType}; sparklance reads float32 vector indices")
    val shape = t.getShapeList.asScala.map(_.intValue).toIndexedSeq
    val count = shape.foldLeft(1L)(_ * _)
    val bytes = t.getData
    if (bytes.size != count * 4)
      throw new CorruptFileException(path, s"the $what holds ${bytes.size} bytes for shape ${shape.mkString("[", ", ", "]")}")
    val values = new Array[Float](count.toInt)
    bytes.asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(values)
    F32Tensor(shape, values)
  }
}
