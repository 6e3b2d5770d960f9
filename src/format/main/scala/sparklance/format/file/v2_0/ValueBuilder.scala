package sparklance.format.file.v2_0

import org.apache.arrow.vector.FieldVector
import scala.collection.mutable.ArrayBuffer
import sparklance.format.proto.Encodings20Protos.ArrayEncoding

/** A page buffer handed to the container: `length` bytes of `array`. */
private[v2_0] final case class PageBuffer(array: Array[Byte], length: Int)

/**
 * Collects the values of one pending page of a value column (or of the items inside a fixed-size
 * list) and encodes them. Values are copied on `append`, so callers keep their vectors.
 */
private[v2_0] trait ValueBuilder {
  def append(v: FieldVector, from: Int, count: Int): Unit

  /**
   * The encoding of the pending values. Buffers are added to `buffers` in the depth-first order
   * pylance numbers them (§2.2); their index in `buffers` is the page buffer index.
   */
  def encode(buffers: ArrayBuffer[PageBuffer]): ArrayEncoding

  /** Drops the pending values, after their page was written. */
  def reset(): Unit
}
