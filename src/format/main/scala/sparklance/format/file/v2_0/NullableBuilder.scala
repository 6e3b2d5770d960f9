package sparklance.format.file.v2_0

import org.apache.arrow.vector.FieldVector
import scala.collection.mutable.ArrayBuffer
import sparklance.format.proto.Encodings20Protos.ArrayEncoding

/** Wraps `values` in `nullable`: no_nulls, some_nulls with a validity bitmap, or all_nulls (§2.4). */
private[v2_0] final class NullableBuilder(values: ValueBuilder) extends ValueBuilder {
  private val validity = new BitBuilder
  private var valid = 0L

  def append(v: FieldVector, from: Int, count: Int): Unit = {
    if (v.getNullCount == 0) {
      validity.appendOnes(count)
      valid += count
    } else valid += validity.appendFrom(v.getValidityBuffer, from, count)
    values.append(v, from, count)
  }

  // An empty page is all_nulls too: that is what pylance writes for a 0-item list items page.
  def encode(buffers: ArrayBuffer[PageBuffer]): ArrayEncoding =
    if (valid == 0) ArrayEncodings.allNulls
    else if (valid == validity.size) ArrayEncodings.noNulls(values.encode(buffers))
    else {
      buffers += PageBuffer(validity.array, validity.byteSize)
      val validityEncoding = ArrayEncodings.flat(1, buffers.size - 1)
      ArrayEncodings.someNulls(validityEncoding, values.encode(buffers))
    }

  def reset(): Unit = { validity.clear(); valid = 0; values.reset() }
}
