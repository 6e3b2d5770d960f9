package sparklance.format.file.v2_0

/**
 * One decoded page, kept on the heap in the reader's page cache and copied into Arrow buffers by
 * `VectorLoader`. `validity` is an LSB-first bitmap over the page's values, null when all are valid;
 * `AllNull` has none.
 */
private[v2_0] sealed trait Decoded {
  def length: Int
  def validity: Array[Byte]
  /** The same values with `bits` ANDed into the validity (a Nullable wrapper's some_nulls). */
  def restrictedTo(bits: Array[Byte]): Decoded
}

private[v2_0] object Decoded {
  /** The AND of two validity bitmaps over n values, either of which may be null (all valid). */
  def and(a: Array[Byte], b: Array[Byte], n: Int): Array[Byte] =
    if (a == null) b
    else if (b == null) a
    else {
      val out = new Array[Byte](Bits.bytesFor(n))
      var i = 0
      while (i < out.length) { out(i) = (a(i) & b(i)).toByte; i += 1 }
      out
    }

  /**
   * How many of values `[from, from + count)` of `d` fit `maxBytes` of Arrow memory, taken in order
   * and the first one always when `atLeastOne`, and their bytes: a value's bytes, plus 8 a
   * variable-width value (its offset and validity), as [[sparklance.format.file.RowBytes]] counts;
   * 8 a list, whose items are counted where they are read.
   */
  def valuesWithin(d: Decoded, from: Int, count: Int, maxBytes: Long, atLeastOne: Boolean): (Int, Long) = {
    if (maxBytes == Long.MaxValue) return (count, 0L)
    def fixed(bytesEach: Double): (Int, Long) = {
      val fit = if (bytesEach <= 0) count else math.min(count.toLong, (maxBytes / bytesEach).toLong).toInt
      val n = if (fit == 0 && atLeastOne && count > 0) 1 else fit
      (n, math.ceil(n * bytesEach).toLong)
    }
    d match {
      case v: VariableValues =>
        // Mostly all fit: then their sum is one subtraction, not a loop over the values.
        val all = v.offsets(from + count) - v.offsets(from) + 8L * count
        if (all <= maxBytes) return (count, all)
        var used = 0L
        var i = 0
        var more = true
        while (more && i < count) {
          val bytes = v.offsets(from + i + 1) - v.offsets(from + i) + 8
          if (used + bytes > maxBytes && (i > 0 || !atLeastOne)) more = false
          else { used += bytes; i += 1 }
        }
        (i, used)
      case f: FixedValues => fixed(f.bits / 8.0)
      case l: FixedSizeLists => fixed(l.dimension * (l.items match { case f: FixedValues => f.bits / 8.0; case _ => 0.0 }))
      case _: ListOffsets => fixed(8)
      case _: AllNull => (count, 0L)
    }
  }

  /** `length` values of `bits` each at `data(base)`. */
  final case class FixedValues(length: Int, validity: Array[Byte], bits: Int, data: Array[Byte], base: Int) extends Decoded {
    def restrictedTo(bits: Array[Byte]): Decoded = copy(validity = and(validity, bits, length))
  }

  /** Value i is `data(base + offsets(i) until base + offsets(i + 1))`. */
  final case class VariableValues(length: Int, validity: Array[Byte], offsets: Array[Long], data: Array[Byte], base: Int)
      extends Decoded {
    def restrictedTo(bits: Array[Byte]): Decoded = copy(validity = and(validity, bits, length))
  }

  final case class FixedSizeLists(length: Int, validity: Array[Byte], dimension: Int, items: Decoded) extends Decoded {
    def restrictedTo(bits: Array[Byte]): Decoded = copy(validity = and(validity, bits, length))
  }

  /** List i spans page-relative items `[ends(i), ends(i + 1))`; `ends(0)` = 0. */
  final case class ListOffsets(length: Int, validity: Array[Byte], ends: Array[Long], numItems: Long) extends Decoded {
    def restrictedTo(bits: Array[Byte]): Decoded = copy(validity = and(validity, bits, length))
  }

  /**
   * `length` values of `shape`, all null (`nullable.all_nulls`). Nothing is materialised: such a
   * page has no buffers, so its claimed length alone must not decide how much memory is used.
   */
  final case class AllNull(length: Int, shape: Shape) extends Decoded {
    def validity: Array[Byte] = null
    def restrictedTo(bits: Array[Byte]): Decoded = this
  }
}
