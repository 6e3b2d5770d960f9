package sparklance.format.index.vector.build

import sparklance.format.index.vector.VectorIndexType
import java.util.stream.IntStream
import scala.util.Random

/**
 * Trains a [[VectorModel]] from a sample of the column, as pylance does (LANCE-VECTOR-INDICES.md
 * §8): rows holding NaN or infinity are dropped; cosine samples are normalized and then clustered
 * under L2; IVF k-means on `num_partitions · sample_rate` rows; PQ codebooks (256 clusters a
 * sub-vector, trained side by side) on up to `sample_rate · 256` residuals (raw vectors for
 * dot); SQ bounds = the smallest and largest value of as many rows.
 */
object VectorTraining {
  /** `sample` = rows of `dim` floats one after the other (this array is not changed); `rows` = the table's vector count. */
  def train(options: VectorIndexOptions, dim: Int, sample: Array[Float], rows: Long): VectorModel = {
    options.validate(dim)
    val data = finiteRows(sample, dim)
    if (options.metric.normalizes) KMeans.normalizeRows(data, dim)
    val n = data.length / dim
    val k = options.partitions(rows)
    val name = options.indexType.name
    if (n < k) throw new IllegalArgumentException(
      s"$name index: num_partitions = $k needs at least $k vectors to train on, the column has $n")
    val random = new Random(options.seed)
    val order = random.shuffle((0 until n).toIndexedSeq)
    def rowsOf(count: Int): Array[Float] = {
      val out = new Array[Float](count * dim)
      (0 until count).foreach(i => System.arraycopy(data, order(i) * dim, out, i * dim, dim))
      out
    }
    val ivfRows = math.min(n.toLong, k.toLong * options.sampleRate).toInt
    val ivf = KMeans.train(rowsOf(ivfRows), dim, k, options.maxIterations, random.nextLong(), options.metric.spherical)
    val base = VectorModel(options.indexType, options.metric, dim, ivf.centroids, ivf.loss)
    options.indexType match {
      case VectorIndexType.IvfFlat => base
      case VectorIndexType.IvfSq =>
        val sqRows = rowsOf(math.min(n.toLong, options.quantizerSampleSize).toInt)
        base.copy(sqBounds = (sqRows.min.toDouble, sqRows.max.toDouble))
      case VectorIndexType.IvfPq =>
        val m = options.numSubVectors.get
        val codes = 1 << options.numBits
        val pqRows = math.min(n.toLong, options.quantizerSampleSize).toInt
        if (pqRows < codes) throw new IllegalArgumentException(
          s"$name index: $codes codes a sub-vector need at least $codes vectors to train on, the column has $pqRows")
        val trainOn = rowsOf(pqRows)
        val residuals = new Array[Float](pqRows * dim)
        val partitions = new Array[Int](pqRows)
        KMeans.assign(trainOn, pqRows, CentroidTable(ivf.centroids, dim, ivf.centroids.length / dim, options.metric.spherical),
          partitions, new Array[Float](pqRows))
        (0 until pqRows).foreach(i => System.arraycopy(base.residual(trainOn, i * dim, partitions(i)), 0, residuals, i * dim, dim))
        val sd = dim / m
        val codebook = new Array[Float](m * codes * sd)
        // The sub-vectors' codebooks are independent: trained side by side, each from its own seed drawn in order.
        val seeds = Array.fill(m)(random.nextLong())
        IntStream.range(0, m).parallel().forEach { s =>
          val sub = new Array[Float](pqRows * sd)
          (0 until pqRows).foreach(i => System.arraycopy(residuals, i * dim + s * sd, sub, i * sd, sd))
          val trained = KMeans.train(sub, sd, codes, options.maxIterations, seeds(s))
          System.arraycopy(trained.centroids, 0, codebook, s * codes * sd, codes * sd)
        }
        base.copy(numSubVectors = m, codebook = codebook)
    }
  }

  /** The rows of `sample` without NaN or infinite values (pylance's filter_nan), as a copy. */
  private def finiteRows(sample: Array[Float], dim: Int): Array[Float] = {
    val keep = (0 until sample.length / dim).filter(i => (0 until dim).forall(j => java.lang.Float.isFinite(sample(i * dim + j))))
    val out = new Array[Float](keep.size * dim)
    keep.zipWithIndex.foreach { case (i, o) => System.arraycopy(sample, i * dim, out, o * dim, dim) }
    out
  }
}
