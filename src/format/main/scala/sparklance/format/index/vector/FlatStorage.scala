package sparklance.format.index.vector

import org.apache.arrow.vector.FieldVector

/** IVF_FLAT: the vectors themselves (unit vectors for cosine), scored exactly. */
final case class FlatStorage(metric: VectorMetric) extends VectorStorage {
  def column: String = "flat"

  def distances(query: Array[Float], centroid: Array[Float], payload: FieldVector, n: Int): Array[Float] = {
    val dim = query.length
    val x = VectorStorage.floats(payload, n, dim)
    Array.tabulate(n)(i => metric.distance(query, x, i * dim))
  }
}
