package sparklance.format.file.v2_1

import scala.collection.mutable
import sparklance.format.table.LanceField

/** What one node of the requested field tree becomes: validity, length and (lists) offsets. */
private[v2_1] final class NodeOut(val isList: Boolean) {
  var length = 0
  var nulls = 0
  val validity = new BitSink()
  val starts: IntSink = if (isList) new IntSink() else null
  /** Leaves only: the value slots, in order. */
  val segments = mutable.ArrayBuffer.empty[(Slots, Int, Int)]
}

/**
 * Turns rep/def levels into Arrow structure (LANCE-FILE-2.1-2.2.md §4.4). `path` runs from the
 * top-level field to the leaf; every node gets one NodeOut (ancestors shared by several leaves
 * take the output of the first leaf).
 */
private[v2_1] object Assembler {
  def isList(f: LanceField): Boolean = sparklance.format.table.LogicalTypes.isList(f.arrowType)

  def assemble(path: IndexedSeq[LanceField], segments: Seq[Segment], ctx: Ctx): IndexedSeq[NodeOut] = {
    val k = path.size - 1
    val listNode = path.map(isList)
    val outs = path.map(f => new NodeOut(isList(f)))
    def appendNull(j: Int): Unit = {
      val o = outs(j)
      o.validity.add(false); o.length += 1; o.nulls += 1
      if (o.isList) o.starts.add(outs(j + 1).length)
    }
    segments.foreach { seg =>
      val page = seg.page
      val layers = page.layers
      if (layers.size != path.size)
        throw ctx.corrupt(s"${layers.size} rep/def layers ${layers} for field '${path.last.name}' at depth ${path.size}")
      for (j <- 0 to k) if (layers.isList(k - j) != listNode(j))
        throw ctx.corrupt(s"rep/def layers $layers do not match the list nesting of field '${path.last.name}'")
      // the node of the list whose rep level is r (outermost list = maxRep)
      val nodeOfRep = new Array[Int](layers.maxRep + 2)
      var level = layers.maxRep
      for (j <- 0 to k if listNode(j)) { nodeOfRep(level) = j; level -= 1 }
      val nullCode = Array.tabulate(path.size)(j => layers.nullCode(k - j))
      val emptyCode = Array.tabulate(path.size)(j => layers.emptyCode(k - j))
      val maxRep = layers.maxRep
      var slots = 0
      var i = seg.levelFrom
      if (k == 0 && !listNode(0) && page.rep == null && page.defs == null) {
        // A flat column without nulls (no levels stored): one valid value per row, in bulk.
        val n = seg.levelTo - seg.levelFrom
        outs(0).validity.addMany(true, n.toLong); outs(0).length += n
        slots = n; i = seg.levelTo
      }
      while (i < seg.levelTo) {
        val r = page.repAt(i)
        val d = page.defAt(i)
        var j = if (r >= maxRep) 0 else nodeOfRep(r + 1) + 1
        var done = false
        while (!done) {
          val o = outs(j)
          if (d == nullCode(j)) {
            appendNull(j)
            var p = j + 1
            while (p <= k && !listNode(p - 1)) { appendNull(p); p += 1 }
            if (p > k) slots += 1
            done = true
          } else {
            if (j == k && d != 0) throw ctx.corrupt(s"def level $d of field '${path.last.name}' is no code of layers $layers")
            o.validity.add(true); o.length += 1
            if (o.isList) o.starts.add(outs(j + 1).length)
            if (d == emptyCode(j) || j == k) {
              if (j == k) slots += 1
              done = true
            } else j += 1
          }
        }
        i += 1
      }
      if (slots != seg.slotTo - seg.slotFrom)
        throw ctx.corrupt(s"levels of field '${path.last.name}' use $slots value slots, the page has ${seg.slotTo - seg.slotFrom}")
      outs(k).segments += ((page.slots, seg.slotFrom, seg.slotTo))
    }
    outs
  }
}
