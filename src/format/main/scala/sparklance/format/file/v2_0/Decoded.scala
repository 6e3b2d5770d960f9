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
