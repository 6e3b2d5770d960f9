package sparklance.format.index.vector.build

import java.util.Locale

/**
 * An IVF index type this build writes: the IVF model with a FLAT sub-index, and the rows' storage
 * in `auxiliary.idx` (LANCE-VECTOR-INDICES.md §2, §4).
 */
sealed abstract class VectorIndexType(val name: String) extends Serializable {
  /** pylance's default partition size, from which it derives num_partitions (rows / size, at least 1). */
  def targetPartitionSize: Long = if (this == VectorIndexType.IvfFlat) 4096L else 8192L
}

object VectorIndexType {
  case object IvfFlat extends VectorIndexType("IVF_FLAT")
  case object IvfPq extends VectorIndexType("IVF_PQ")
  case object IvfSq extends VectorIndexType("IVF_SQ")

  val all: Seq[VectorIndexType] = Seq(IvfFlat, IvfPq, IvfSq)

  def parse(name: String): Option[VectorIndexType] = all.find(_.name == name.toUpperCase(Locale.ROOT))
}
