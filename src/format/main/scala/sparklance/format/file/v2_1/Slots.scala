package sparklance.format.file.v2_1

/** The leaf value slots of a page (LANCE-FILE-2.1-2.2.md §2): one per visible level entry. */
private[v2_1] sealed trait Slots { def count: Int }

private[v2_1] object Slots {
  /** `count` values of `bits` bits each (1 = LSB-first bitmap, else a multiple of 8), from `data(0)`. */
  final case class Fixed(bits: Int, data: Array[Byte], count: Int) extends Slots {
    def bytesPer: Int = bits / 8
  }

  /** Value i is `data(offsets(i) until offsets(i + 1))`. */
  final case class Variable(offsets: Array[Long], data: Array[Byte], count: Int) extends Slots {
    def length(i: Int): Long = offsets(i + 1) - offsets(i)
  }

  /**
   * Value i is value `indices(i)` of `items` (a dictionary, or the one value of a constant page):
   * variable-width values that repeat are copied only into the Arrow memory of the rows read, as
   * they are stored once, so that a page of them never holds more than its items and an index a slot.
   */
  final case class Indexed(items: Variable, indices: Array[Int], count: Int) extends Slots {
    def length(i: Int): Long = items.length(indices(i))
    /** Value i's bytes: `items.data` from `start(i)`, `length(i)` of them. */
    def start(i: Int): Long = items.offsets(indices(i))
  }

  /** Fixed-size lists of `dim` items; `validity` (null = all valid) has one bit per item. */
  final case class FixedSizeList(dim: Int, validity: Array[Byte], items: Fixed, count: Int) extends Slots

  /** Placeholders only (all-null pages): every slot is null. */
  final case class Empty(count: Int) extends Slots

  /** Concatenates slots of one kind (chunks of a page); variable-width values into `arrays`. */
  def concat(parts: collection.Seq[Slots], ctx: Ctx, arrays: PageArrays = PageArrays.Fresh): Slots = {
    if (parts.size == 1) return parts.head
    // Sums without boxing: this runs once per batch of a scan (`map(...).sum` boxed every part's count).
    var total = 0L
    parts.foreach(p => total += p.count)
    if (total > Int.MaxValue) throw ctx.corrupt(s"$total value slots in one page")
    parts.head match {
      case _ if parts.isEmpty => Empty(0)
      case f: Fixed =>
        if (f.bits % 8 == 0) {
          val sink = new ByteSink(f.bytesPer * total.toInt)
          parts.foreach {
            case p: Fixed if p.bits == f.bits => sink.append(p.data, 0, p.count * p.bytesPer)
            case p => throw ctx.corrupt(s"chunks of different kinds in one page: ${kind(p)} after ${kind(f)}")
          }
          Fixed(f.bits, sink.array, total.toInt)
        } else if (f.bits == 1) {
          val sink = new BitSink(total.toInt)
          parts.foreach {
            case p: Fixed if p.bits == 1 => sink.appendBits(p.data, 0, p.count)
            case p => throw ctx.corrupt(s"chunks of different kinds in one page: ${kind(p)} after ${kind(f)}")
          }
          Fixed(1, sink.array, total.toInt)
        } else throw ctx.unsupported(s"${f.bits}-bit values")
      case _: Variable =>
        val offsets = arrays.offsets(total.toInt + 1)
        // Sized up front: growing by doubling copied a page of strings several times (JFR).
        var bytes = 0L
        parts.foreach { case p: Variable => bytes += p.offsets(p.count) - p.offsets(0); case _ => }
        if (bytes > Int.MaxValue - 16) throw ctx.corrupt(s"$bytes bytes of values in one page")
        val data = arrays.bytes(bytes.toInt)
        offsets(0) = 0
        var n = 0
        var size = 0L
        parts.foreach {
          case p: Variable =>
            val base = p.offsets(0)
            val len = p.offsets(p.count) - base
            var i = 1
            while (i <= p.count) { offsets(n + i) = size + p.offsets(i) - base; i += 1 }
            System.arraycopy(p.data, base.toInt, data, size.toInt, len.toInt)
            size += len
            n += p.count
          case p => throw ctx.corrupt(s"chunks of different kinds in one page: ${kind(p)} after variable")
        }
        Variable(offsets, data, n)
      case l: FixedSizeList =>
        val lists = parts.map {
          case p: FixedSizeList if p.dim == l.dim => p
          case p => throw ctx.corrupt(s"chunks of different kinds in one page: ${kind(p)} after ${kind(l)}")
        }
        val items = concat(lists.map(_.items), ctx).asInstanceOf[Fixed]
        val validity =
          if (lists.forall(_.validity == null)) null
          else {
            val sink = new BitSink(items.count)
            lists.foreach { p =>
              if (p.validity == null) sink.addMany(true, p.count.toLong * p.dim) else sink.appendBits(p.validity, 0, p.count.toLong * p.dim)
            }
            sink.array
          }
        FixedSizeList(l.dim, validity, items, total.toInt)
      case _: Empty =>
        if (parts.forall(_.isInstanceOf[Empty])) Empty(total.toInt)
        else throw ctx.corrupt("chunks of different kinds in one page")
      // Repeated values joined with others are copied out.
      case _: Indexed => concat(parts.map {
        case ix: Indexed => pick(ix.items, ix.indices, 0, ix.count, ctx)
        case other => other
      }, ctx)
    }
  }

  /**
   * What slots `[from, until)` of `s` take in Arrow memory: their values' bytes, plus 8 a
   * variable-width value (its offset and validity), as [[sparklance.format.file.RowBytes]] counts.
   */
  def bytes(s: Slots, from: Int, until: Int): Long = if (until <= from) 0L else s match {
    case v: Variable => v.offsets(until) - v.offsets(from) + 8L * (until - from)
    case ix: Indexed => var sum = 8L * (until - from); var i = from; while (i < until) { sum += ix.length(i); i += 1 }; sum
    case f: Fixed => if (f.bits == 1) (until - from + 7L) / 8 else f.bytesPer.toLong * (until - from)
    case l: FixedSizeList => (l.dim.toLong * l.items.bits * (until - from) + 7) / 8
    case _: Empty => 0L
  }

  /** Whether [[bytes]] of a range of `s` is the sum of its slots' bytes (whole bytes per slot: not bit-packed). */
  def additive(s: Slots): Boolean = s match {
    case f: Fixed => f.bits % 8 == 0
    case l: FixedSizeList => l.dim.toLong * l.items.bits % 8 == 0
    case _: Variable | _: Indexed | _: Empty => true
  }

  /**
   * How many of slots `[from, until)` of `s` fit `maxBytes` (see [[bytes]]), taken in order and the
   * first one always when `atLeastOne`; and their bytes.
   */
  def fitting(s: Slots, from: Int, until: Int, maxBytes: Long, atLeastOne: Boolean): (Int, Long) = {
    if (maxBytes == Long.MaxValue) return (until - from, bytes(s, from, until))
    // Mostly all fit: then the sum is one subtraction, not a loop over the slots.
    if (additive(s)) {
      val all = bytes(s, from, until)
      if (all <= maxBytes) return (until - from, all)
    }
    var used = 0L
    var i = from
    var more = true
    while (more && i < until) {
      val b = bytes(s, i, i + 1)
      if (used + b > maxBytes && (i > from || !atLeastOne)) more = false
      else { used += b; i += 1 }
    }
    (i - from, used)
  }

  /** Where variable-width value `slot` of `s` lies; None for slots of fixed-width values. */
  def bytesOf(s: Slots, slot: Int): Option[Slice] = s match {
    case v: Variable => Some(Slice(v.data, v.offsets(slot).toInt, v.length(slot).toInt))
    case ix: Indexed => Some(Slice(ix.items.data, ix.start(slot).toInt, ix.length(slot).toInt))
    case _ => None
  }

  def kind(s: Slots): String = s match {
    case f: Fixed => s"${f.bits}-bit values"
    case _: Variable | _: Indexed => "variable-width values"
    case l: FixedSizeList => s"fixed-size lists of ${l.dim}"
    case _: Empty => "null placeholders"
  }

  /** `count` copies of one value (a variable-width one stored once). */
  def repeat(one: Slots, count: Int, ctx: Ctx): Slots = one match {
    case f: Fixed if f.bits == 1 =>
      val out = new Array[Byte](Bytes.bytesForBits(count))
      if (Bytes.getBit(f.data, 0)) { var i = 0; while (i < count) { Bytes.setBit(out, i); i += 1 } }
      Fixed(1, out, count)
    case f: Fixed =>
      val w = f.bytesPer
      val out = new Array[Byte](Math.multiplyExact(w, count))
      var i = 0
      while (i < count) { System.arraycopy(f.data, 0, out, i * w, w); i += 1 }
      Fixed(f.bits, out, count)
    case v: Variable => Indexed(v, new Array[Int](count), count)
    case other => throw ctx.unsupported(s"a constant of ${kind(other)}")
  }

  /** The slots `idx(from until to)` of `s`, in that order (a page's or a chunk's values of some rows). */
  def pick(s: Slots, idx: Array[Int], from: Int, to: Int, ctx: Ctx): Slots = {
    val n = to - from
    var i = from
    while (i < to) {
      if (idx(i) < 0 || idx(i) >= s.count) throw ctx.corrupt(s"value slot ${idx(i)} of ${s.count} was asked for")
      i += 1
    }
    s match {
      case f: Fixed if f.bits == 1 =>
        val out = new Array[Byte](Bytes.bytesForBits(n))
        i = 0
        while (i < n) { if (Bytes.getBit(f.data, idx(from + i))) Bytes.setBit(out, i); i += 1 }
        Fixed(1, out, n)
      case f: Fixed if f.bits % 8 == 0 =>
        val w = f.bytesPer
        val out = new Array[Byte](Math.multiplyExact(n, w))
        i = 0
        while (i < n) { System.arraycopy(f.data, idx(from + i) * w, out, i * w, w); i += 1 }
        Fixed(f.bits, out, n)
      case v: Variable =>
        val offsets = new Array[Long](n + 1)
        i = 0
        while (i < n) { val k = idx(from + i); offsets(i + 1) = offsets(i) + v.offsets(k + 1) - v.offsets(k); i += 1 }
        val out = new Array[Byte](Math.toIntExact(offsets(n)))
        i = 0
        while (i < n) {
          val k = idx(from + i)
          System.arraycopy(v.data, v.offsets(k).toInt, out, offsets(i).toInt, (offsets(i + 1) - offsets(i)).toInt)
          i += 1
        }
        Variable(offsets, out, n)
      case l: FixedSizeList =>
        val items = new Array[Int](Math.multiplyExact(n, l.dim))
        i = 0
        while (i < items.length) { items(i) = idx(from + i / l.dim) * l.dim + i % l.dim; i += 1 }
        val validity =
          if (l.validity == null) null
          else { val out = new Array[Byte](Bytes.bytesForBits(items.length)); i = 0
            while (i < items.length) { if (Bytes.getBit(l.validity, items(i))) Bytes.setBit(out, i); i += 1 }; out }
        pick(l.items, items, 0, items.length, ctx) match {
          case f: Fixed => FixedSizeList(l.dim, validity, f, n)
          case other => throw ctx.corrupt(s"fixed-size list items of ${kind(other)}")
        }
      case ix: Indexed => Indexed(ix.items, Array.tabulate(n)(i => ix.indices(idx(from + i))), n)
      case _: Empty => Empty(n)
      case other => throw ctx.unsupported(s"picking values of ${kind(other)}")
    }
  }

  /** Dictionary decoding: slot i = items(indices(i)) (variable-width items are not copied, see [[Indexed]]). */
  def gather(items: Slots, indices: Fixed, ctx: Ctx): Slots = {
    val n = indices.count
    val w = indices.bytesPer
    if (indices.bits % 8 != 0 || w < 1 || w > 8) throw ctx.corrupt(s"dictionary indices of ${indices.bits} bits")
    def index(i: Int): Int = {
      val k = Bytes.uN(indices.data, i * w, w)
      if (k < 0 || k >= items.count) {
        // Null slots may carry any index; those are never read, so clamp instead of failing.
        0
      } else k.toInt
    }
    items match {
      case f: Fixed if f.bits % 8 == 0 =>
        val bw = f.bytesPer
        val out = new Array[Byte](Math.multiplyExact(bw, n))
        if (items.count > 0) { var i = 0; while (i < n) { System.arraycopy(f.data, index(i) * bw, out, i * bw, bw); i += 1 } }
        Fixed(f.bits, out, n)
      // Without items every slot is a null, whose value is empty.
      case _: Variable if items.count == 0 => Variable(new Array[Long](n + 1), Array.emptyByteArray, n)
      case v: Variable => Indexed(v, Array.tabulate(n)(index), n)
      case other => throw ctx.unsupported(s"a dictionary of ${kind(other)}")
    }
  }
}
