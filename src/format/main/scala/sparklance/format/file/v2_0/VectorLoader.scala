package sparklance.format.file.v2_0

import org.apache.arrow.memory.ArrowBuf
import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.FixedSizeListVector
import org.apache.arrow.vector.ipc.message.ArrowFieldNode
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import sparklance.format.LanceException
import sparklance.format.file.v2_0.Decoded._

/**
 * Builds Arrow buffers from decoded page segments with bulk copies and hands them to the vector
 * through `loadFieldBuffers`, the way Arrow's IPC reader fills vectors.
 */
private[v2_0] object VectorLoader {
  /** Loads a vector whose own buffers are a validity bitmap plus `data` (allocated by the caller). */
  def load(v: FieldVector, n: Int, validity: Array[Byte], data: Seq[ArrowBuf]): Unit = {
    val nulls = if (validity == null) 0 else n - Bits.countOnes(validity, 0, n).toInt
    // loadFieldBuffers builds its own bitmap when there are no nulls or only nulls.
    val bitmap = if (nulls == 0 || nulls == n) v.getAllocator.getEmpty else heapToArrow(v, validity, validity.length)
    val all = bitmap +: data
    try v.loadFieldBuffers(new ArrowFieldNode(n, nulls), all.asJava)
    finally all.foreach(_.close())
  }

  def heapToArrow(v: FieldVector, bytes: Array[Byte], length: Int): ArrowBuf = {
    val b = v.getAllocator.buffer(length.toLong)
    b.setBytes(0, bytes, 0, length.toLong)
    b
  }

  /** Allocates the buffers `fill` needs; they are released if filling fails. */
  private def withBuffers(v: FieldVector, sizes: Long*)(fill: Seq[ArrowBuf] => Unit): Seq[ArrowBuf] = {
    val bufs = ArrayBuffer.empty[ArrowBuf]
    try {
      sizes.foreach(s => bufs += v.getAllocator.buffer(s))
      fill(bufs.toSeq)
      bufs.toSeq
    } catch { case e: Throwable => bufs.foreach(_.close()); throw e }
  }

  private def validity(segs: Seq[Segment], n: Int): Array[Byte] = {
    if (segs.forall(s => s.data.validity == null && !s.data.isInstanceOf[AllNull])) return null
    val out = new Array[Byte](Bits.bytesFor(n))
    var pos = 0L
    segs.foreach { s =>
      s.data match {
        case _: AllNull =>
        case d if d.validity == null => Bits.setOnes(out, pos, s.count)
        case d => Bits.copy(d.validity, s.from, out, pos, s.count)
      }
      pos += s.count
    }
    out
  }

  /** The values of a fixed-width segment; None for an all-null one. */
  private def fixed(s: Segment): Option[FixedValues] = s.data match {
    case d: FixedValues => Some(d)
    case _: AllNull => None
    case other => throw new IllegalStateException(s"Fixed-width values expected, decoded ${other.getClass.getSimpleName}")
  }

  /** Loads a primitive, string/binary or fixed-size-list vector of n values from `segs`. */
  def loadLeaf(v: FieldVector, segs: Seq[Segment], n: Int): Unit = v match {
    case _: BitVector =>
      val bits = new Array[Byte](Bits.bytesFor(n))
      var pos = 0L
      segs.foreach { s =>
        fixed(s).foreach(d => Bits.copy(d.data, 8L * d.base + s.from, bits, pos, s.count))
        pos += s.count
      }
      load(v, n, validity(segs, n), Seq(heapToArrow(v, bits, bits.length)))

    case f: BaseFixedWidthVector =>
      val width = f.getTypeWidth
      val data = withBuffers(v, n.toLong * width) { case Seq(buf) =>
        var pos = 0L
        segs.foreach { s =>
          fixed(s) match {
            case Some(d) =>
              if (d.bits != 8 * width) throw new IllegalStateException(s"${d.bits}-bit values for a $width-byte vector")
              buf.setBytes(pos, d.data, d.base + s.from * width, s.count.toLong * width)
            case None => buf.setZero(pos, s.count.toLong * width)
          }
          pos += s.count.toLong * width
        }
      }
      load(v, n, validity(segs, n), data)

    case _: BaseVariableWidthVector => loadVariable(v, segs, n, 4)
    case _: BaseLargeVariableWidthVector => loadVariable(v, segs, n, 8)

    case l: FixedSizeListVector =>
      val d = l.getListSize
      load(v, n, validity(segs, n), Nil)
      val items = segs.map { s => s.data match {
        case f: FixedSizeLists => Segment(s.page, f.items, s.from * d, s.count * d)
        case AllNull(len, Shape.FixedSizeList(_, item)) => Segment(s.page, AllNull(len * d, item), s.from * d, s.count * d)
        case other => throw new IllegalStateException(s"Fixed-size lists expected, decoded ${other.getClass.getSimpleName}")
      } }
      loadLeaf(l.getDataVector, items, Math.multiplyExact(n, d))

    case other => throw new IllegalStateException(s"No leaf loader for ${other.getClass.getSimpleName}")
  }

  private def loadVariable(v: FieldVector, segs: Seq[Segment], n: Int, offsetWidth: Int): Unit = {
    val vars = segs.map { s => s.data match {
      case d: VariableValues => d
      case _: AllNull => VariableValues(0, null, Array(0L), Array.emptyByteArray, 0)
      case other => throw new IllegalStateException(s"Variable-width values expected, decoded ${other.getClass.getSimpleName}")
    } }
    // An all-null segment has the placeholder above: every row then ends where it starts.
    def end(s: Segment, d: VariableValues, i: Int): Long = if (d.length == 0) 0L else d.offsets(s.from + i)
    val total = segs.zip(vars).map { case (s, d) => end(s, d, s.count) - end(s, d, 0) }.sum
    if (offsetWidth == 4 && total > Int.MaxValue)
      throw new LanceException(s"Column '${v.getName}': $total bytes of values in $n rows exceed the 2 GiB a " +
        "string/binary vector can hold; read fewer rows at a time")
    val bufs = withBuffers(v, (n + 1L) * offsetWidth, total) { case Seq(offsets, data) =>
      var row = 0L
      var acc = 0L
      if (offsetWidth == 4) offsets.setInt(0, 0) else offsets.setLong(0, 0)
      segs.zip(vars).foreach { case (s, d) =>
        val first = end(s, d, 0)
        var i = 1
        while (i <= s.count) {
          val o = acc + end(s, d, i) - first
          if (offsetWidth == 4) offsets.setInt((row + i) * 4, o.toInt) else offsets.setLong((row + i) * 8, o)
          i += 1
        }
        val len = end(s, d, s.count) - first
        data.setBytes(acc, d.data, (d.base + first).toInt, len)
        acc += len
        row += s.count
      }
    }
    load(v, n, validity(segs, n), bufs)
  }

  /** Loads a list vector's own buffers: validity and offsets (already relative to its first item). */
  def loadList(v: FieldVector, n: Int, validity: Array[Byte], offsets: Array[Long], large: Boolean): Unit = {
    val width = if (large) 8 else 4
    val bufs = withBuffers(v, (n + 1L) * width) { case Seq(buf) =>
      var i = 0
      while (i <= n) {
        if (large) buf.setLong(8L * i, offsets(i)) else buf.setInt(4L * i, Math.toIntExact(offsets(i)))
        i += 1
      }
    }
    load(v, n, validity, bufs)
  }
}
