package sparklance.format.index.vector

/** One answer of a vector search: the row id as the index stores it (address or stable id) and its distance. */
final case class VectorHit(rowId: Long, distance: Float)

object VectorHit {
  /** pylance's result order: distance, then row id. */
  implicit val ordering: Ordering[VectorHit] = (a, b) => {
    val c = java.lang.Float.compare(a.distance, b.distance)
    if (c != 0) c else java.lang.Long.compare(a.rowId, b.rowId)
  }
}
