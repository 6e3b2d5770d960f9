package sparklance.format.index.vector

/**
 * One answer of a vector search: the row id as the index stores it (the row address, or the stable
 * row id on a table with them), the row's address in the searched version (to read its columns),
 * and its distance.
 */
final case class VectorHit(rowId: Long, address: Long, distance: Float)

object VectorHit {
  /** pylance's result order: distance, then row id. */
  implicit val ordering: Ordering[VectorHit] = (a, b) => {
    val c = java.lang.Float.compare(a.distance, b.distance)
    if (c != 0) c else java.lang.Long.compare(a.rowId, b.rowId)
  }
}
