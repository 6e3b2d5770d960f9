package sparklance.format.index.vector

/**
 * IVF_PQ (LANCE-VECTOR-INDICES.md §4.2, §6.3): `subVectors` codes of `bits` bits a row, trained on
 * residuals to the partition's centroid (l2, cosine on unit vectors) or on raw vectors (dot);
 * `codebook` is `[subVectors][2^bits][dim / subVectors]`. Distances are the sums of per-sub-vector
 * tables in sub-vector order, in f32, as pylance adds them: for cosine without refine that is the
 * L2 estimate on unit residuals (about 2 - 2 cos), pylance's reported value.
 */
final case class PqStorage(metric: VectorMetric, dim: Int, subVectors: Int, bits: Int, transposed: Boolean,
    codebook: Array[Float]) extends VectorStorage {
  def column: String = "__pq_code"
  private val centers = 1 << bits
  private val subDim = dim / subVectors
  val bytesPerRow: Int = subVectors * bits / 8
  override def modelBytes: Long = codebook.length * 4L

  /** table(m * centers + c): the contribution of code c of sub-vector m. */
  private def table(query: Array[Float], centroid: Array[Float]): Array[Float] = {
    val t = new Array[Float](subVectors * centers)
    val dot = metric == VectorMetric.Dot
    val r = if (dot) query else Array.tabulate(dim)(j => query(j) - centroid(j))
    var m = 0
    while (m < subVectors) {
      var c = 0
      while (c < centers) {
        val base = (m * centers + c) * subDim
        var s = 0f
        var j = 0
        while (j < subDim) {
          val v = codebook(base + j)
          val q = r(m * subDim + j)
          s += (if (dot) q * v else { val d = q - v; d * d })
          j += 1
        }
        t(m * centers + c) = s
        c += 1
      }
      m += 1
    }
    t
  }

  def distances(query: Array[Float], centroid: Array[Float], codes: Array[Byte], n: Int): Array[Float] = {
    val t = table(query, centroid)
    // Transposed (as pylance writes): byte b of row i is at b * n + i within the partition.
    // Sub-vector by sub-vector over all rows: each row still adds its terms in sub-vector order.
    val dot = metric == VectorMetric.Dot
    val out = Array.fill(n)(if (dot) 1f else 0f)
    var m = 0
    while (m < subVectors) {
      val b = if (bits == 8) m else m / 2
      val shift = if (bits == 8 || m % 2 == 0) 0 else 4
      val mask = if (bits == 8) 0xFF else 0x0F
      val base = m * centers
      var i = 0
      while (i < n) {
        val byte = (if (transposed) codes(b * n + i) else codes(i * bytesPerRow + b)) & 0xFF
        val v = t(base + ((byte >>> shift) & mask))
        out(i) = if (dot) out(i) - v else out(i) + v
        i += 1
      }
      m += 1
    }
    out
  }
}
