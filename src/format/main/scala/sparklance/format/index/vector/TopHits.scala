package sparklance.format.index.vector

import scala.collection.mutable

/** The `limit` smallest hits offered, by (distance, row id); a bounded max-heap. */
final class TopHits(limit: Int) {
  private val heap = mutable.PriorityQueue.empty[VectorHit](VectorHit.ordering)

  def offer(rowId: Long, address: Long, distance: Float): Unit =
    if (heap.size < limit) heap.enqueue(VectorHit(rowId, address, distance))
    else {
      val hit = VectorHit(rowId, address, distance)
      if (VectorHit.ordering.lt(hit, heap.head)) { heap.dequeue(); heap.enqueue(hit) }
    }

  def size: Int = heap.size

  /** Nearest first. */
  def result: IndexedSeq[VectorHit] = heap.toIndexedSeq.sorted(VectorHit.ordering)
}
