package sparklance.format.file.v2_1

/**
 * The arrays a decoded page's values go into: fixed-width values, and the offsets and bytes of
 * variable-width ones. Each may be longer than asked for; every element up to the length asked for
 * is written by the decoder.
 */
private[v2_1] trait PageArrays {
  def values(length: Int): Array[Byte]
  def offsets(length: Int): Array[Long]
  def bytes(length: Int): Array[Byte]
}

private[v2_1] object PageArrays {
  /** New arrays, owned by the page: for pages that are kept (decoded whole and cached). */
  object Fresh extends PageArrays {
    def values(length: Int): Array[Byte] = new Array[Byte](length)
    def offsets(length: Int): Array[Long] = new Array[Long](length)
    def bytes(length: Int): Array[Byte] = new Array[Byte](length)
  }

  /**
   * One array of each kind, lent to one page at a time and reused by the next after [[reclaim]]:
   * a reader's windows are copied into Arrow memory before it reads the next rows, so a batch's
   * values need not be allocated (and zeroed) again. A JFR profile of a one-column scan of 64-byte
   * strings had 39% of the task samples allocating the arrays a window's chunks were joined into.
   * A second page asking while the first holds an array gets a new one.
   */
  final class Reused extends PageArrays {
    private val valueArrays = new Lender[Byte]
    private val offsetArrays = new Lender[Long]
    private val byteArrays = new Lender[Byte]

    /** The lent arrays are free again: the pages they went to are no longer read. */
    def reclaim(): Unit = { valueArrays.lent = false; offsetArrays.lent = false; byteArrays.lent = false }

    def values(length: Int): Array[Byte] = valueArrays.lend(length)
    def offsets(length: Int): Array[Long] = offsetArrays.lend(length)
    def bytes(length: Int): Array[Byte] = byteArrays.lend(length)
  }

  private final class Lender[A: scala.reflect.ClassTag] {
    private var array = new Array[A](0)
    var lent = false
    def lend(length: Int): Array[A] =
      if (lent) new Array[A](length)
      else {
        lent = true
        if (array.length < length) array = new Array[A](length)
        array
      }
  }
}
