package sparklance.format.rowids

/**
 * A fragment's per-row versions by row offset, from its sequence's runs, without one array entry
 * per row: the run holding an offset is found by binary search over the runs' first offsets.
 */
final class VersionLookup private[rowids] (runStarts: Array[Long], versions: Array[Long]) {
  def count: Long = runStarts.last

  def versionAt(offset: Int): Long = {
    val o = Integer.toUnsignedLong(offset)
    if (o >= count) throw new IllegalArgumentException(s"Row offset $o is past the $count versions of a fragment")
    var k = java.util.Arrays.binarySearch(runStarts, o) match { case i if i >= 0 => i; case i => -i - 2 }
    while (runStarts(k + 1) == runStarts(k)) k += 1
    versions(k)
  }
}
