package sparklance.format.file.v2_0

import scala.jdk.CollectionConverters._
import sparklance.format.Primitives
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.proto.Encodings20Protos.{ArrayEncoding, Nullable}
import sparklance.format.proto.Encodings20Protos.ArrayEncoding.ArrayEncodingCase._
import sparklance.format.file.v2_0.Decoded._

/**
 * Decodes one page's `ArrayEncoding` tree (LANCE-FILE-2.0.md §2, §6.1) into a `Decoded` of the
 * expected shape. Every size is checked against the buffers before it is used.
 */
private[v2_0] final class PageDecoder(buffers: PageBuffers, path: String, where: String) {
  private def corrupt(detail: String) = new CorruptFileException(path, s"$where: $detail")

  def decode(e: ArrayEncoding, n: Int, shape: Shape): Decoded = (e.getArrayEncodingCase, shape) match {
    case (DICTIONARY, Shape.DictionaryField(indexBits, values)) => dictionaryField(e, n, indexBits, values)
    // pylance writes only dictionary pages for such fields; any other page holds the values themselves.
    case (_, Shape.DictionaryField(_, values)) => decode(e, n, values)
    case (FLAT, Shape.Fixed(bits)) => flat(e, n, bits)
    case (NULLABLE, _) => nullable(e.getNullable, n, shape)
    case (FIXED_SIZE_LIST, s: Shape.FixedSizeList) =>
      val f = e.getFixedSizeList
      if (f.getDimension != s.dimension)
        throw corrupt(s"fixed_size_list of dimension ${f.getDimension}, the field has ${s.dimension}")
      FixedSizeLists(n, null, s.dimension, decode(f.getItems, Math.multiplyExact(n, s.dimension), s.item))
    case (BINARY, Shape.Variable) => binary(e, n)
    case (DICTIONARY, Shape.Variable) => dictionary(e, n)
    case (FIXED_SIZE_BINARY, Shape.Variable) => fixedSizeBinary(e, n)
    case (FSST, Shape.Variable) => decode(e.getFsst.getBinary, n, shape) match {
      case v: VariableValues => Fsst.decode(v, e.getFsst.getSymbolTable.toByteArray, path, where)
      case allNull => allNull
    }
    case (LIST, Shape.ListOffsets) =>
      val l = e.getList
      val (validity, ends) = endOffsets(l.getOffsets, n, l.getNullOffsetAdjustment, "list offsets")
      if (ends(n) > l.getNumItems) throw corrupt(s"list offsets reach item ${ends(n)}, but the page has ${l.getNumItems} items")
      ListOffsets(n, validity, ends, l.getNumItems)
    // Rows of fixed-width children, packed after one another (pylance writes a 2.0 blob column's
    // descriptors so: position and size, two u64); read as one fixed-width value per row.
    case (PACKED_STRUCT, Shape.Fixed(bits)) =>
      val p = e.getPackedStruct
      val widths = p.getInnerList.asScala.map(innerFlatBits(_, -1))
      if (widths.contains(-1) || widths.sum != bits) throw corrupt(s"a packed struct of ${widths.mkString("+")} bits, $bits expected")
      val s = sized(buffers(p.getBuffer), n.toLong * (bits / 8), s"$n packed structs of $bits bits")
      FixedValues(n, null, bits, s.array, s.offset)
    case (BITPACKED, Shape.Fixed(bits)) =>
      val b = e.getBitpacked
      val w = packedWidth(b.getCompressedBitsPerValue, b.getUncompressedBitsPerValue, bits)
      val src = sized(buffers(b.getBuffer), BitUnpacking.contiguousBytes(n, w), "bitpacked values")
      FixedValues(n, null, bits, BitUnpacking.contiguous(src, n, w, bits, b.getSigned), 0)
    case (BITPACKED_FOR_NON_NEG, Shape.Fixed(bits)) =>
      val b = e.getBitpackedForNonNeg
      val w = packedWidth(b.getCompressedBitsPerValue, b.getUncompressedBitsPerValue, bits)
      val src = sized(buffers(b.getBuffer), BitUnpacking.fastLanesBytes(n, w), "bitpacked_for_non_neg values")
      FixedValues(n, null, bits, BitUnpacking.fastLanes(src, n, w, bits), 0)
    case (FLAT | FIXED_SIZE_LIST | BINARY | DICTIONARY | FIXED_SIZE_BINARY | FSST | LIST | STRUCT | BITPACKED |
        BITPACKED_FOR_NON_NEG, _) =>
      throw corrupt(s"a ${name(e)} encoding cannot hold the values of this field (expected $shape)")
    case (ARRAYENCODING_NOT_SET, _) => throw corrupt("an ArrayEncoding has no variant set")
    case _ => throw new UnsupportedFeatureException(
      s"$where of $path uses the Lance 2.0 encoding '${name(e)}', which sparklance does not read")
  }

  private def name(e: ArrayEncoding): String = e.getArrayEncodingCase.name.toLowerCase

  /** Values that must be stored (offsets, indices), not an all-null placeholder. */
  private def stored(d: Decoded, what: String): FixedValues = d match {
    case f: FixedValues => f
    case _ => throw corrupt(s"$what are all_nulls")
  }

  private def sized(s: ByteSlice, need: Long, what: String): ByteSlice =
    if (s.length < need) throw corrupt(s"$what need $need bytes, but the buffer holds ${s.length}") else s

  private def flatBuffer(e: ArrayEncoding, bytes: Long, what: String): ByteSlice = {
    val f = e.getFlat
    if (!f.hasBuffer) throw corrupt("a flat encoding has no buffer")
    val raw = buffers(f.getBuffer)
    // Bitmaps are never compressed; the reference decoder ignores the field for them.
    val data = if (f.hasCompression && f.getBitsPerValue != 1) Codecs.decompress(f.getCompression.getScheme, raw, path, where) else raw
    sized(data, bytes, what)
  }

  private def flat(e: ArrayEncoding, n: Int, bits: Int): Decoded = {
    val width = e.getFlat.getBitsPerValue
    if (width != bits) {
      if (width != 1 && width % 8 != 0)
        throw new UnsupportedFeatureException(s"$where of $path uses flat with $width bits per value, which is not a multiple of 8")
      throw corrupt(s"flat values of $width bits cannot hold values of $bits bits")
    }
    val bytes = if (bits == 1) (n + 7L) / 8 else n.toLong * (bits / 8)
    val s = flatBuffer(e, bytes, s"$n values of $bits bits")
    FixedValues(n, null, bits, s.array, s.offset)
  }

  private def nullable(nl: Nullable, n: Int, shape: Shape): Decoded = nl.getNullabilityCase match {
    case Nullable.NullabilityCase.NO_NULLS => decode(nl.getNoNulls.getValues, n, shape)
    case Nullable.NullabilityCase.SOME_NULLS =>
      decode(nl.getSomeNulls.getValidity, n, Shape.Fixed(1)) match {
        case v: FixedValues =>
          val bits = java.util.Arrays.copyOfRange(v.data, v.base, v.base + Bits.bytesFor(n))
          decode(nl.getSomeNulls.getValues, n, shape).restrictedTo(bits)
        case _ => AllNull(n, shape)
      }
    case Nullable.NullabilityCase.ALL_NULLS => AllNull(n, shape)
    case _ => throw corrupt("a nullable encoding has no variant set")
  }

  private def packedWidth(compressed: Long, uncompressed: Long, bits: Int): Int = {
    if (uncompressed != bits) throw corrupt(s"bit-packed values unpack to $uncompressed bits, the field has $bits")
    if (compressed < 0 || compressed > bits) throw corrupt(s"bit-packed width $compressed exceeds $bits bits")
    compressed.toInt
  }

  /**
   * n u64 end offsets with nulls stored as end + adj (binary indices and list offsets): the
   * validity (null if all valid) and the n + 1 page-relative offsets starting at 0.
   */
  private def endOffsets(enc: ArrayEncoding, n: Int, adj: Long, what: String): (Array[Byte], Array[Long]) = {
    val idx = stored(decode(enc, n, Shape.Fixed(64)), what)
    if (n > 0 && adj <= 0) throw corrupt(s"$what have a null adjustment of $adj")
    val (validity, ends) = PageDecoder.endOffsets(idx.data, idx.base, n, adj, 0L, 0)(detail => corrupt(s"$what$detail"))
    (Decoded.and(validity, idx.validity, n), ends)
  }

  private def binary(e: ArrayEncoding, n: Int): Decoded = {
    val b = e.getBinary
    val (validity, offsets) = endOffsets(b.getIndices, n, b.getNullAdjustment, "string end offsets")
    decode(b.getBytes, Math.toIntExact(offsets(n)), Shape.Fixed(8)) match {
      case bytes: FixedValues => VariableValues(n, validity, offsets, bytes.data, bytes.base)
      case _ if offsets(n) == 0 => VariableValues(n, validity, offsets, Array.emptyByteArray, 0)
      case _ => throw corrupt("string bytes are all_nulls")
    }
  }

  /** The width of the flat under `nn(...)`/`sn(...)` wrappers, or `default` if there is none. */
  private def innerFlatBits(e: ArrayEncoding, default: Int): Int = e.getArrayEncodingCase match {
    case FLAT => e.getFlat.getBitsPerValue.toInt
    case NULLABLE if e.getNullable.hasNoNulls => innerFlatBits(e.getNullable.getNoNulls.getValues, default)
    case NULLABLE if e.getNullable.hasSomeNulls => innerFlatBits(e.getNullable.getSomeNulls.getValues, default)
    case _ => default
  }

  /**
   * A string dictionary page (§2.6a) of a plain string field: index 0 is null, k >= 1 is item k - 1.
   * The strings are materialised so the page is cached and copied like a plain binary page.
   */
  private def dictionary(e: ArrayEncoding, n: Int): Decoded = {
    val d = e.getDictionary
    val numItems = dictionaryItems(e)
    val bits = innerFlatBits(d.getIndices, 8)
    val (items, idx) = (decode(d.getItems, numItems, Shape.Variable), decode(d.getIndices, n, Shape.Fixed(bits))) match {
      case (items: VariableValues, idx: FixedValues) => (items, idx)
      case _ => return AllNull(n, Shape.Variable) // no index or no item is present
    }
    gather(items, n, i => {
      val k = indexAt(idx, i)
      if (k > numItems) throw corrupt(s"dictionary index $k at row $i, but there are $numItems items")
      k - 1
    })
  }

  /**
   * A dictionary page of a dictionary field (pylance's Arrow dictionary columns): indices of the
   * field's index type, row i being item `index(i)`; nulls are null items (or null indices).
   */
  private def dictionaryField(e: ArrayEncoding, n: Int, indexBits: Int, values: Shape): Decoded = {
    val d = e.getDictionary
    val numItems = dictionaryItems(e)
    val bits = innerFlatBits(d.getIndices, indexBits)
    val idx = decode(d.getIndices, n, Shape.Fixed(bits)) match {
      case f: FixedValues => f
      case _ => return AllNull(n, values)
    }
    val items = decode(d.getItems, numItems, values)
    if (items.isInstanceOf[AllNull]) return AllNull(n, values)
    gather(items, n, i => {
      val k = indexAt(idx, i)
      if (k >= numItems && k >= 0) throw corrupt(s"dictionary index $k at row $i, but there are $numItems items")
      k
    })
  }

  private def dictionaryItems(e: ArrayEncoding): Int = {
    val d = e.getDictionary
    if (d.getNumDictionaryItems < 0) throw corrupt(s"dictionary claims ${d.getNumDictionaryItems & 0xffffffffL} items")
    d.getNumDictionaryItems
  }

  /** Index i of a dictionary page (unsigned, little-endian), -1 where the index itself is null. */
  private def indexAt(idx: FixedValues, i: Int): Long =
    if (idx.validity != null && !Bits.get(idx.validity, i)) -1L
    else idx.bits match {
      case 8 | 16 | 32 | 64 =>
        var k = 0L
        var b = idx.bits / 8 - 1
        while (b >= 0) { k = k << 8 | (idx.data(idx.base + i * (idx.bits / 8) + b) & 0xffL); b -= 1 }
        if (k < 0) throw corrupt(s"dictionary index ${java.lang.Long.toUnsignedString(k)} at row $i")
        k
      case other => throw corrupt(s"dictionary indices of $other bits")
    }

  /** The n values whose row i is item `item(i)` of `items` (-1: a null row), materialised. */
  private def gather(items: Decoded, n: Int, item: Int => Long): Decoded = {
    val ks = new Array[Int](n)
    var validity: Array[Byte] = null
    var i = 0
    while (i < n) {
      val k = item(i)
      val present = k >= 0 && (items.validity == null || Bits.get(items.validity, k))
      if (!present) {
        if (validity == null) { validity = new Array[Byte](Bits.bytesFor(n)); Bits.setOnes(validity, 0, n) }
        validity(i >>> 3) = (validity(i >>> 3) & ~(1 << (i & 7))).toByte
        ks(i) = -1
      } else ks(i) = k.toInt
      i += 1
    }
    items match {
      case v: VariableValues =>
        val offsets = new Array[Long](n + 1)
        i = 0
        while (i < n) {
          val k = ks(i)
          offsets(i + 1) = offsets(i) + (if (k < 0) 0L else v.offsets(k + 1) - v.offsets(k))
          i += 1
        }
        val data = new Array[Byte](Math.toIntExact(offsets(n)))
        i = 0
        while (i < n) {
          val len = (offsets(i + 1) - offsets(i)).toInt
          if (len > 0) System.arraycopy(v.data, v.base + v.offsets(ks(i)).toInt, data, offsets(i).toInt, len)
          i += 1
        }
        VariableValues(n, validity, offsets, data, 0)
      case f: FixedValues if f.bits % 8 == 0 =>
        val w = f.bits / 8
        val data = new Array[Byte](Math.multiplyExact(n, w))
        i = 0
        while (i < n) {
          if (ks(i) >= 0) System.arraycopy(f.data, f.base + ks(i) * w, data, i * w, w)
          i += 1
        }
        FixedValues(n, validity, f.bits, data, 0)
      case other => throw new UnsupportedFeatureException(
        s"$where of $path holds a dictionary of ${other.getClass.getSimpleName}, which sparklance does not read")
    }
  }

  /** `fixed_size_binary{bytes, byte_width}` (§2.13) on a string/binary field: n values of w bytes. */
  private def fixedSizeBinary(e: ArrayEncoding, n: Int): Decoded = {
    val f = e.getFixedSizeBinary
    val w = f.getByteWidth
    if (w < 0) throw corrupt(s"fixed_size_binary of width ${w & 0xffffffffL}")
    val total = Math.multiplyExact(n, w)
    val bits = innerFlatBits(f.getBytes, 8)
    val bytes = if (bits == 8) decode(f.getBytes, total, Shape.Fixed(8)) else decode(f.getBytes, n, Shape.Fixed(8 * w))
    bytes match {
      // Byte-wise validity (flat8 under sn) cannot express row nulls; only a row-wise one can.
      case b: FixedValues => VariableValues(n, if (bits == 8) null else b.validity, Primitives.longs(n + 1)(_.toLong * w), b.data, b.base)
      case _ => AllNull(n, Shape.Variable)
    }
  }
}

private[v2_0] object PageDecoder {
  /**
   * An end offset stored as `v` (a null's end plus `adj`), without the adjustment: `v % adj`, with
   * no division where `v < 2·adj`, as Lance writes them (a division per row was most of the
   * rebuild of a 2.0 string page's offsets). `v >= 0`, `adj > 0`.
   */
  def unadjusted(v: Long, adj: Long): Long = if (v < adj) v else if (v - adj < adj) v - adj else v % adj

  /**
   * The `n` u64 end offsets stored at `raw(at)` on, nulls as end + `adj` (`adj > 0`): the validity
   * (null if all valid) and the n + 1 offsets from `start` (the end before the first: 0 at a
   * page's start), so starting at 0. `firstRow` numbers the rows in errors, made by `corrupt`.
   */
  def endOffsets(raw: Array[Byte], at: Int, n: Int, adj: Long, start: Long, firstRow: Long)(
      corrupt: String => Exception): (Array[Byte], Array[Long]) = {
    val ends = new Array[Long](n + 1)
    var validity: Array[Byte] = null
    var i = 0
    while (i < n) {
      val v = LittleEndian.getLong(raw, at + 8 * i)
      if (v < 0) throw corrupt(s": value ${java.lang.Long.toUnsignedString(v)} at row ${firstRow + i} is out of range")
      if (v >= adj) {
        if (validity == null) {
          validity = new Array[Byte](Bits.bytesFor(n))
          Bits.setOnes(validity, 0, n)
        }
        validity(i >>> 3) = (validity(i >>> 3) & ~(1 << (i & 7))).toByte
      }
      ends(i + 1) = unadjusted(v, adj) - start
      if (ends(i + 1) < ends(i)) throw corrupt(s" decrease at row ${firstRow + i} (${start + ends(i)} then ${start + ends(i + 1)})")
      i += 1
    }
    (validity, ends)
  }
}
