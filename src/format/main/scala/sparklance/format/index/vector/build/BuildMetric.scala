package sparklance.format.index.vector.build

import java.util.Locale
import sparklance.format.proto.VectorIndexProtos.VectorMetricType

/**
 * The distance a vector index is built for, as pylance names it (`metric`), with what training
 * and encoding do differently under it (LANCE-VECTOR-INDICES.md §3, §8). Kept to the build until
 * the index reader's metric type is shared.
 */
sealed abstract class BuildMetric(val name: String, val proto: VectorMetricType) extends Serializable {
  /** Cosine indices are L2 indices over unit vectors: rows and samples are normalized first. */
  def normalizes: Boolean = this == BuildMetric.Cosine
  /** Dot indices keep unit-norm centroids and quantize raw vectors, not residuals. */
  def spherical: Boolean = this == BuildMetric.Dot
}

object BuildMetric {
  case object L2 extends BuildMetric("l2", VectorMetricType.L2)
  case object Cosine extends BuildMetric("cosine", VectorMetricType.Cosine)
  case object Dot extends BuildMetric("dot", VectorMetricType.Dot)

  val all: Seq[BuildMetric] = Seq(L2, Cosine, Dot)

  /** pylance's spellings, case-insensitive ("euclidean" is its alias of l2); None for others (hamming: bit vectors). */
  def parse(name: String): Option[BuildMetric] = name.toLowerCase(Locale.ROOT) match {
    case "euclidean" => Some(L2)
    case other => all.find(_.name == other)
  }
}
