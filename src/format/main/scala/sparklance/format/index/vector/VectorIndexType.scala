package sparklance.format.index.vector

import sparklance.format.UnsupportedFeatureException

/**
 * The kind of an IVF index, as `lance:index` in its index.idx names it: the IVF partitioning with
 * a FLAT sub-index over one of three storages (raw vectors, PQ codes, SQ codes).
 */
sealed abstract class VectorIndexType(val name: String) extends Serializable {
  /** pylance's default partition size, from which it derives num_partitions (rows / size, at least 1). */
  def targetPartitionSize: Long = if (this == VectorIndexType.IvfFlat) 4096L else 8192L

  override def toString: String = name
}

object VectorIndexType {
  case object IvfFlat extends VectorIndexType("IVF_FLAT")
  case object IvfPq extends VectorIndexType("IVF_PQ")
  case object IvfSq extends VectorIndexType("IVF_SQ")

  val all: Seq[VectorIndexType] = Seq(IvfFlat, IvfPq, IvfSq)

  /** The type pylance names `name` (any case), if sparklance builds and searches it. */
  def find(name: String): Option[VectorIndexType] = all.find(_.name == name.toUpperCase(java.util.Locale.ROOT))

  /**
   * The type named `name` in the index `what`. HNSW sub-indices are refused: matching pylance's
   * answers would need its graph search step for step (LANCE-VECTOR-INDICES.md §5).
   */
  def parse(name: String, what: => String): VectorIndexType = all.find(_.name == name).getOrElse {
    val detail = if (name.contains("HNSW")) "HNSW sub-indices are not searched by sparklance"
      else s"sparklance searches ${all.mkString(", ")}"
    throw new UnsupportedFeatureException(s"Vector index $what has type $name; $detail")
  }
}
