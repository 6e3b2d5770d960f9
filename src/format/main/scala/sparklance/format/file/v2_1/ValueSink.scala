package sparklance.format.file.v2_1

import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{FixedSizeListVector, StructVector}
import scala.jdk.CollectionConverters._
import sparklance.format.UnsupportedFeatureException
import sparklance.format.proto.Encodings21Protos.CompressiveEncoding
import sparklance.format.proto.Encodings21Protos.{PackedStruct => PackedStructEncoding}

/** A growable long array. */
private[v2_1] final class LongSink(initial: Int = 64) {
  var array: Array[Long] = new Array[Long](math.max(initial, 16))
  var size: Int = 0
  def add(v: Long): Unit = {
    if (size == array.length) array = java.util.Arrays.copyOf(array, array.length * 2)
    array(size) = v; size += 1
  }
  /** Empties the sink, keeping its array for the next values. */
  def clear(): Unit = size = 0
}

/**
 * The leaf value slots of one column while a page is being collected: one slot per visible level
 * entry (LANCE-FILE-2.1-2.2.md §2), valid values and placeholders for null slots alike.
 */
private[v2_1] sealed trait ValueSink {
  def count: Int
  /** Appends value `i` of the leaf vector `v`. */
  def append(v: FieldVector, i: Int): Unit
  /** Appends values `[from, from + n)` of `v`; null positions keep whatever bytes `v` holds. */
  def appendRange(v: FieldVector, from: Int, n: Int): Unit = { var i = 0; while (i < n) { append(v, from + i); i += 1 } }
  /** Appends a slot for a null value. */
  def placeholder(): Unit
  /** Bytes of the value data collected, for page sizing. */
  def bytes: Long
  /** Drops every slot, keeping the buffers for the next page's. */
  def clear(): Unit
}

private[v2_1] object ValueSink {
  /** Slots of Arrow type Null: nothing but a count. */
  final class Nulls extends ValueSink {
    var count = 0
    def append(v: FieldVector, i: Int): Unit = count += 1
    def placeholder(): Unit = count += 1
    def bytes: Long = 0
    def clear(): Unit = count = 0
  }

  /** Fixed-width values of `width` bytes, stored little-endian as Arrow holds them. */
  class Fixed(val width: Int, val integer: Boolean = false) extends ValueSink {
    val data = new ByteSink(1024)
    var count = 0
    private val tmp = new Array[Byte](width)
    def append(v: FieldVector, i: Int): Unit = {
      v.getDataBuffer.getBytes(i.toLong * width, tmp, 0, width)
      data.append(tmp, 0, width)
      count += 1
    }
    override def appendRange(v: FieldVector, from: Int, n: Int): Unit = {
      val len = Math.multiplyExact(n, width)
      data.ensure(len)
      v.getDataBuffer.getBytes(from.toLong * width, data.array, data.size, len)
      data.size += len
      count += n
    }
    def placeholder(): Unit = { data.zeros(width); count += 1 }
    /** Appends one value given as its `width` bytes. */
    def appendBytes(b: Array[Byte]): Unit = { require(b.length == width); data.append(b, 0, width); count += 1 }
    def bytes: Long = data.size
    def clear(): Unit = { data.clear(); count = 0 }
    /** How a page declares these values. */
    def encoding: CompressiveEncoding = PageEncoding.flat(width * 8)
  }

  /**
   * A packed struct (field metadata `lance-encoding:packed`, LANCE-FILE-2.1-2.2.md §9.9): one slot
   * per struct, the children's values back to back in field order, `childBytes(k)` bytes each. It
   * has no place for a NULL child of a valid struct, which is refused naming `column`.
   */
  final class PackedStruct(val childBytes: IndexedSeq[Int], column: String) extends Fixed(childBytes.sum) {
    override def append(v: FieldVector, i: Int): Unit = v match {
      case s: StructVector if s.isNull(i) => placeholder()
      case s: StructVector =>
        var k = 0
        while (k < childBytes.size) {
          val child = s.getChildByOrdinal(k).asInstanceOf[FieldVector]
          if (child.isNull(i)) throw new UnsupportedFeatureException(
            s"Column '$column' is a packed struct (lance-encoding:packed), which cannot store a NULL field; '${child.getName}' is NULL")
          data.ensure(childBytes(k))
          child.getDataBuffer.getBytes(i.toLong * childBytes(k), data.array, data.size, childBytes(k))
          data.size += childBytes(k)
          k += 1
        }
        count += 1
      case other => throw new IllegalArgumentException(s"Packed struct '$column' got a ${other.getClass.getSimpleName}")
    }
    override def appendRange(v: FieldVector, from: Int, n: Int): Unit = { var i = 0; while (i < n) { append(v, from + i); i += 1 } }
    override def encoding: CompressiveEncoding = CompressiveEncoding.newBuilder().setPackedStruct(
      PackedStructEncoding.newBuilder().addAllBitsPerValue(childBytes.map(b => java.lang.Long.valueOf(b * 8L)).asJava)
        .setValues(PageEncoding.flat(width * 8))).build()
  }

  /** Booleans, one bit each. */
  final class Bools extends ValueSink {
    val bits = new BitSink(1024)
    def count: Int = bits.size.toInt
    def append(v: FieldVector, i: Int): Unit = bits.add(get(v, i))
    private def get(v: FieldVector, i: Int): Boolean =
      ((v.getDataBuffer.getByte(i.toLong >>> 3) >>> (i & 7)) & 1) != 0
    def placeholder(): Unit = bits.add(false)
    def bytes: Long = (bits.size + 7) / 8
    def clear(): Unit = bits.clear()
  }

  /** Strings and binaries: `offsets(i)` = start of value i in `data`, plus the end. */
  final class Variable(val large: Boolean) extends ValueSink {
    val offsets = new LongSink(1024)
    val data = new ByteSink(4096)
    offsets.add(0)
    def count: Int = offsets.size - 1
    def append(v: FieldVector, i: Int): Unit = {
      val ob = v.getOffsetBuffer
      val (s, e) =
        if (large) (ob.getLong(i.toLong * 8), ob.getLong(i.toLong * 8 + 8))
        else (ob.getInt(i.toLong * 4).toLong, ob.getInt(i.toLong * 4 + 4).toLong)
      val len = Math.toIntExact(e - s)
      data.ensure(len)
      v.getDataBuffer.getBytes(s, data.array, data.size, len)
      data.size += len
      offsets.add(data.size)
    }
    override def appendRange(v: FieldVector, from: Int, n: Int): Unit = {
      if (n == 0) return
      val ob = v.getOffsetBuffer
      def off(i: Int): Long = if (large) ob.getLong(i.toLong * 8) else ob.getInt(i.toLong * 4).toLong
      val first = off(from)
      val len = Math.toIntExact(off(from + n) - first)
      val base = data.size - first
      var i = 1
      while (i <= n) { offsets.add(base + off(from + i)); i += 1 }
      data.ensure(len)
      v.getDataBuffer.getBytes(first, data.array, data.size, len)
      data.size += len
    }
    def placeholder(): Unit = offsets.add(data.size)
    /** Appends one value given as bytes. */
    def appendBytes(b: Array[Byte]): Unit = { data.append(b, 0, b.length); offsets.add(data.size) }
    def bytes: Long = data.size + 8L * count
    def clear(): Unit = { offsets.clear(); offsets.add(0); data.clear() }
    def length(i: Int): Long = offsets.array(i + 1) - offsets.array(i)
  }

  /**
   * Fixed-size lists of fixed-width items: per slot `dim` items of `itemBits` bits (items packed
   * LSB first when itemBits = 1), plus one validity bit per item.
   */
  final class FixedSizeList(val dim: Int, val itemBits: Int) extends ValueSink {
    val data = new ByteSink(1024)
    val itemBools: BitSink = if (itemBits == 1) new BitSink(1024) else null
    /** One bit per item; null until the first null item (all valid until then). */
    var validity: BitSink = null
    var nullItems = 0L
    var count = 0
    private val rowBytes = if (itemBits == 1) 0 else Math.multiplyExact(dim, itemBits / 8)
    private val tmp = new Array[Byte](rowBytes)
    private val tmpBits = new Array[Byte](dim / 8 + 2)
    def append(v: FieldVector, i: Int): Unit = {
      val items = v.asInstanceOf[FixedSizeListVector].getDataVector
      val first = i.toLong * dim
      if (itemBits == 1) {
        var j = 0
        while (j < dim) {
          val k = first + j
          itemBools.add(((items.getDataBuffer.getByte(k >>> 3) >>> (k & 7).toInt) & 1) != 0)
          j += 1
        }
      } else {
        items.getDataBuffer.getBytes(first * (itemBits / 8), tmp, 0, rowBytes)
        data.append(tmp, 0, rowBytes)
      }
      // The row's validity bits, copied in bulk from the items' validity buffer.
      val vb = items.getValidityBuffer
      val byteFrom = first >>> 3
      val nbytes = (((first + dim + 7) >>> 3) - byteFrom).toInt
      val shift = (first & 7).toInt
      if (vb.capacity() >= byteFrom + nbytes) {
        vb.getBytes(byteFrom, tmpBits, 0, nbytes)
        var invalid = 0
        var j = 0
        while (j < dim) { if (!Bytes.getBit(tmpBits, shift + j)) invalid += 1; j += 1 }
        if (invalid > 0 && validity == null) { validity = new BitSink(1024); validity.addMany(true, count.toLong * dim) }
        nullItems += invalid
        if (validity != null) validity.appendBits(tmpBits, shift, dim)
      } else if (validity != null) validity.addMany(true, dim)
      count += 1
    }
    override def appendRange(v: FieldVector, from: Int, n: Int): Unit = {
      val items = v.asInstanceOf[FixedSizeListVector].getDataVector
      if (itemBits == 1 || items.getNullCount != 0) super.appendRange(v, from, n)
      else {
        val len = Math.multiplyExact(n, rowBytes)
        data.ensure(len)
        items.getDataBuffer.getBytes(from.toLong * rowBytes, data.array, data.size, len)
        data.size += len
        if (validity != null) validity.addMany(true, n.toLong * dim)
        count += n
      }
    }
    def placeholder(): Unit = {
      if (itemBits == 1) itemBools.addMany(false, dim) else data.zeros(rowBytes)
      if (validity != null) validity.addMany(true, dim)
      count += 1
    }
    def bytes: Long = data.size + (if (itemBools != null) (itemBools.size + 7) / 8 else 0)
    def clear(): Unit = {
      data.clear()
      if (itemBools != null) itemBools.clear()
      validity = null
      nullItems = 0
      count = 0
    }
    /** Bytes per slot in a full-zip page, validity excluded (-1: not byte aligned). */
    def slotBytes: Int = if (itemBits == 1) -1 else rowBytes
  }
}
