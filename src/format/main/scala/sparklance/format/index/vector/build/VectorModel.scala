package sparklance.format.index.vector.build

import sparklance.format.UnsupportedFeatureException
import sparklance.format.index.Indices
import sparklance.format.index.vector.{FlatStorage, PqStorage, SqStorage, VectorIndexType, VectorMetric}
import sparklance.format.index.vector.{VectorIndexSegment => OpenedSegment}
import java.nio.{ByteBuffer, ByteOrder}

/**
 * What training made and every segment of one build shares (LANCE-VECTOR-INDICES.md §8): the IVF
 * centroids (`[k][dim]`), and for IVF_PQ the codebook in the order the file keeps it,
 * `[numSubVectors][256][dim / numSubVectors]`, for IVF_SQ the one value range of every dimension
 * (f64, as the file's JSON keeps it: a delta encodes with the bounds of the segment it extends).
 * Small (k·dim + 256·dim floats), so it travels to the tasks that encode rows with it.
 *
 * `pqCodesByIndexMetric`: how a PQ code is chosen for a dot index. pylance's build trains and
 * applies its quantizer as L2 (Lance's IvfIndexBuilder passes `DistanceType::L2`), so a build's
 * codes are each sub-vector's nearest codeword by L2; its `optimize_indices` loads the quantizer
 * under the index's metric and picks by `1 − x·c` for dot. A model read from a segment
 * ([[VectorModel.of]]) extends the index as `optimize_indices` does; a trained one encodes as a build.
 */
final case class VectorModel(
    indexType: VectorIndexType,
    metric: VectorMetric,
    dim: Int,
    centroids: Array[Float],
    loss: Double,
    numSubVectors: Int = 0,
    codebook: Array[Float] = Array.emptyFloatArray,
    sqBounds: (Double, Double) = (0d, 0d),
    pqCodesByIndexMetric: Boolean = false) {

  def numPartitions: Int = centroids.length / dim
  def subDim: Int = dim / numSubVectors

  // The centroids and each sub-vector's codebook laid out for scoring (built where the model is used, not shipped).
  @transient private lazy val partitionTable = CentroidTable(centroids, dim, numPartitions, metric.spherical)
  @transient private lazy val codeTables = Array.tabulate(numSubVectors)(m =>
    CentroidTable(codebook, subDim, 256, spherical = pqCodesByIndexMetric && metric.spherical, from = m * 256 * subDim))

  /** Bytes of one row's payload in `auxiliary.idx`: the vector (FLAT), its codes (PQ, 8 bits each) or its levels (SQ). */
  def bytesPerRow: Int = indexType match {
    case VectorIndexType.IvfFlat => 4 * dim
    case VectorIndexType.IvfPq => numSubVectors
    case VectorIndexType.IvfSq => dim
  }

  /**
   * The partition of `vector` (dim floats from `from`), whose values it may change: normalized in
   * place for cosine, where the index is an L2 index over unit vectors.
   */
  def prepareAndAssign(vector: Array[Float], from: Int): Int = {
    if (metric.normalizes) KMeans.normalize(vector, from, dim)
    partitionTable.nearest(vector, from, partitionTable.newScores())
  }

  /** Writes the payload of a vector [[prepareAndAssign]] put in `partition` to `out` at `at`. */
  def encode(vector: Array[Float], from: Int, partition: Int, out: Array[Byte], at: Int): Unit = indexType match {
    case VectorIndexType.IvfFlat =>
      ByteBuffer.wrap(out, at, 4 * dim).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().put(vector, from, dim)
    case VectorIndexType.IvfPq =>
      val x = residual(vector, from, partition)
      val sd = subDim
      val scores = new Array[Float](256)
      var m = 0
      // The nearest codeword of each sub-vector: by L2, or by `1 − x·c` where a delta of a dot index
      // encodes as pylance's optimize_indices does (see pqCodesByIndexMetric).
      while (m < numSubVectors) {
        out(at + m) = codeTables(m).nearest(x, m * sd, scores).toByte
        m += 1
      }
    case VectorIndexType.IvfSq =>
      var j = 0
      while (j < dim) { out(at + j) = VectorModel.sqCode(vector(from + j), sqBounds).toByte; j += 1 }
  }

  /** What PQ encodes: `x − centroid` for l2 and cosine, the raw vector for dot. */
  def residual(vector: Array[Float], from: Int, partition: Int): Array[Float] = {
    val x = java.util.Arrays.copyOfRange(vector, from, from + dim)
    if (!metric.spherical) {
      var j = 0
      while (j < dim) { x(j) -= centroids(partition * dim + j); j += 1 }
    }
    x
  }
}

object VectorModel {
  /** pylance's 8-bit level of `x` in [start, end]: floor((x − start) / (end − start) · 255), clamped (§4.3). */
  def sqCode(x: Float, bounds: (Double, Double)): Int = {
    val (start, end) = bounds
    if (end <= start) 0
    else math.max(0, math.min(255, math.floor((x.toDouble - start) / (end - start) * 255).toInt))
  }

  /**
   * The model an existing segment was built with (its centroids, PQ codebook or SQ bounds; the
   * loss is not kept), so that rows added to the index land in the same partitions and codes, as
   * pylance's `optimize_indices` extends an index without training it again.
   */
  def of(segment: OpenedSegment): VectorModel = {
    val centroids = Array.concat((0 until segment.numPartitions).map(segment.centroid): _*)
    val base = VectorModel(segment.indexType, segment.metric, segment.dim, centroids, loss = 0d)
    segment.storage match {
      case _: FlatStorage => base
      case pq: PqStorage if pq.bits == 8 => base.copy(numSubVectors = pq.subVectors, codebook = pq.codebook, pqCodesByIndexMetric = true)
      case pq: PqStorage => throw new UnsupportedFeatureException(s"Vector index ${Indices.describe(segment.entry)} has " +
        s"${pq.bits}-bit PQ codes; sparklance extends indices of 8-bit codes (rebuild it with create_index, or optimize it with pylance)")
      case sq: SqStorage => base.copy(sqBounds = (sq.start, sq.end))
    }
  }
}
