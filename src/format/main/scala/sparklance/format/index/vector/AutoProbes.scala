package sparklance.format.index.vector

/**
 * How many partitions of a segment pylance searches when no nprobes is given ("Auto",
 * LANCE-VECTOR-INDICES.md §6.2): the partitions whose centroid distance is within a margin of the
 * nearest one's, at least a floor and at most a cap, both by k. Measured for l2; the cosine and
 * dot profiles are read from Lance's source, unmeasured.
 */
object AutoProbes {
  final case class Profile(margin: Double, floor: Int, cap: Int)

  // (largest k, profile) per metric, k ascending.
  private val l2 = Seq(1 -> Profile(0.2175, 5, 19), 10 -> Profile(0.265, 6, 24), 100 -> Profile(0.33, 11, 38),
    200 -> Profile(0.375, 15, 56), 500 -> Profile(0.3725, 22, 81), 1000 -> Profile(0.4175, 29, 93))
  private val cosine = Seq(1 -> Profile(0.235, 3, 50), 10 -> Profile(0.2875, 8, 77), 100 -> Profile(0.38, 7, 106),
    200 -> Profile(0.415, 18, 156), 500 -> Profile(0.45, 28, 192), 1000 -> Profile(0.47, 34, 248))
  private val dot = Seq(1 -> Profile(0.14, 56, 112), 10 -> Profile(0.055, 144, 432), 100 -> Profile(0.0625, 200, 768),
    200 -> Profile(0.0675, 211, 833), 500 -> Profile(0.07, 244, 971), 1000 -> Profile(0.0725, 279, 1092))

  def profile(metric: VectorMetric, k: Int): Option[Profile] = {
    val table = metric match {
      case VectorMetric.L2 => l2
      case VectorMetric.Cosine => cosine
      case VectorMetric.Dot => dot
    }
    table.find(k <= _._1).map(_._2)
  }

  /** Partitions to search first, given the centroid distances `sorted` ascending (the probing metric's). */
  def count(metric: VectorMetric, k: Int, sorted: Array[Float]): Int = {
    if (sorted.isEmpty) return 0
    val d0 = sorted(0).toDouble
    val selected = profile(metric, k) match {
      case Some(p) =>
        // dot distances are 1 - q.c, which may be negative: the gap is measured against |1 - d0|.
        val scale = if (metric == VectorMetric.Dot) math.abs(1 - d0) else d0
        val within = sorted.count(d => d.toDouble - d0 <= p.margin * scale)
        math.min(math.max(within, p.floor), p.cap)
      case None => sorted.count(_.toDouble <= d0 * 81) // pylance's rule before the profiles (k > 1000)
    }
    math.max(1, math.min(selected, sorted.length))
  }
}
