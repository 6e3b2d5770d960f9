package sparklance.format.index.vector.build

import java.util.stream.IntStream
import scala.collection.mutable
import scala.util.Random

/**
 * k-means over vectors of `dim` floats stored row after row, as Lance trains its IVF centroids and
 * PQ codebooks (lance-index `vector/kmeans.rs`; LANCE-VECTOR-INDICES.md §8):
 *
 *  - Lloyd's rounds on at most `k · 512` of the rows (the first ones; callers pass rows in random
 *    order): k distinct rows chosen by a seeded Random to start, at most `maxIterations` rounds,
 *    stopping once the loss moves by less than 1e-4 of itself; an emptied cluster is re-seeded
 *    by splitting the largest one. `spherical` (dot indices) keeps centroids unit-norm and
 *    assigns by the largest inner product.
 *  - For k above 256, hierarchically, as pylance 14 does (its log: "Hierarchical clustering
 *    (proportional)"): a tree of Lloyd's runs of at most 16 clusters, each sub-tree owing
 *    centroids in proportion to its rows ([[hierarchical]]). A node clusters only its own rows
 *    with a small k, so training costs a small multiple of `rows · 16 · dim` a round instead of
 *    `rows · k · dim`.
 */
object KMeans {
  final case class Result(centroids: Array[Float], loss: Double)

  /** The k above which Lance clusters hierarchically (PQ codebooks, 256 codes, stay flat). */
  val FlatUpTo = 256
  /** Lance's `hierarchical_k`: clusters made by each split at most. */
  private val Fanout = 16
  /** Lance's cap on the rows a Lloyd's run reads: k · 512. */
  private val RowsPerCluster = 512L

  def train(data: Array[Float], dim: Int, k: Int, maxIterations: Int, seed: Long, spherical: Boolean = false): Result = {
    val n = data.length / dim
    require(n >= k, s"k-means needs at least $k vectors, got $n")
    val random = new Random(seed)
    if (k > FlatUpTo) hierarchical(data, n, dim, k, maxIterations, random, spherical)
    else lloyd(data, n, dim, k, maxIterations, random, spherical)
  }

  /** Lloyd's k-means on the first `n` rows of `data` (at most `k · 512` of them). */
  private def lloyd(data: Array[Float], rows: Int, dim: Int, k: Int, maxIterations: Int, random: Random,
      spherical: Boolean): Result = {
    val n = math.min(rows.toLong, k * RowsPerCluster).toInt
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
      assign(data, n, CentroidTable(centroids, dim, k, spherical), assignment, distance)
      var newLoss = 0.0
      var i = 0
      while (i < n) { newLoss += distance(i); i += 1 }
      done = iteration > 0 && math.abs(loss - newLoss) < 1e-4 * newLoss
      loss = newLoss
      if (!done) update(data, dim, k, assignment, centroids, spherical, random)
      iteration += 1
    }
    Result(centroids, loss)
  }

  /**
   * Lance's hierarchical k-means with proportional quotas: a node (at first all rows) owing
   * `quota` centroids clusters its rows into `min(16, quota)` with Lloyd's (on at most 512 rows
   * a cluster), and hands each sub-cluster a share of the quota proportional to its rows
   * (largest remainders first; a sub-cluster whose share rounds to 0 gives its rows to the
   * nearest funded one); sub-clusters owing one centroid, or all of them once the quota fits one
   * run, are leaves whose centroid is the mean of their rows. Sub-trees grow side by side. A tree
   * short of `k` leaves (rows too alike to split) splits its largest leaves in two. The loss is 0,
   * as Lance records it for a hierarchical model.
   */
  private def hierarchical(data: Array[Float], n: Int, dim: Int, k: Int, maxIterations: Int, random: Random,
      spherical: Boolean): Result = {
    val leaves = mutable.ArrayBuffer.from(grow(data, dim, Array.range(0, n), k, maxIterations, random.nextLong(), spherical))
    val unsplittable = mutable.Set.empty[Int]
    while (leaves.size < k) {
      val candidates = leaves.indices.filter(i => !unsplittable(i) && leaves(i).rows.length >= 2)
      if (candidates.isEmpty) throw new IllegalArgumentException(s"k-means could form only ${leaves.size} clusters of " +
        s"$n vectors, not $k: the vectors are too few or too many of them (nearly) equal")
      val largest = candidates.maxBy(leaves(_).rows.length)
      val halves = grow(data, dim, leaves(largest).rows, 2, maxIterations, random.nextLong(), spherical)
      if (halves.size < 2) unsplittable += largest
      else {
        leaves(largest) = halves(0)
        leaves += halves(1)
      }
    }
    val centroids = new Array[Float](k * dim)
    leaves.indices.foreach(c => System.arraycopy(leaves(c).centroid, 0, centroids, c * dim, dim))
    Result(centroids, 0d)
  }

  /** A leaf of the hierarchy: the rows it holds and its centroid, their mean. */
  private final class Leaf(val rows: Array[Int], val centroid: Array[Float])

  /** The leaves of the sub-tree of the rows `rows` of `data`, which owes `quota` centroids. */
  private def grow(data: Array[Float], dim: Int, rows: Array[Int], quota: Int, maxIterations: Int, seed: Long,
      spherical: Boolean): Seq[Leaf] = {
    val n = rows.length
    if (quota <= 1 || n <= 1) return Seq(leaf(data, dim, rows, spherical))
    val k = math.min(Fanout, math.min(quota, n))
    // Rows are in random order, so a prefix of them is a uniform sample.
    val training = gather(data, dim, rows.take(math.min(n.toLong, k * RowsPerCluster).toInt))
    val random = new Random(seed)
    val model = lloyd(training, training.length / dim, dim, k, maxIterations, random, spherical)
    val table = CentroidTable(model.centroids, dim, k, spherical)
    val members = membership(data, dim, rows, table)
    val groups = Array.fill(k)(mutable.ArrayBuilder.make[Int])
    var i = 0
    while (i < n) { groups(members(i)) += rows(i); i += 1 }
    val children = groups.indices.map(c => c -> groups(c).result()).filter(_._2.nonEmpty)
    if (children.size <= 1) return Seq(leaf(data, dim, rows, spherical))
    if (quota <= k) return children.map { case (_, in) => leaf(data, dim, in, spherical) }
    val quotas = allocate(children.map(_._2.length).toArray, quota)
    val funded = children.indices.filter(quotas(_) > 0)
    // Sub-clusters that earned no centroid join the nearest sub-cluster that did.
    val joined = funded.map(c => mutable.ArrayBuilder.make[Int].addAll(children(c)._2))
    val fundedTable = CentroidTable(Array.concat(funded.map(c => java.util.Arrays.copyOfRange(model.centroids,
      children(c)._1 * dim, (children(c)._1 + 1) * dim)): _*), dim, funded.size, spherical)
    children.indices.filter(quotas(_) == 0).foreach { c =>
      val orphans = children(c)._2
      val to = membership(data, dim, orphans, fundedTable)
      orphans.indices.foreach(o => joined(to(o)) += orphans(o))
    }
    val parts = joined.map(_.result())
    if (parts.size < 2) return Seq(leaf(data, dim, parts.flatten.toArray, spherical))
    val seeds = parts.indices.map(_ => random.nextLong())
    val grown = new Array[Seq[Leaf]](parts.size)
    IntStream.range(0, parts.size).parallel().forEach { c =>
      grown(c) = grow(data, dim, parts(c), quotas(funded(c)), maxIterations, seeds(c), spherical)
    }
    grown.toSeq.flatten
  }

  /**
   * `quota` centroids apportioned over sub-clusters of `sizes` rows by their share of the rows:
   * each the floor of its share (at most its rows), the rest one by one by largest fractional
   * share, then largest size, around again while some sub-cluster has room.
   */
  private[build] def allocate(sizes: Array[Int], quota: Int): Array[Int] = {
    val total = sizes.map(_.toLong).sum
    val quotas = sizes.map(size => math.min(quota * size.toLong / total, size.toLong).toInt)
    var remaining = quota - quotas.sum
    val order = sizes.indices.sortBy(i => (-(quota * sizes(i).toLong % total), -sizes(i)))
    var handed = 1
    while (remaining > 0 && handed > 0) {
      handed = 0
      order.foreach { i =>
        if (remaining > 0 && quotas(i) < sizes(i)) { quotas(i) += 1; remaining -= 1; handed += 1 }
      }
    }
    quotas
  }

  /** A leaf of the rows `rows` of `data`: their mean (unit norm when `spherical`). */
  private def leaf(data: Array[Float], dim: Int, rows: Array[Int], spherical: Boolean): Leaf = {
    val sums = new Array[Double](dim)
    rows.foreach { r =>
      var j = 0
      while (j < dim) { sums(j) += data(r * dim + j); j += 1 }
    }
    val centroid = sums.map(s => (s / rows.length).toFloat)
    if (spherical) normalize(centroid, 0, dim)
    new Leaf(rows, centroid)
  }

  /** The nearest centroid of `table` to each of the rows `rows` of `data`. */
  private def membership(data: Array[Float], dim: Int, rows: Array[Int], table: CentroidTable): Array[Int] = {
    val out = new Array[Int](rows.length)
    val chunk = 1024
    IntStream.range(0, (rows.length + chunk - 1) / chunk).parallel().forEach { b =>
      val scores = table.newScores()
      var i = b * chunk
      val end = math.min(rows.length, i + chunk)
      while (i < end) { out(i) = table.nearest(data, rows(i) * dim, scores); i += 1 }
    }
    out
  }

  /** The rows `rows` of `data`, one after the other. */
  private def gather(data: Array[Float], dim: Int, rows: Array[Int]): Array[Float] = {
    val out = new Array[Float](rows.length * dim)
    var i = 0
    while (i < rows.length) { System.arraycopy(data, rows(i) * dim, out, i * dim, dim); i += 1 }
    out
  }

  /** The nearest centroid of `table` to each of the first `n` rows of `data`, and its score (squared L2, or 1 − dot when spherical). */
  def assign(data: Array[Float], n: Int, table: CentroidTable, assignment: Array[Int], distance: Array[Float]): Unit = {
    val dim = table.dim
    val chunk = 1024
    // Rows are independent: chunks of them run on the common pool.
    IntStream.range(0, (n + chunk - 1) / chunk).parallel().forEach { b =>
      val scores = table.newScores()
      var i = b * chunk
      val end = math.min(n, i + chunk)
      while (i < end) {
        val best = table.nearest(data, i * dim, scores)
        assignment(i) = best
        distance(i) = scores(best)
        i += 1
      }
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
      val to = c * dim
      val from = i * dim
      var j = 0
      while (j < dim) { sums(to + j) += data(from + j); j += 1 }
      i += 1
    }
    var c = 0
    while (c < k) {
      if (counts(c) > 0) {
        var j = 0
        while (j < dim) { centroids(c * dim + j) = (sums(c * dim + j) / counts(c)).toFloat; j += 1 }
      }
      c += 1
    }
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
