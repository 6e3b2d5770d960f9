package sparklance.format.file.v2_0

import org.apache.arrow.vector.FieldVector
import scala.collection.mutable.ArrayBuffer
import sparklance.format.proto.Encodings20Protos.ArrayEncoding

/** The Arrow `null` type: every page is all_nulls, with no buffers. */
private[v2_0] object NullBuilder extends ValueBuilder {
  def append(v: FieldVector, from: Int, count: Int): Unit = ()
  def encode(buffers: ArrayBuffer[PageBuffer]): ArrayEncoding = ArrayEncodings.allNulls
  def reset(): Unit = ()
}
