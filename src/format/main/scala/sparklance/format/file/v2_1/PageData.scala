package sparklance.format.file.v2_1

import sparklance.format.Primitives

/**
 * One decoded page of a leaf column: its rep/def level entries (null = none: all zero, one entry
 * per row) and its leaf value slots, one per visible entry.
 */
private[v2_1] final class PageData(val rows: Int, val rep: Array[Int], val defs: Array[Int], val numLevels: Int,
    val slots: Slots, val layers: Layers, ctx: Ctx) {

  if (rep != null && rep.length != numLevels) throw ctx.corrupt(s"${rep.length} rep levels, $numLevels expected")
  if (defs != null && defs.length != numLevels) throw ctx.corrupt(s"${defs.length} def levels, $numLevels expected")

  private def visible(i: Int): Boolean = defs == null || defs(i) <= layers.maxVisibleDef

  // The arrays are built by methods, not in the lazy vals' initializers: a loop inside a field
  // initializer runs with the object on the JVM's operand stack, where it cannot be compiled
  // on-stack (OSR), and a page's loop runs only once, so it would stay interpreted.

  /** The first level entry of each row, plus numLevels at the end. */
  lazy val rowLevel: Array[Int] = firstLevels()

  /** The first value slot of each row, plus the slot count. */
  lazy val rowSlot: Array[Int] = firstSlots()

  private def firstLevels(): Array[Int] =
    if (rep == null) {
      if (numLevels != rows) throw ctx.corrupt(s"$numLevels level entries for $rows rows")
      Primitives.ints(rows + 1)(i => i)
    } else {
      val out = new Array[Int](rows + 1)
      var r = 0
      var i = 0
      val maxRep = layers.maxRep
      while (i < numLevels) {
        val v = rep(i)
        if (v > maxRep || v < 0) throw ctx.corrupt(s"rep level $v above the maximum $maxRep")
        if (v == maxRep) {
          if (r >= rows) throw ctx.corrupt(s"more than $rows rows in the rep levels")
          out(r) = i; r += 1
        } else if (i == 0) throw ctx.corrupt("the first rep level does not start a row")
        i += 1
      }
      if (r != rows) throw ctx.corrupt(s"rep levels hold $r rows, the page has $rows")
      out(rows) = numLevels
      out
    }

  private def firstSlots(): Array[Int] = {
    val levels = rowLevel
    val out = new Array[Int](rows + 1)
    var s = 0
    var r = 0
    while (r < rows) {
      out(r) = s
      var i = levels(r)
      val end = levels(r + 1)
      if (defs == null) s += end - i
      else while (i < end) { if (visible(i)) s += 1; i += 1 }
      r += 1
    }
    out(rows) = s
    if (s != slots.count) throw ctx.corrupt(s"$s visible level entries but ${slots.count} value slots")
    out
  }

  /** The first level entry of row `r` (r = rows: the end); no table is built for a page without rep levels. */
  def levelOfRow(r: Int): Int =
    if (rep == null) { if (numLevels != rows) throw ctx.corrupt(s"$numLevels level entries for $rows rows"); r }
    else rowLevel(r)

  /** The first value slot of row `r` (r = rows: the slot count); a page without levels has one slot per row. */
  def slotOfRow(r: Int): Int =
    if (rep == null && defs == null) {
      if (slots.count != rows) throw ctx.corrupt(s"$rows visible level entries but ${slots.count} value slots")
      r
    } else rowSlot(r)

  /** What slots `[from, until)` take in Arrow memory (see [[Slots.bytes]]). */
  def slotBytes(from: Int, until: Int): Long = Slots.bytes(slots, from, until)

  /**
   * How many of rows `[from, until)` fit `maxBytes` of Arrow memory (see [[slotBytes]]), taken in
   * order and the first one always when `atLeastOne`; and their bytes.
   */
  def rowsWithin(from: Int, until: Int, maxBytes: Long, atLeastOne: Boolean): (Int, Long) = {
    if (maxBytes == Long.MaxValue) return (until - from, 0L)
    // Where a range's bytes are the sum of its rows' (all but bit-packed slots), a range that fits
    // whole is the answer without the walk row by row, which a scan of small values spent a tenth of its time in.
    if (Slots.additive(slots)) {
      val all = slotBytes(slotOfRow(from), slotOfRow(until))
      if (all <= maxBytes) return (until - from, all)
    }
    var used = 0L
    var r = from
    var slot = slotOfRow(from)
    var more = true
    while (more && r < until) {
      val next = slotOfRow(r + 1)
      val bytes = slotBytes(slot, next)
      if (used + bytes > maxBytes && (r > from || !atLeastOne)) more = false
      else { used += bytes; slot = next; r += 1 }
    }
    (r - from, used)
  }

  def repAt(i: Int): Int = if (rep == null) layers.maxRep else rep(i)
  def defAt(i: Int): Int = if (defs == null) 0 else defs(i)
}
