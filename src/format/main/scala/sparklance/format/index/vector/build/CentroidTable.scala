package sparklance.format.index.vector.build

/**
 * `k` centroids of `dim` floats kept dimension-major (one array of k floats a dimension), for
 * scoring a vector against all of them at once. Scoring is then a few loops over the k
 * centroids, each adding one dimension's term to every centroid's running score
 * (`score(c) += (x(j) − t(j)(c))²`), which HotSpot's C2 (Java 17) compiles to SIMD instructions
 * without any JVM flag, where the row-major dot product of one vector with one centroid is a
 * reduction C2 leaves scalar. One array a dimension because C2 17 leaves a loop scalar when an
 * index has a loop-invariant offset (`t(j * k + c)`: 1.7 G terms/s against 10 with `t(j)(c)`,
 * measured). Four dimensions go in one loop so that each running score is loaded and stored once
 * for four terms (15–20 G terms/s a core, 10x the row-major loop).
 *
 * Each score still adds its terms in dimension order starting from 0, so it equals, bit for bit,
 * the plain scalar score (squared L2, or 1 − x·c when `spherical`).
 */
final class CentroidTable private (val k: Int, val dim: Int, val spherical: Boolean, transposed: Array[Array[Float]]) {

  /** A buffer of the size [[nearest]] wants; one a thread, reused from vector to vector. */
  def newScores(): Array[Float] = new Array[Float](k)

  /** The scores of the vector at `from` of `x` against every centroid, into `scores` (k floats). */
  def score(x: Array[Float], from: Int, scores: Array[Float]): Unit = {
    java.util.Arrays.fill(scores, 0, k, 0f)
    val t = transposed
    var j = 0
    if (spherical) {
      while (j + 4 <= dim) {
        val x0 = x(from + j); val x1 = x(from + j + 1); val x2 = x(from + j + 2); val x3 = x(from + j + 3)
        val t0 = t(j); val t1 = t(j + 1); val t2 = t(j + 2); val t3 = t(j + 3)
        var c = 0
        while (c < k) {
          var s = scores(c)
          s += x0 * t0(c); s += x1 * t1(c); s += x2 * t2(c); s += x3 * t3(c)
          scores(c) = s
          c += 1
        }
        j += 4
      }
      while (j < dim) {
        val x0 = x(from + j)
        val t0 = t(j)
        var c = 0
        while (c < k) { scores(c) += x0 * t0(c); c += 1 }
        j += 1
      }
      var c = 0
      while (c < k) { scores(c) = 1f - scores(c); c += 1 }
    } else {
      while (j + 4 <= dim) {
        val x0 = x(from + j); val x1 = x(from + j + 1); val x2 = x(from + j + 2); val x3 = x(from + j + 3)
        val t0 = t(j); val t1 = t(j + 1); val t2 = t(j + 2); val t3 = t(j + 3)
        var c = 0
        while (c < k) {
          var s = scores(c)
          val d0 = x0 - t0(c); s += d0 * d0
          val d1 = x1 - t1(c); s += d1 * d1
          val d2 = x2 - t2(c); s += d2 * d2
          val d3 = x3 - t3(c); s += d3 * d3
          scores(c) = s
          c += 1
        }
        j += 4
      }
      while (j < dim) {
        val x0 = x(from + j)
        val t0 = t(j)
        var c = 0
        while (c < k) { val d = x0 - t0(c); scores(c) += d * d; c += 1 }
        j += 1
      }
    }
  }

  /** The centroid nearest to the vector at `from` of `x` (ties to the lower one); its score is left in `scores`. */
  def nearest(x: Array[Float], from: Int, scores: Array[Float]): Int = {
    score(x, from, scores)
    var best = 0
    var bestScore = scores(0)
    var c = 1
    while (c < k) {
      val s = scores(c)
      if (s < bestScore) { bestScore = s; best = c }
      c += 1
    }
    best
  }
}

object CentroidTable {
  /** The table of the `k` centroids of `dim` floats stored row after row in `centroids` from `from`. */
  def apply(centroids: Array[Float], dim: Int, k: Int, spherical: Boolean, from: Int = 0): CentroidTable = {
    require(k > 0 && dim > 0 && from + k * dim <= centroids.length, s"$k centroids of $dim floats from $from")
    val t = Array.ofDim[Float](dim, k)
    var c = 0
    while (c < k) {
      var j = 0
      while (j < dim) { t(j)(c) = centroids(from + c * dim + j); j += 1 }
      c += 1
    }
    new CentroidTable(k, dim, spherical, t)
  }
}
