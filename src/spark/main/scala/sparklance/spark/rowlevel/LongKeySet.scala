package sparklance.spark.rowlevel

/**
 * A read-only set of longs for membership tests on every row of a scan: open addressing with
 * linear probing over a table at most half full, so a test is one multiply and, mostly, one
 * array read. Spark ships no primitive hash set a plugin may use, and a boxed one costs a pointer
 * chase per test.
 *
 * Most tested values are not keys (a MERGE's target rows outnumber its source's), so a bit array
 * of 8 bits a key answers most of them first: it stays in a core's cache where the table (16 to 32
 * bytes a key) does not.
 */
final class LongKeySet private (table: Array[Long], tableShift: Int, seen: Array[Long], seenShift: Int,
    hasZero: Boolean, val size: Int, keysInOrder: Option[Array[Long]]) {
  private val mask = table.length - 1

  def contains(key: Long): Boolean =
    if (key == 0L) hasZero
    else {
      val hash = LongKeySet.hash(key)
      val bit = (hash >>> seenShift).toInt
      // `1L << bit` shifts by the low 6 bits of `bit`, its place in the word.
      if ((seen(bit >>> 6) & (1L << bit)) == 0L) false
      else {
        var slot = (hash >>> tableShift).toInt
        // Zero marks an empty slot; the key zero itself is held apart, in `hasZero`.
        while (table(slot) != 0L && table(slot) != key) slot = (slot + 1) & mask
        table(slot) == key
      }
    }

  /** The keys, distinct and in order, for [[retain]]. */
  private lazy val sortedKeys: Array[Long] = keysInOrder.getOrElse {
    val sorted = new Array[Long](size)
    var n = 0
    if (hasZero) { sorted(0) = 0L; n = 1 }
    var slot = 0
    while (slot < table.length) { if (table(slot) != 0L) { sorted(n) = table(slot); n += 1 }; slot += 1 }
    java.util.Arrays.sort(sorted)
    sorted
  }

  /**
   * Keeps, of the `count` indices first in `rows`, those whose value (`values(j)` for `rows(j)`)
   * is a key: they are moved to the front of `rows`, in order, and their number returned.
   *
   * While the values ascend, as keys appended in order do, they are merged with the sorted keys:
   * each test compares with keys read in order, where a lookup in the table mostly misses the
   * core's caches (half of a MERGE's target scan went to those lookups). From the first value
   * below the one before it, the rest are looked up.
   */
  def retain(values: Array[Long], rows: Array[Int], count: Int): Int = {
    val keys = sortedKeys
    var kept = 0
    var j = 0
    var at = 0
    var previous = Long.MinValue
    while (j < count && values(j) >= previous) {
      val value = values(j)
      // Mostly the key at hand is still at or above the value: most values are no key.
      if (at < keys.length && keys(at) < value) at = LongKeySet.firstAtLeast(keys, at, value)
      if (at < keys.length && keys(at) == value) { rows(kept) = rows(j); kept += 1 }
      previous = value
      j += 1
    }
    while (j < count) {
      if (contains(values(j))) { rows(kept) = rows(j); kept += 1 }
      j += 1
    }
    kept
  }
}

object LongKeySet {
  // Fibonacci hashing: the top bits of the product spread keys in arithmetic progression (every
  // k-th id) evenly; the table and the bit array each take as many top bits as they need.
  private def hash(key: Long): Long = key * 0x9E3779B97F4A7C15L

  private def powerOfTwoAtLeast(n: Long): Int = {
    val p = java.lang.Long.highestOneBit(math.max(64L, n))
    (if (p < n) p << 1 else p).toInt
  }

  /**
   * The index of the first of `sorted` from `from` on that is not below `value`, or its length.
   * It gallops (steps of 1, 2, 4, ...) and then halves: the next key is mostly a step or two on.
   */
  private def firstAtLeast(sorted: Array[Long], from: Int, value: Long): Int =
    if (from >= sorted.length || sorted(from) >= value) from
    else {
      // sorted(below) < value; sorted(above) >= value where above < sorted.length.
      var below = from
      var step = 1
      var above = from + 1
      while (above < sorted.length && sorted(above) < value) {
        below = above
        step <<= 1
        above = if (step >= sorted.length - below) sorted.length else below + step
      }
      while (above - below > 1) {
        val middle = (below + above) >>> 1
        if (sorted(middle) < value) below = middle else above = middle
      }
      above
    }

  /**
   * The set of `keys(0 until n)`. Keys given in ascending order (as [[sparklance.spark.scan.KeySetFilter]]
   * sorts a MERGE's source keys once, on the driver) are kept in that order too, so that no
   * reader sorts them again for [[LongKeySet.retain]].
   */
  def of(n: Int, keys: Int => Long): LongKeySet = {
    // At least twice the keys keeps probe runs short.
    val table = new Array[Long](powerOfTwoAtLeast(2L * n))
    val tableShift = 64 - Integer.numberOfTrailingZeros(table.length)
    val seenBits = powerOfTwoAtLeast(8L * n)
    val seen = new Array[Long](seenBits / 64)
    val seenShift = 64 - Integer.numberOfTrailingZeros(seenBits)
    val mask = table.length - 1
    var hasZero = false
    var distinct = 0
    var i = 0
    while (i < n) {
      val key = keys(i)
      if (key == 0L) { if (!hasZero) distinct += 1; hasZero = true }
      else {
        val hash = LongKeySet.hash(key)
        val bit = (hash >>> seenShift).toInt
        seen(bit >>> 6) |= 1L << bit
        var slot = (hash >>> tableShift).toInt
        while (table(slot) != 0L && table(slot) != key) slot = (slot + 1) & mask
        if (table(slot) == 0L) { table(slot) = key; distinct += 1 }
      }
      i += 1
    }
    var ascending = true
    i = 1
    while (ascending && i < n) { ascending = keys(i - 1) <= keys(i); i += 1 }
    val inOrder = Option.when(ascending) {
      val distinctKeys = new Array[Long](distinct)
      var d = 0
      i = 0
      while (i < n) { val key = keys(i); if (d == 0 || distinctKeys(d - 1) != key) { distinctKeys(d) = key; d += 1 }; i += 1 }
      distinctKeys
    }
    new LongKeySet(table, tableShift, seen, seenShift, hasZero, distinct, inOrder)
  }
}
