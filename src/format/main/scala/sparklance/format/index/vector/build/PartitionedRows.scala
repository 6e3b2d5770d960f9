package sparklance.format.index.vector.build

/**
 * The rows of one segment grouped by IVF partition as they are encoded: per partition the row ids
 * and the payloads (`bytesPerRow` each), in growable primitive arrays (8 + bytesPerRow bytes a row).
 */
final class PartitionedRows(val numPartitions: Int, val bytesPerRow: Int) {
  private val ids = Array.fill(numPartitions)(new Array[Long](8))
  private val payloads = Array.fill(numPartitions)(new Array[Byte](8 * bytesPerRow))
  private val counts = new Array[Int](numPartitions)

  def size(partition: Int): Int = counts(partition)
  def total: Long = counts.foldLeft(0L)(_ + _)

  /** Room for one more row in `partition`: the payload array and the offset to write it at. */
  def append(partition: Int, rowId: Long): (Array[Byte], Int) = {
    val n = counts(partition)
    if (n == ids(partition).length) {
      val grown = math.min(Int.MaxValue - 8L, n * 2L).toInt
      ids(partition) = java.util.Arrays.copyOf(ids(partition), grown)
      payloads(partition) = java.util.Arrays.copyOf(payloads(partition), Math.multiplyExact(grown, bytesPerRow))
    }
    ids(partition)(n) = rowId
    counts(partition) = n + 1
    (payloads(partition), n * bytesPerRow)
  }

  /** The row ids of `partition` in ascending order with their payloads in the same order, as pylance writes them. */
  def sorted(partition: Int): (Array[Long], Array[Byte]) = {
    val n = counts(partition)
    val id = ids(partition)
    val ascending = (1 until n).forall(i => id(i - 1) <= id(i))
    if (ascending) (java.util.Arrays.copyOf(id, n), java.util.Arrays.copyOf(payloads(partition), n * bytesPerRow))
    else {
      val order = (0 until n).sortBy(id(_))
      val payload = payloads(partition)
      val out = new Array[Byte](n * bytesPerRow)
      order.zipWithIndex.foreach { case (from, to) => System.arraycopy(payload, from * bytesPerRow, out, to * bytesPerRow, bytesPerRow) }
      (order.map(id(_)).toArray, out)
    }
  }

  /** Frees a written partition's arrays. */
  def release(partition: Int): Unit = {
    ids(partition) = Array.emptyLongArray
    payloads(partition) = Array.emptyByteArray
  }
}
