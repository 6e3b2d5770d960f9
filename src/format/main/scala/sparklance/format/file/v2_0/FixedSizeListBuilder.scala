package sparklance.format.file.v2_0

import org.apache.arrow.vector.FieldVector
import org.apache.arrow.vector.complex.FixedSizeListVector
import scala.collection.mutable.ArrayBuffer
import sparklance.format.proto.Encodings20Protos.ArrayEncoding

/** `fixed_size_list{dimension, items}` over rows × dimension item slots (§2.7). */
private[v2_0] final class FixedSizeListBuilder(dimension: Int, items: ValueBuilder) extends ValueBuilder {
  def append(v: FieldVector, from: Int, count: Int): Unit = {
    val child = v.asInstanceOf[FixedSizeListVector].getDataVector
    items.append(child, from * dimension, count * dimension)
  }

  def encode(buffers: ArrayBuffer[PageBuffer]): ArrayEncoding =
    ArrayEncodings.fixedSizeList(dimension, items.encode(buffers))

  def reset(): Unit = items.reset()
}
