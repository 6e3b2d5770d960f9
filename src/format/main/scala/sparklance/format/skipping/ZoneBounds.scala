package sparklance.format.skipping

/**
 * Bounds of strings and binaries kept short. A zone map keeps two values per zone and a write
 * keeps its zones until the file ends, so whole values would let one column of 64 MiB documents
 * hold gigabytes of bounds. A bound longer than [[ZoneBounds.MaxBytes]] is cut to a prefix: the
 * prefix is still a lower bound; an upper bound is the prefix up to its last ASCII byte below
 * 0x7F, that byte raised by one (still valid UTF-8, and above every value starting with the cut
 * prefix). A value with no such byte (all non-ASCII) has no short upper bound: the zone's max is
 * left unknown (null), which pylance (LANCE-SCALAR-INDICES.md §2.5) and [[ZoneTest]] never
 * prune by.
 */
object ZoneBounds {
  /** The longest bound kept whole. */
  val MaxBytes = 1024

  /** `length` bytes starting at `start` need cutting. */
  def tooLong(length: Long): Boolean = length > MaxBytes

  /**
   * How many leading bytes of `bytes` (at least MaxBytes + 1 of a longer value) a lower bound
   * keeps: MaxBytes, less the bytes of a UTF-8 character cut in two.
   */
  private def cut(bytes: Array[Byte]): Int = {
    var n = MaxBytes
    while (n > 0 && (bytes(n) & 0xc0) == 0x80) n -= 1
    n
  }

  /** A lower bound of a value starting with `head` (its first MaxBytes + 1 bytes or more). */
  def lower(head: Array[Byte]): ZoneValue.Bytes = ZoneValue.Bytes(java.util.Arrays.copyOf(head, cut(head)))

  /** An upper bound of a value starting with `head` (its first MaxBytes + 1 bytes or more); None when there is none short. */
  def upper(head: Array[Byte]): Option[ZoneValue.Bytes] = {
    var k = cut(head) - 1
    while (k >= 0 && (head(k) & 0xff) >= 0x7f) k -= 1
    if (k < 0) None
    else {
      val out = java.util.Arrays.copyOf(head, k + 1)
      out(k) = (out(k) + 1).toByte
      Some(ZoneValue.Bytes(out))
    }
  }

  /** `value` as a zone's lower bound. */
  def lower(value: ZoneValue): ZoneValue = value match {
    case ZoneValue.Bytes(b) if tooLong(b.length) => lower(b)
    case other => other
  }

  /** `value` as a zone's upper bound. */
  def upper(value: ZoneValue): Option[ZoneValue] = value match {
    case ZoneValue.Bytes(b) if tooLong(b.length) => upper(b)
    case other => Some(other)
  }
}
