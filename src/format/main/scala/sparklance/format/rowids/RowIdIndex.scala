package sparklance.format.rowids

import java.lang.Long.{compareUnsigned, toUnsignedString}
import scala.collection.mutable.ArrayBuilder
import org.roaringbitmap.RoaringBitmap
import sparklance.format.CorruptFileException
import sparklance.format.Primitives
import sparklance.format.table.RowAddress

/**
 * Where each live row of one table version is: row id -> row address (fragmentId << 32 | offset).
 *
 * Stored as runs in which consecutive ids sit at consecutive addresses, because that is what
 * stable row ids look like: a fragment written in one go is a single run, and updates and
 * deletions only cut runs into a few pieces. 20 bytes per run instead of a map entry per row.
 */
final class RowIdIndex private (
    runStartIds: Array[Long], // sorted ascending (unsigned); runs never overlap
    runStartAddresses: Array[Long],
    runLengths: Array[Int],
    val size: Long) {

  /** The address of the live row with this id, or -1 if no live row has it. */
  def address(rowId: Long): Long = {
    val run = lastRunStartingAtOrBefore(rowId)
    if (run < 0) return -1L
    val delta = rowId - runStartIds(run)
    if (compareUnsigned(delta, runLengths(run).toLong) < 0) runStartAddresses(run) + delta else -1L
  }

  // -1 is never a real address: it would be offset 2^32 - 1 of fragment 2^32 - 1
  def contains(rowId: Long): Boolean = address(rowId) != -1L

  /** How many runs the index holds; the measure of how compact it is. */
  def runCount: Int = runStartIds.length

  private def lastRunStartingAtOrBefore(rowId: Long): Int = {
    var lo = 0
    var hi = runStartIds.length - 1
    var found = -1
    while (lo <= hi) {
      val mid = (lo + hi) >>> 1
      if (compareUnsigned(runStartIds(mid), rowId) <= 0) { found = mid; lo = mid + 1 }
      else hi = mid - 1
    }
    found
  }
}

object RowIdIndex {
  /** One fragment's row ids in offset order and its deleted offsets (may be empty). */
  final case class FragmentIds(fragmentId: Long, rowIds: Array[Long], deleted: RoaringBitmap)

  /**
   * Indexes the live rows of the given fragments. Two live rows with one row id mean the table is
   * damaged (an update that kept the old row alive, or a bad rebase): that fails here rather than
   * letting a later update or delete pick one of them at random.
   */
  def build(fragments: Seq[FragmentIds], source: String = "the row id index"): RowIdIndex = {
    val runs = new RunCollector
    fragments.foreach(fragment => collectRuns(fragment, runs, source))
    val (unsortedIds, unsortedAddresses, unsortedLengths) = runs.result()
    val order = sortedOrder(unsortedIds)
    val startIds = order.map(unsortedIds)
    val startAddresses = order.map(unsortedAddresses)
    val lengths = order.map(unsortedLengths)
    checkNoSharedIds(startIds, startAddresses, lengths, source)
    new RowIdIndex(startIds, startAddresses, lengths, lengths.foldLeft(0L)(_ + _))
  }

  private final class RunCollector {
    private val ids = ArrayBuilder.make[Long]
    private val addresses = ArrayBuilder.make[Long]
    private val runLengths = ArrayBuilder.make[Int]
    private var openId = 0L
    private var openAddress = 0L
    private var openLength = 0

    def add(rowId: Long, address: Long): Unit = {
      val continues = openLength > 0 && openLength < Int.MaxValue &&
        rowId == openId + openLength && address == openAddress + openLength && rowId != 0L
      if (continues) openLength += 1
      else { close(); openId = rowId; openAddress = address; openLength = 1 }
    }

    def close(): Unit = if (openLength > 0) {
      ids += openId; addresses += openAddress; runLengths += openLength
      openLength = 0
    }

    def result(): (Array[Long], Array[Long], Array[Int]) = { close(); (ids.result(), addresses.result(), runLengths.result()) }
  }

  private def collectRuns(fragment: FragmentIds, runs: RunCollector, source: String): Unit = {
    if (fragment.fragmentId < 0 || fragment.fragmentId > 0xffffffffL)
      throw new CorruptFileException(source, s"fragment id ${fragment.fragmentId} does not fit the 32 bits of a row address")
    // deleted offsets in ascending order, walked alongside the rows; an offset past the last row
    // names no row, so like Lance it deletes nothing
    val deleted = fragment.deleted.getIntIterator
    var nextDeleted = if (deleted.hasNext) Integer.toUnsignedLong(deleted.next()) else Long.MaxValue
    var offset = 0
    while (offset < fragment.rowIds.length) {
      if (offset == nextDeleted)
        nextDeleted = if (deleted.hasNext) Integer.toUnsignedLong(deleted.next()) else Long.MaxValue
      else runs.add(fragment.rowIds(offset), RowAddress.of(fragment.fragmentId, offset))
      offset += 1
    }
    runs.close()
  }

  /** The permutation that sorts ids ascending (unsigned): a bottom-up merge sort on primitives. */
  private def sortedOrder(ids: Array[Long]): Array[Int] = {
    var order = Primitives.ints(ids.length)(i => i)
    if (isSorted(ids)) return order
    var scratch = new Array[Int](ids.length)
    var width = 1
    while (width < ids.length) {
      var lo = 0
      while (lo < ids.length) {
        val mid = math.min(lo + width, ids.length)
        val hi = math.min(lo + 2 * width, ids.length)
        var l = lo
        var r = mid
        var w = lo
        while (w < hi) {
          if (r >= hi || (l < mid && compareUnsigned(ids(order(l)), ids(order(r))) <= 0)) { scratch(w) = order(l); l += 1 }
          else { scratch(w) = order(r); r += 1 }
          w += 1
        }
        lo = hi
      }
      val swap = order; order = scratch; scratch = swap
      width *= 2
    }
    order
  }

  private def isSorted(ids: Array[Long]): Boolean = {
    var i = 1
    while (i < ids.length && compareUnsigned(ids(i - 1), ids(i)) <= 0) i += 1
    i >= ids.length
  }

  private def checkNoSharedIds(startIds: Array[Long], startAddresses: Array[Long], lengths: Array[Int], source: String): Unit = {
    var k = 1
    while (k < startIds.length) {
      val previousEnd = startIds(k - 1) + lengths(k - 1)
      if (compareUnsigned(startIds(k), previousEnd) < 0) {
        val id = startIds(k)
        val other = startAddresses(k - 1) + (id - startIds(k - 1))
        throw new CorruptFileException(source, s"row id ${toUnsignedString(id)} belongs to two live rows: " +
          s"${describe(other)} and ${describe(startAddresses(k))}")
      }
      k += 1
    }
  }

  private def describe(address: Long): String = s"fragment ${RowAddress.fragmentId(address)} offset ${RowAddress.offset(address)}"
}
