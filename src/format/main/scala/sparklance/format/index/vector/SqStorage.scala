package sparklance.format.index.vector

/**
 * IVF_SQ (LANCE-VECTOR-INDICES.md §4.3, §6.3): one 8-bit code a dimension over the single range
 * [start, end] of the training sample, of raw vectors (unit vectors for cosine). The query is
 * quantized the same way and distances are taken between codes, scaled back by the step.
 */
final case class SqStorage(metric: VectorMetric, dim: Int, start: Double, end: Double) extends VectorStorage {
  def column: String = "__sq_code"
  def bytesPerRow: Int = dim
  private val levels = 255
  // As Lance computes them: the step in f32 from the f64 bounds, and distances as the integer
  // sum times step² (so that near-ties order as pylance's do).
  private val step = (end - start).toFloat / levels
  private val scale = step * step
  private val lower = start.toFloat

  private def quantize(x: Float): Int = {
    val c = math.floor((x - start) / (end - start) * levels).toInt
    math.max(0, math.min(levels, c))
  }

  def distances(query: Array[Float], centroid: Array[Float], codes: Array[Byte], n: Int): Array[Float] = {
    metric match {
      case VectorMetric.Dot =>
        Array.tabulate(n) { i =>
          var s = 0f
          var j = 0
          while (j < dim) { s += query(j) * (lower + (codes(i * dim + j) & 0xFF) * step); j += 1 }
          1f - s
        }
      case _ =>
        val q = query.map(quantize)
        Array.tabulate(n) { i =>
          var s = 0L
          var j = 0
          while (j < dim) { val d = q(j) - (codes(i * dim + j) & 0xFF); s += d * d; j += 1 }
          s.toFloat * scale
        }
    }
  }
}
