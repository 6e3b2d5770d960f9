package sparklance.format.index.vector

import java.nio.{ByteBuffer, ByteOrder}

/** IVF_FLAT: the vectors themselves (unit vectors for cosine), scored exactly. */
final case class FlatStorage(metric: VectorMetric, dim: Int) extends VectorStorage {
  def column: String = "flat"
  def bytesPerRow: Int = dim * 4

  def distances(query: Array[Float], centroid: Array[Float], payload: Array[Byte], n: Int): Array[Float] = {
    val x = new Array[Float](n * dim)
    ByteBuffer.wrap(payload, 0, n * bytesPerRow).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(x)
    Array.tabulate(n)(i => metric.distance(query, x, i * dim))
  }
}
