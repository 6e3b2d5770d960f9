package sparklance.spark.layout

/**
 * A space-filling curve: the position along it of a point whose coordinates each have `bits` bits
 * (at most 63 bits in all, so positions are non-negative longs). Points close on the curve are
 * close in every coordinate, so a run of rows in curve order spans a narrow range of each column.
 */
sealed trait Curve {
  /** The position of `coordinates`, which it may overwrite (callers pass a scratch array). */
  def index(coordinates: Array[Long], bits: Int): Long
}

object Curve {
  /** At most 10 bits (1,024 ranks) a column, fewer when more columns must share 63 bits. */
  def bitsPerColumn(columns: Int): Int = math.min(10, 63 / columns)

  /** How many rank boundaries a column of a `columns`-column key has: rank 0 is NULL's, one rank more than boundaries. */
  def boundaryCount(columns: Int): Int = (1 << bitsPerColumn(columns)) - 2

  /** The coordinates' bits interleaved, most significant first, the first coordinate's first. */
  case object ZOrder extends Curve {
    def index(coordinates: Array[Long], bits: Int): Long = interleave(coordinates, bits)
  }

  /**
   * The Hilbert curve, by Skilling's transpose ("Programming the Hilbert curve", AIP Conf. Proc.
   * 707, 2004): the coordinates are turned into the curve's transposed index in place, whose bits
   * interleaved are the position. Unlike Z-order, consecutive positions are neighbouring cells, so
   * a run of rows never jumps across the space: Delta's liquid clustering uses it for that reason.
   */
  case object Hilbert extends Curve {
    def index(coordinates: Array[Long], bits: Int): Long = {
      val x = coordinates
      val n = x.length
      if (n == 1) return x(0)
      // Undo excess work: walk the bits from the top, reflecting and exchanging lower bits.
      var q = 1L << (bits - 1)
      while (q > 1) {
        val p = q - 1
        var i = 0
        while (i < n) {
          if ((x(i) & q) != 0) x(0) ^= p
          else { val t = (x(0) ^ x(i)) & p; x(0) ^= t; x(i) ^= t }
          i += 1
        }
        q >>>= 1
      }
      // Gray encode.
      var i = 1
      while (i < n) { x(i) ^= x(i - 1); i += 1 }
      var t = 0L
      q = 1L << (bits - 1)
      while (q > 1) { if ((x(n - 1) & q) != 0) t ^= q - 1; q >>>= 1 }
      i = 0
      while (i < n) { x(i) ^= t; i += 1 }
      interleave(x, bits)
    }
  }

  private def interleave(coordinates: Array[Long], bits: Int): Long = {
    var key = 0L
    var bit = bits - 1
    while (bit >= 0) {
      var c = 0
      while (c < coordinates.length) { key = (key << 1) | ((coordinates(c) >>> bit) & 1L); c += 1 }
      bit -= 1
    }
    key
  }
}
