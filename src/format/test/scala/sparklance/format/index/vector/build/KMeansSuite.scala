package sparklance.format.index.vector.build

import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

class KMeansSuite extends AnyFunSuite {
  /** The nearest centroid as plainly as it can be said: scores summed term by term, the first of the lowest. */
  private def reference(x: Array[Float], from: Int, dim: Int, centroids: Array[Float], k: Int, spherical: Boolean, codebookFrom: Int): Int =
    (0 until k).map { c =>
      var s = 0f
      for (j <- 0 until dim) {
        val a = x(from + j); val b = centroids(codebookFrom + c * dim + j)
        s += (if (spherical) a * b else (a - b) * (a - b))
      }
      if (spherical) 1f - s else s
    }.zipWithIndex.minBy { case (score, c) => (score, c) }._2

  test("nearest scores centroids four at a time and finds what a term-by-term scan finds, ties to the lower centroid") {
    val random = new Random(11)
    for (dim <- Seq(1, 3, 8, 17); k <- Seq(1, 3, 4, 7, 13); spherical <- Seq(false, true)) {
      // Small integers make exact ties between distinct centroids common; duplicates tie always.
      val distinct = Array.fill((k - k / 3) * dim)(random.nextInt(3).toFloat)
      val centroids = distinct ++ distinct.take((k / 3) * dim)
      val offset = if (k > 2) dim else 0 // a codebook that starts past the first row
      val data = Array.fill(40 * dim)(random.nextInt(3).toFloat)
      for (i <- 0 until 40) {
        val got = KMeans.nearest(data, i * dim, dim, centroids, k - offset / dim, spherical, codebookFrom = offset)
        assert(got == reference(data, i * dim, dim, centroids, k - offset / dim, spherical, offset), (dim, k, spherical, i))
      }
    }
  }
}
