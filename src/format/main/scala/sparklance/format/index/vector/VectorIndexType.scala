package sparklance.format.index.vector

import sparklance.format.UnsupportedFeatureException

/**
 * The kind of an IVF index, as `lance:index` in its index.idx names it: the IVF partitioning with
 * a FLAT sub-index over one of three storages (raw vectors, PQ codes, SQ codes).
 */
sealed abstract class VectorIndexType(val name: String) {
  override def toString: String = name
}

object VectorIndexType {
  case object IvfFlat extends VectorIndexType("IVF_FLAT")
  case object IvfPq extends VectorIndexType("IVF_PQ")
  case object IvfSq extends VectorIndexType("IVF_SQ")

  val all: Seq[VectorIndexType] = Seq(IvfFlat, IvfPq, IvfSq)

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
