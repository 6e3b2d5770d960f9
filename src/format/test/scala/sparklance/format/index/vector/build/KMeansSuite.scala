package sparklance.format.index.vector.build

import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

class KMeansSuite extends AnyFunSuite {
  /** The score of `x` against centroid `c` as plainly as it can be said: terms summed one by one in dimension order. */
  private def score(x: Array[Float], from: Int, dim: Int, centroids: Array[Float], c: Int, spherical: Boolean, codebookFrom: Int): Float = {
    var s = 0f
    for (j <- 0 until dim) {
      val a = x(from + j); val b = centroids(codebookFrom + c * dim + j)
      s += (if (spherical) a * b else (a - b) * (a - b))
    }
    if (spherical) 1f - s else s
  }

  /** The nearest centroid by [[score]], the first of the lowest. */
  private def reference(x: Array[Float], from: Int, dim: Int, centroids: Array[Float], k: Int, spherical: Boolean, codebookFrom: Int): Int =
    (0 until k).map(c => score(x, from, dim, centroids, c, spherical, codebookFrom)).zipWithIndex.minBy { case (s, c) => (s, c) }._2

  test("CentroidTable finds what a term-by-term scan finds, with the same score bit for bit, ties to the lower centroid") {
    val random = new Random(11)
    for (dim <- Seq(1, 3, 4, 8, 17); k <- Seq(1, 3, 4, 7, 13, 70); spherical <- Seq(false, true)) {
      // Small integers make exact ties between distinct centroids common; duplicates tie always.
      val distinct = Array.fill((k - k / 3) * dim)(random.nextInt(3).toFloat)
      val centroids = distinct ++ distinct.take((k / 3) * dim)
      val offset = if (k > 2) dim else 0 // a codebook that starts past the first row
      val table = CentroidTable(centroids, dim, k - offset / dim, spherical, from = offset)
      val scores = table.newScores()
      val data = Array.fill(40 * dim)(random.nextInt(3).toFloat)
      for (i <- 0 until 40) {
        val got = table.nearest(data, i * dim, scores)
        assert(got == reference(data, i * dim, dim, centroids, k - offset / dim, spherical, offset), (dim, k, spherical, i))
        assert(scores(got) == score(data, i * dim, dim, centroids, got, spherical, offset), (dim, k, spherical, i))
      }
    }
    // Real-valued vectors: the kernel's sums are the scan's sums, so the same nearest centroid and score.
    for (dim <- Seq(8, 32, 129); spherical <- Seq(false, true)) {
      val centroids = Array.fill(300 * dim)(random.nextGaussian().toFloat)
      val data = Array.fill(50 * dim)(random.nextGaussian().toFloat)
      val table = CentroidTable(centroids, dim, 300, spherical)
      val scores = table.newScores()
      for (i <- 0 until 50) {
        val got = table.nearest(data, i * dim, scores)
        assert(got == reference(data, i * dim, dim, centroids, 300, spherical, 0) &&
          scores(got) == score(data, i * dim, dim, centroids, got, spherical, 0), (dim, spherical, i))
      }
    }
  }

  /** Rows around `clusters` centres far apart (uniform in ±100 a dimension), each a centre plus noise uniform in ±1. */
  private def clustered(clusters: Int, perCluster: Int, dim: Int, seed: Int): Array[Float] = {
    val random = new Random(seed)
    val centres = Array.fill(clusters * dim)(random.nextFloat() * 200 - 100)
    val rows = random.shuffle((0 until clusters * perCluster).toIndexedSeq)
    rows.toArray.flatMap(r => Array.tabulate(dim)(j => centres((r % clusters) * dim + j) + random.nextFloat() * 2 - 1))
  }

  /** Mean squared L2 distance of the rows to their nearest centroid. */
  private def meanDistance(data: Array[Float], dim: Int, centroids: Array[Float]): Double = {
    val n = data.length / dim
    val table = CentroidTable(centroids, dim, centroids.length / dim, spherical = false)
    val assignment = new Array[Int](n)
    val distance = new Array[Float](n)
    KMeans.assign(data, n, table, assignment, distance)
    distance.map(_.toDouble).sum / n
  }

  /** Mean squared L2 distance of the rows to their mean (what one centroid would leave). */
  private def variance(data: Array[Float], dim: Int): Double = {
    val n = data.length / dim
    val mean = Array.tabulate(dim)(j => (0 until n).map(i => data(i * dim + j).toDouble).sum / n)
    (0 until n).map(i => (0 until dim).map(j => math.pow(data(i * dim + j) - mean(j), 2)).sum).sum / n
  }

  test("above 256 clusters k-means is hierarchical (pylance 14's): k centroids that explain the spread, the same for the same seed") {
    val dim = 4
    val data = clustered(400, 30, dim, 5)
    val trained = KMeans.train(data, dim, 400, 50, seed = 3)
    assert(trained.centroids.length == 400 * dim)
    assert(trained.loss == 0d) // Lance records no loss for a hierarchical model
    // Random starts leave some true clusters merged and others split (as Lance's do), but the
    // centroids explain nearly all of the spread: a few percent of it is left.
    val mean = meanDistance(data, dim, trained.centroids)
    assert(mean < 0.05 * variance(data, dim), (mean, variance(data, dim)))
    assert(KMeans.train(data, dim, 400, 50, seed = 3).centroids.sameElements(trained.centroids))
  }

  test("the hierarchy hands out centroids in proportion to rows, largest remainders first, never more than a cluster's rows") {
    assert(KMeans.allocate(Array(50, 30, 20), 10).toSeq == Seq(5, 3, 2))
    assert(KMeans.allocate(Array(10, 10, 1), 4).toSeq == Seq(2, 2, 0)) // 1.9, 1.9, 0.19: the remainders go to the larger shares
    assert(KMeans.allocate(Array(2, 100), 10).toSeq == Seq(0, 10)) // 0.2 and 9.8
    assert(KMeans.allocate(Array(1, 1, 9), 10).toSeq == Seq(1, 1, 8)) // capped at a sub-cluster's rows
  }

  test("up to 256 clusters k-means is Lloyd's, and its centroids explain nearly all of the spread") {
    val dim = 3
    val data = clustered(50, 40, dim, 9)
    val trained = KMeans.train(data, dim, 50, 50, seed = 1)
    assert(trained.centroids.length == 50 * dim && trained.loss > 0)
    val mean = meanDistance(data, dim, trained.centroids)
    assert(mean < 0.05 * variance(data, dim), (mean, variance(data, dim)))
  }
}
