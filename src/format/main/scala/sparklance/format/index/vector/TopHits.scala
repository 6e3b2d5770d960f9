package sparklance.format.index.vector

import scala.collection.mutable

/**
 * The `limit` best hits offered by `ordering` (best first; by default pylance's: distance, then row
 * id); a bounded heap whose head is the worst kept.
 */
final class TopHits(limit: Int, ordering: Ordering[VectorHit] = VectorHit.ordering) {
  private val heap = mutable.PriorityQueue.empty[VectorHit](ordering)

  def offer(rowId: Long, address: Long, distance: Float): Unit =
    if (heap.size < limit) heap.enqueue(VectorHit(rowId, address, distance))
    else {
      val hit = VectorHit(rowId, address, distance)
      if (ordering.lt(hit, heap.head)) { heap.dequeue(); heap.enqueue(hit) }
    }

  def size: Int = heap.size

  /** The worst hit kept once `limit` are, which a hit must beat to be kept; None before. */
  def bar: Option[VectorHit] = if (heap.size < limit) None else Some(heap.head)

  /** Best first. */
  def result: IndexedSeq[VectorHit] = heap.toIndexedSeq.sorted(ordering)
}
