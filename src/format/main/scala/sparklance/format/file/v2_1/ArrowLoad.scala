package sparklance.format.file.v2_1

import org.apache.arrow.memory.ArrowBuf
import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{FixedSizeListVector, LargeListVector, StructVector}
import org.apache.arrow.vector.ipc.message.ArrowFieldNode
import org.apache.arrow.vector.types.pojo.ArrowType
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import sparklance.format.LanceException

/** Builds Arrow buffers from assembled nodes with bulk copies and loads them into vectors. */
private[v2_1] object ArrowLoad {
  private def load(v: FieldVector, n: Int, nulls: Int, validity: Array[Byte], data: Seq[ArrowBuf]): Unit = {
    val bitmap =
      if (nulls == 0 || nulls == n || validity == null) v.getAllocator.getEmpty
      else { val b = v.getAllocator.buffer(Bytes.bytesForBits(n).toLong); b.setBytes(0, validity, 0, Bytes.bytesForBits(n).toLong); b }
    val all = bitmap +: data
    try v.loadFieldBuffers(new ArrowFieldNode(n, nulls), all.asJava)
    finally all.foreach(_.close())
  }

  /**
   * New buffers of `sizes` bytes, filled by `fill`, which must write every byte: they are not
   * zeroed first, which for a page of vectors was a second pass over all its bytes.
   */
  private def buffers(v: FieldVector, sizes: Long*)(fill: Seq[ArrowBuf] => Unit): Seq[ArrowBuf] = {
    val bufs = ArrayBuffer.empty[ArrowBuf]
    try {
      sizes.foreach { s => bufs += v.getAllocator.buffer(math.max(s, 1L)) }
      fill(bufs.toSeq)
      bufs.toSeq
    } catch { case e: Throwable => bufs.foreach(_.close()); throw e }
  }

  def struct(v: StructVector, o: NodeOut): Unit = load(v, o.length, o.nulls, o.validity.array, Nil)

  /**
   * Loads `n` fixed-size lists without nulls whose items (`dataBytes` of them, all valid) `fill`
   * writes into the items' data buffer; false, with the vector left empty, if `fill` says it cannot.
   */
  def fixedSizeListOf(v: FixedSizeListVector, n: Int, dataBytes: Long)(fill: ArrowBuf => Boolean): Boolean = {
    val data = v.getDataVector.getAllocator.buffer(math.max(dataBytes, 1L))
    val filled = try fill(data) catch { case e: Throwable => data.close(); throw e }
    if (!filled) { data.close(); false }
    else {
      load(v, n, 0, null, Nil)
      load(v.getDataVector, Math.multiplyExact(n, v.getListSize), 0, null, Seq(data))
      true
    }
  }

  def list(v: FieldVector, o: NodeOut, childLength: Int): Unit = {
    val large = v.isInstanceOf[LargeListVector]
    val n = o.length
    val w = if (large) 8 else 4
    val bufs = buffers(v, (n + 1L) * w) { case Seq(b) =>
      var i = 0
      while (i <= n) {
        val off = if (i < n) o.starts.array(i) else childLength
        if (large) b.setLong(8L * i, off) else b.setInt(4L * i, off)
        i += 1
      }
    }
    load(v, n, o.nulls, o.validity.array, bufs)
  }

  /** Loads a leaf vector from its node: validity from the levels, values from the slots. */
  def leaf(v: FieldVector, o: NodeOut, ctx: Ctx): Unit = {
    val n = o.length
    def wrong(s: Slots) = ctx.corrupt(s"${Slots.kind(s)} for a column of Arrow type ${v.getField.getType}")
    v match {
      case _: NullVector => v.asInstanceOf[NullVector].setValueCount(n)
      case _: BitVector =>
        val bits = new BitSink(n)
        o.segments.foreach {
          case (f: Slots.Fixed, a, b) if f.bits == 1 => bits.appendBits(f.data, a, b - a)
          case (e: Slots.Empty, a, b) => bits.addMany(false, b - a)
          case (s, _, _) => throw wrong(s)
        }
        val data = buffers(v, Bytes.bytesForBits(n).toLong) { case Seq(b) => b.setBytes(0, bits.array, 0, Bytes.bytesForBits(n).toLong) }
        load(v, n, o.nulls, o.validity.array, data)
      case f: BaseFixedWidthVector =>
        val w = f.getTypeWidth
        val data = buffers(v, n.toLong * w) { case Seq(buf) =>
          var pos = 0L
          o.segments.foreach {
            case (s: Slots.Fixed, a, b) if s.bits == 8 * w => buf.setBytes(pos, s.data, a * w, (b - a).toLong * w); pos += (b - a).toLong * w
            case (_: Slots.Empty, a, b) => buf.setZero(pos, (b - a).toLong * w); pos += (b - a).toLong * w
            case (s, _, _) => throw wrong(s)
          }
          if (pos < n.toLong * w) buf.setZero(pos, n.toLong * w - pos)
        }
        load(v, n, o.nulls, o.validity.array, data)
      case _: BaseVariableWidthVector => variable(v, o, 4, ctx)
      case _: BaseLargeVariableWidthVector => variable(v, o, 8, ctx)
      case l: FixedSizeListVector =>
        val dim = l.getListSize
        load(v, n, o.nulls, o.validity.array, Nil)
        val items = new NodeOut(false)
        // Items are mostly all valid (embeddings): then no item validity is built at all.
        val nullItems = o.segments.exists {
          case (s: Slots.FixedSizeList, _, _) => s.validity != null
          case (_: Slots.Empty, _, _) => true
          case _ => false
        }
        o.segments.foreach {
          case (s: Slots.FixedSizeList, a, b) if s.dim == dim =>
            val cnt = (b - a) * dim
            if (s.validity == null) { if (nullItems) items.validity.addMany(true, cnt.toLong) }
            else {
              items.validity.appendBits(s.validity, a.toLong * dim, cnt.toLong)
              var i = 0L
              while (i < cnt) { if (!Bytes.getBit(s.validity, a.toLong * dim + i)) items.nulls += 1; i += 1 }
            }
            items.length += cnt
            items.segments += ((s.items, a * dim, b * dim))
          case (e: Slots.Empty, a, b) =>
            val cnt = (b - a) * dim
            items.validity.addMany(false, cnt.toLong); items.nulls += cnt; items.length += cnt
            items.segments += ((Slots.Empty(e.count * dim), a * dim, b * dim))
          case (s, _, _) => throw wrong(s)
        }
        leaf(l.getDataVector, items, ctx)
      case other => throw ctx.unsupported(s"columns of Arrow type ${other.getField.getType}")
    }
  }

  private def variable(v: FieldVector, o: NodeOut, width: Int, ctx: Ctx): Unit = {
    val n = o.length
    var total = 0L
    o.segments.foreach {
      case (s: Slots.Variable, a, b) => total += s.offsets(b) - s.offsets(a)
      case (s: Slots.Indexed, a, b) => var i = a; while (i < b) { total += s.length(i); i += 1 }
      case (_: Slots.Empty, _, _) =>
      case (s, _, _) => throw ctx.corrupt(s"${Slots.kind(s)} for a string/binary column")
    }
    if (width == 4 && total > Int.MaxValue)
      throw new LanceException(s"Column '${v.getName}': $total bytes of values in $n rows exceed the 2 GiB a " +
        "string/binary vector can hold; read fewer rows at a time")
    val bufs = buffers(v, (n + 1L) * width, total) { case Seq(offsets, data) =>
      if (width == 4) offsets.setInt(0, 0) else offsets.setLong(0, 0)
      var row = 0L
      var acc = 0L
      def end(): Unit = { if (width == 4) offsets.setInt((row + 1) * 4, acc.toInt) else offsets.setLong((row + 1) * 8, acc); row += 1 }
      o.segments.foreach {
        case (s: Slots.Variable, a, b) =>
          val first = s.offsets(a)
          var i = a
          while (i < b) {
            val to = acc + s.offsets(i + 1) - first
            if (width == 4) offsets.setInt((row + 1) * 4, to.toInt) else offsets.setLong((row + 1) * 8, to)
            row += 1
            i += 1
          }
          val len = s.offsets(b) - first
          data.setBytes(acc, s.data, first.toInt, len)
          acc += len
        case (s: Slots.Indexed, a, b) =>
          var i = a
          while (i < b) {
            val len = s.length(i)
            data.setBytes(acc, s.items.data, s.start(i).toInt, len)
            acc += len
            end()
            i += 1
          }
        case (_, a, b) =>
          var i = a
          while (i < b) { end(); i += 1 }
      }
    }
    load(v, n, o.nulls, o.validity.array, bufs)
  }

  /** The leaf shape constant pages need, from the Arrow type. */
  def kindOf(t: ArrowType): LeafKind = t match {
    case _: ArrowType.Bool => LeafKind(1, 0)
    case i: ArrowType.Int => LeafKind(i.getBitWidth, 0)
    case f: ArrowType.FloatingPoint => LeafKind(f.getPrecision match {
      case org.apache.arrow.vector.types.FloatingPointPrecision.HALF => 16
      case org.apache.arrow.vector.types.FloatingPointPrecision.SINGLE => 32
      case _ => 64
    }, 0)
    case d: ArrowType.Date => LeafKind(if (d.getUnit == org.apache.arrow.vector.types.DateUnit.DAY) 32 else 64, 0)
    case t: ArrowType.Time => LeafKind(t.getBitWidth, 0)
    case _: ArrowType.Timestamp | _: ArrowType.Duration => LeafKind(64, 0)
    case d: ArrowType.Decimal => LeafKind(d.getBitWidth, 0)
    case f: ArrowType.FixedSizeBinary => LeafKind(f.getByteWidth * 8, 0)
    case _: ArrowType.Utf8 | _: ArrowType.Binary => LeafKind.Variable32
    case _: ArrowType.LargeUtf8 | _: ArrowType.LargeBinary => LeafKind.Variable64
    case _ => LeafKind(-1, 0)
  }
}
