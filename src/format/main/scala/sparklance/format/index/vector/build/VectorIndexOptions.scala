package sparklance.format.index.vector.build

import sparklance.format.index.vector.{VectorIndexType, VectorMetric}
/**
 * What a vector index build is asked for, under pylance's option names (`create_index(column,
 * index_type, metric=..., num_partitions=..., num_sub_vectors=..., num_bits=..., sample_rate=...,
 * max_iters=..., target_partition_size=...)`) and with its defaults: num_partitions = rows /
 * target_partition_size (4096 for IVF_FLAT, 8192 otherwise; at least 1, as pylance 14.0.2 chose
 * 1 for 2,000 rows and 4 for 20,000 IVF_FLAT rows), num_sub_vectors required for IVF_PQ, 8 bits,
 * 256 training rows per cluster, 50 k-means iterations.
 */
final case class VectorIndexOptions(
    indexType: VectorIndexType,
    metric: VectorMetric = VectorMetric.L2,
    numPartitions: Option[Int] = None,
    numSubVectors: Option[Int] = None,
    numBits: Int = 8,
    sampleRate: Int = 256,
    maxIterations: Int = 50,
    targetPartitionSize: Option[Long] = None,
    seed: Long = 42L) {

  private def bad(what: String) = throw new IllegalArgumentException(s"${indexType.name} index: $what")

  /** Refuses options that cannot build an index on vectors of `dim` floats, naming the option. */
  def validate(dim: Int): Unit = {
    numPartitions.filter(_ <= 0).foreach(n => bad(s"num_partitions must be positive, got $n"))
    targetPartitionSize.filter(_ <= 0).foreach(n => bad(s"target_partition_size must be positive, got $n"))
    if (sampleRate <= 0) bad(s"sample_rate must be positive, got $sampleRate")
    if (maxIterations <= 0) bad(s"max_iters must be positive, got $maxIterations")
    if (numBits != 8) bad(s"num_bits must be 8 (the only width this build writes), got $numBits")
    indexType match {
      case VectorIndexType.IvfPq =>
        val m = numSubVectors.getOrElse(bad("num_sub_vectors is required (as pylance requires it)"))
        if (m <= 0 || dim % m != 0) bad(s"num_sub_vectors must divide the dimension $dim, got $m")
      case _ => numSubVectors.foreach(m => bad(s"num_sub_vectors applies to IVF_PQ only, got $m"))
    }
  }

  /**
   * num_partitions for a table of `rows` vectors: the option, else pylance's rule; for IVF_PQ at
   * most `rows / sample_rate` (at least 1), as pylance 14 trains it ("training 78 of the 141
   * requested IVF partitions; column 'emb' holds 20000 vectors"; IVF_FLAT and IVF_SQ keep the
   * number asked for).
   */
  def partitions(rows: Long): Int = {
    val asked = numPartitions.getOrElse(math.max(1L, math.min(rows / targetPartitionSize.getOrElse(indexType.targetPartitionSize), 1L << 16)).toInt)
    if (indexType == VectorIndexType.IvfPq) math.max(1L, math.min(asked.toLong, rows / sampleRate)).toInt else asked
  }

  /** How many sample rows training reads: the IVF sample, and for PQ and SQ theirs ([[quantizerSampleSize]]). */
  def sampleSize(partitions: Int): Long = {
    val ivf = partitions.toLong * sampleRate
    if (indexType == VectorIndexType.IvfFlat) ivf else math.max(ivf, quantizerSampleSize)
  }

  /**
   * How many rows train the PQ codebooks (and the SQ bounds): `sample_rate · 2^num_bits`, as
   * pylance, whose k-means also reads at most `sample_rate · k` rows, 65,536 for 256 codes.
   */
  def quantizerSampleSize: Long = sampleRate.toLong << numBits
}
