package sparklance.format.index.vector.build

import java.util.stream.IntStream
import scala.util.Random

/**
 * Lloyd's k-means over `n` vectors of `dim` floats stored row after row, as pylance trains its
 * IVF centroids and PQ codebooks (LANCE-VECTOR-INDICES.md §8): k distinct sample rows chosen by a
 * seeded Random to start, at most `maxIterations` rounds, stopping once the loss moves by less than
 * 1e-4 of itself; an emptied cluster is re-seeded by splitting the largest one. `spherical` (dot
 * indices) keeps centroids unit-norm and assigns by the largest inner product.
 */
object KMeans {
  final case class Result(centroids: Array[Float], loss: Double)

  def train(data: Array[Float], dim: Int, k: Int, maxIterations: Int, seed: Long, spherical: Boolean = false): Result = {
    val n = data.length / dim
    require(n >= k, s"k-means needs at least $k vectors, got $n")
    val random = new Random(seed)
    val centroids = new Array[Float](k * dim)
    random.shuffle((0 until n).toIndexedSeq).take(k).zipWithIndex.foreach { case (row, c) =>
      System.arraycopy(data, row * dim, centroids, c * dim, dim)
    }
    if (spherical) normalizeRows(centroids, dim)
    val assignment = new Array[Int](n)
    val distance = new Array[Float](n)
    var loss = Double.MaxValue
    var iteration = 0
    var done = false
    while (!done && iteration < maxIterations) {
      assign(data, dim, centroids, k, spherical, assignment, distance)
      val newLoss = distance.foldLeft(0.0)(_ + _)
      done = iteration > 0 && math.abs(loss - newLoss) < 1e-4 * newLoss
      loss = newLoss
      if (!done) update(data, dim, k, assignment, centroids, spherical, random)
      iteration += 1
    }
    Result(centroids, loss)
  }

  /** The nearest of `k` centroids to each row, and its distance (squared L2, or 1 − dot when `spherical`). */
  def assign(data: Array[Float], dim: Int, centroids: Array[Float], k: Int, spherical: Boolean,
      assignment: Array[Int], distance: Array[Float]): Unit = {
    val n = data.length / dim
    val chunk = 1024
    // Rows are independent: chunks of them run on the common pool.
    IntStream.range(0, (n + chunk - 1) / chunk).parallel().forEach { b =>
      var i = b * chunk
      val end = math.min(n, i + chunk)
      while (i < end) {
        val best = nearest(data, i * dim, dim, centroids, k, spherical)
        assignment(i) = best
        distance(i) = score(data, i * dim, centroids, best * dim, dim, spherical)
        i += 1
      }
    }
  }

  /**
   * The centroid nearest to the vector at `from` of `data` among the `k` rows of `centroids` from
   * `codebookFrom` (one sub-vector's codebook); ties go to the lower centroid. Four centroids are
   * scored in one pass over the vector: four independent sums keep the CPU's floating point units
   * busy where one sum waits on its previous addition. Each sum still adds its terms in order, so
   * every score is exactly what [[score]] computes.
   */
  def nearest(data: Array[Float], from: Int, dim: Int, centroids: Array[Float], k: Int, spherical: Boolean,
      codebookFrom: Int = 0): Int = {
    var best = 0
    var bestScore = Float.MaxValue
    var c = 0
    while (c + 4 <= k) {
      val b0 = codebookFrom + c * dim
      val b1 = b0 + dim
      val b2 = b1 + dim
      val b3 = b2 + dim
      var s0 = 0f
      var s1 = 0f
      var s2 = 0f
      var s3 = 0f
      var j = 0
      if (spherical) {
        while (j < dim) {
          val x = data(from + j)
          s0 += x * centroids(b0 + j); s1 += x * centroids(b1 + j); s2 += x * centroids(b2 + j); s3 += x * centroids(b3 + j)
          j += 1
        }
        s0 = 1f - s0; s1 = 1f - s1; s2 = 1f - s2; s3 = 1f - s3
      } else {
        while (j < dim) {
          val x = data(from + j)
          val d0 = x - centroids(b0 + j); val d1 = x - centroids(b1 + j)
          val d2 = x - centroids(b2 + j); val d3 = x - centroids(b3 + j)
          s0 += d0 * d0; s1 += d1 * d1; s2 += d2 * d2; s3 += d3 * d3
          j += 1
        }
      }
      if (s0 < bestScore) { bestScore = s0; best = c }
      if (s1 < bestScore) { bestScore = s1; best = c + 1 }
      if (s2 < bestScore) { bestScore = s2; best = c + 2 }
      if (s3 < bestScore) { bestScore = s3; best = c + 3 }
      c += 4
    }
    while (c < k) {
      val s = score(data, from, centroids, codebookFrom + c * dim, dim, spherical)
      if (s < bestScore) { bestScore = s; best = c }
      c += 1
    }
    best
  }

  private def score(a: Array[Float], aFrom: Int, b: Array[Float], bFrom: Int, dim: Int, spherical: Boolean): Float = {
    var s = 0f
    var j = 0
    if (spherical) {
      while (j < dim) { s += a(aFrom + j) * b(bFrom + j); j += 1 }
      1f - s
    } else {
      while (j < dim) { val d = a(aFrom + j) - b(bFrom + j); s += d * d; j += 1 }
      s
    }
  }

  private def update(data: Array[Float], dim: Int, k: Int, assignment: Array[Int], centroids: Array[Float],
      spherical: Boolean, random: Random): Unit = {
    val sums = new Array[Double](k * dim)
    val counts = new Array[Long](k)
    var i = 0
    while (i < assignment.length) {
      val c = assignment(i)
      counts(c) += 1
      var j = 0
      while (j < dim) { sums(c * dim + j) += data(i * dim + j); j += 1 }
      i += 1
    }
    for (c <- 0 until k if counts(c) > 0; j <- 0 until dim) centroids(c * dim + j) = (sums(c * dim + j) / counts(c)).toFloat
    // An empty cluster takes half of the largest: its centroid nudged apart by ±1/1024.
    for (c <- 0 until k if counts(c) == 0) {
      val largest = counts.indices.maxBy(counts(_))
      for (j <- 0 until dim) {
        val v = centroids(largest * dim + j)
        val eps = (if (random.nextBoolean()) 1f else -1f) / 1024f
        centroids(c * dim + j) = v * (1f + eps)
        centroids(largest * dim + j) = v * (1f - eps)
      }
      counts(largest) /= 2
      counts(c) = counts(largest)
    }
    if (spherical) normalizeRows(centroids, dim)
  }

  /** Scales every row of `data` to unit L2 norm in place; a zero row stays zero. */
  def normalizeRows(data: Array[Float], dim: Int): Unit = {
    var from = 0
    while (from < data.length) {
      normalize(data, from, dim)
      from += dim
    }
  }

  def normalize(data: Array[Float], from: Int, dim: Int): Unit = {
    var s = 0.0
    var j = 0
    while (j < dim) { s += data(from + j).toDouble * data(from + j); j += 1 }
    if (s > 0) {
      val inv = (1.0 / math.sqrt(s)).toFloat
      j = 0
      while (j < dim) { data(from + j) *= inv; j += 1 }
    }
  }
}
