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
    hasZero: Boolean, val size: Int) {
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
}

object LongKeySet {
  // Fibonacci hashing: the top bits of the product spread keys in arithmetic progression (every
  // k-th id) evenly; the table and the bit array each take as many top bits as they need.
  private def hash(key: Long): Long = key * 0x9E3779B97F4A7C15L

  private def powerOfTwoAtLeast(n: Long): Int = {
    val p = java.lang.Long.highestOneBit(math.max(64L, n))
    (if (p < n) p << 1 else p).toInt
  }

  /** The set of `keys(0 until n)`. */
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
    new LongKeySet(table, tableShift, seen, seenShift, hasZero, distinct)
  }
}
