package sparklance.format.file.v2_1

import org.apache.arrow.vector.FieldVector
import org.apache.arrow.vector.complex.{LargeListVector, ListVector, StructVector}
import org.apache.arrow.vector.types.pojo.ArrowType
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import sparklance.format.Primitives
import sparklance.format.file.{ContainerWriter, DictionaryLimit, DictionaryValues, FixedWidth, TypedAny}
import sparklance.format.proto.Encodings21Protos.RepDefLayer
import sparklance.format.proto.Encodings21Protos.RepDefLayer._
import sparklance.format.proto.File2Protos.ColumnMetadata
import sparklance.format.table.LanceField

/**
 * Writes one leaf column of a 2.1/2.2 file: shreds the rows of its top-level vector into rep
 * levels, def codes and value slots (LANCE-FILE-2.1-2.2.md §4), and encodes the collected rows as
 * pages on `flush`. `path` = the fields from the top-level field down to the leaf; `ordinals(k)` =
 * the position of `path(k)` among its parent's children. `chunkScratch` holds a mini-block page's
 * chunks until `flush` has written them; the columns of one file share it.
 */
private[v2_1] final class LeafColumnWriter(path: IndexedSeq[LanceField], ordinals: IndexedSeq[Int], minor: Int,
    chunkScratch: ByteSink) extends ColumnWriter21 {
  private val depth = path.size
  private val leaf = path.last
  private val isList: Array[Boolean] = path.map(f => LeafColumnWriter.isList(f.arrowType)).toArray
  private val maxRep = isList.count(identity)
  /** Rep level of the list at level k: the outermost list has maxRep, the innermost 1. */
  private val listRep: Array[Int] = Array.tabulate(depth)(k => (k until depth).count(isList(_)))
  /** Nulls at levels below the deepest list take a value slot; those at or above it do not. */
  private val deepestList = isList.lastIndexOf(true)
  private val name = path.map(_.name).mkString(".")
  /** The index type of a dictionary field (top-level only: nested ones are not mapped, see LanceSchema). */
  private val dictionaryIndex: Option[ArrowType.Int] = if (depth == 1) leaf.dictionary else None
  /** While a dictionary field flushes: its distinct values, and each slot's value id (-1: null); the slot of a row is its index. */
  private var dictionary: DictionaryValues = _
  private var slotIds: Array[Int] = _
  private val dictionaryLimit = dictionaryIndex.map(new DictionaryLimit(name, _))

  // Raw codes: 0 = valid leaf; the layer at level k (layer index L = depth-1-k, innermost first)
  // has null = 2L+1 and empty = 2L+2. Pages map them to def codes once they know which occur.
  private def nullRaw(k: Int): Int = 2 * (depth - 1 - k) + 1
  private def emptyRaw(k: Int): Int = 2 * (depth - 1 - k) + 2

  /**
   * A top-level column that is neither a list nor a struct: each row is one level entry and one
   * value slot, so row r's entry and slot are both r, and rowEntry/rowSlot stay empty.
   */
  private val flat = depth == 1
  // The pending page's levels, slots and values. Kept from page to page and cleared, not made
  // anew: grown by doubling to a page's size, they were the top frame of a JFR profile of appends.
  private val rep: IntSink = if (maxRep > 0) new IntSink(1024) else null
  private val raw = new IntSink(1024)
  private val rowEntry = new IntSink(if (flat) 16 else 1024)
  private val rowSlot = new IntSink(if (flat) 16 else 1024)
  private val values: ValueSink = LeafColumnWriter.sinkFor(leaf, name)
  private var rows = 0
  private var rowsWritten = 0L
  private val pages = ArrayBuffer.empty[ColumnMetadata.Page]
  private val vecs = new Array[FieldVector](depth)

  private def reset(): Unit = {
    if (rep != null) rep.clear()
    raw.clear()
    rowEntry.clear()
    rowSlot.clear()
    values.clear()
    rows = 0
  }

  /** The first level entry of row r of the pending page (r = rows: the end). */
  private def entryOf(r: Int): Int = if (flat) r else rowEntry.array(r)
  /** The first value slot of row r of the pending page (r = rows: the end). */
  private def slotOf(r: Int): Int = if (flat) r else rowSlot.array(r)

  /** Shreds rows `[from, from + n)` of the top-level vector `top`. */
  def append(top: FieldVector, from: Int, n: Int): Unit = {
    vecs(0) = top
    var k = 1
    while (k < depth) {
      vecs(k) = vecs(k - 1) match {
        case s: StructVector =>
          val child = s.getChildByOrdinal(ordinals(k)).asInstanceOf[FieldVector]
          if (child == null || child.getName != path(k).name) throw new IllegalArgumentException(
            s"Struct field '${path(k - 1).name}': child ${ordinals(k)} of the vector is " +
              s"'${Option(child).map(_.getName).orNull}', the schema expects '${path(k).name}'")
          child
        case l: ListVector => l.getDataVector
        case l: LargeListVector => l.getDataVector
        case other => throw new IllegalStateException(s"Column '$name': unexpected vector ${other.getClass.getSimpleName}")
      }
      k += 1
    }
    if (flat) {
      // Raw code 1 = null, 0 = valid; without nulls, a run of zeros.
      if (top.getNullCount == 0) raw.addMany(0, n)
      else {
        var i = 0
        while (i < n) { raw.add(if (top.isNull(from + i)) 1 else 0); i += 1 }
      }
      values.appendRange(top, from, n)
    } else {
      var i = 0
      while (i < n) {
        rowEntry.add(raw.size); rowSlot.add(values.count)
        shred(0, from + i, maxRep)
        i += 1
      }
    }
    rows += n
  }

  private def emit(r: Int, code: Int): Unit = {
    if (rep != null) rep.add(r)
    raw.add(code)
  }

  private def shred(k: Int, i: Int, r: Int): Unit = {
    val v = vecs(k)
    if (k == depth - 1) {
      if (v.isNull(i)) { emit(r, nullRaw(k)); values.placeholder() }
      else { emit(r, 0); values.append(v, i) }
    } else if (isList(k)) {
      if (v.isNull(i)) emit(r, nullRaw(k))
      else {
        val (s, e) = v match {
          case l: LargeListVector => (Math.toIntExact(l.getOffsetBuffer.getLong(i * 8L)), Math.toIntExact(l.getOffsetBuffer.getLong(i * 8L + 8)))
          case _ => (v.getOffsetBuffer.getInt(i * 4L), v.getOffsetBuffer.getInt(i * 4L + 4))
        }
        if (s == e) emit(r, emptyRaw(k))
        else {
          var j = s
          while (j < e) { shred(k + 1, j, if (j == s) r else listRep(k) - 1); j += 1 }
        }
      }
    } else {
      if (v.isNull(i)) { emit(r, nullRaw(k)); if (k > deepestList) values.placeholder() }
      else shred(k + 1, i, r)
    }
  }

  /** Encodes the pending rows as one or more pages. */
  def flush(out: ContainerWriter): Unit = {
    if (rows == 0) return
    if (!flat) { rowEntry.add(raw.size); rowSlot.add(values.count) }
    val re = rowEntry.array
    val rs = rowSlot.array
    // Long runs of rows without a value slot (null or empty lists) become all-null pages of their
    // own, so that mini-block chunks never carry huge runs of levels. Every row of a flat column has a slot.
    val cuts = ArrayBuffer(0)
    var r = 0
    while (!flat && r < rows) {
      if (rs(r + 1) == rs(r)) {
        var q = r
        while (q < rows && rs(q + 1) == rs(q)) q += 1
        if (re(q) - re(r) > LeafColumnWriter.MaxInvisibleRun) {
          if (r > cuts.last) cuts += r
          if (q < rows) cuts += q
        }
        r = q
      } else r += 1
    }
    if (cuts.last != rows) cuts += rows
    if (dictionaryIndex.isDefined) collectDictionary()
    (0 until cuts.size - 1).foreach(j => writePage(out, span(cuts(j), cuts(j + 1))))
    dictionary = null
    slotIds = null
    reset()
  }

  private def collectDictionary(): Unit = {
    dictionary = new DictionaryValues
    slotIds = new Array[Int](values.count)
    var i = 0
    while (i < values.count) {
      slotIds(i) =
        if (raw.array(i) != 0) -1
        else values match {
          case f: ValueSink.Fixed => dictionary.id(f.data.array, i * f.width, f.width)
          case v: ValueSink.Variable =>
            dictionary.id(v.data.array, v.offsets.array(i).toInt, (v.offsets.array(i + 1) - v.offsets.array(i)).toInt)
          case other => throw new IllegalStateException(s"Column '$name': no dictionary of ${other.getClass.getSimpleName}")
        }
      i += 1
    }
  }

  /**
   * A page of a dictionary field as pylance writes it in 2.1 and 2.2: a mini-block page of the
   * indices (of the field's index type; nulls in the def levels, their index 0) with the page's
   * distinct values as its dictionary (flat or variable; pylance 2.2 wraps it in LZ4, which is
   * optional). Its reader decodes that page into the field's Arrow dictionary type; a plain page it
   * would not.
   */
  private def dictionaryPage(s: PageSpan, index: ArrowType.Int): EncodedPage = {
    val (local, order) = DictionaryValues.page(slotIds, s.slotFrom, s.slotFrom + s.numSlots, dictionary.size)
    dictionaryLimit.foreach(_.add(dictionary, order, nullItem = false))
    val w = index.getBitWidth / 8
    val indices = new ValueSink.Fixed(w, integer = true)
    val bytes = new Array[Byte](w)
    local.foreach { k =>
      var b = 0
      while (b < w) { bytes(b) = (math.max(k, 0) >>> (8 * b)).toByte; b += 1 }
      indices.appendBytes(bytes)
    }
    val span = new PageSpan(s.rows, s.rep, s.defs, s.numEntries, s.layers, s.maxRep, s.maxDef, s.maxVisibleDef,
      indices, 0, s.numSlots)
    val page = MiniBlockEncoder.encode(span, minor, scratch = Some(chunkScratch)).getOrElse(
      throw new IllegalStateException(s"Column '$name': dictionary indices do not fit mini-block chunks"))
    val items = new ByteSink(64)
    val encoding = values match {
      case f: ValueSink.Fixed =>
        order.foreach(id => items.append(dictionary.bytes, dictionary.start(id), f.width))
        PageEncoding.flat(f.width * 8)
      case v: ValueSink.Variable =>
        // A variable block: offset width, where the data starts, the n + 1 offsets, the data.
        val ob = if (v.large) 8 else 4
        LE.uN(items, ob * 8L, ob)
        LE.uN(items, ob * (order.length + 3L), ob)
        var end = 0L
        LE.uN(items, 0L, ob)
        order.foreach { id => end += dictionary.end(id) - dictionary.start(id); LE.uN(items, end, ob) }
        order.foreach(id => items.append(dictionary.bytes, dictionary.start(id), dictionary.end(id) - dictionary.start(id)))
        PageEncoding.variable(ob * 8)
      case other => throw new IllegalStateException(s"Column '$name': no dictionary of ${other.getClass.getSimpleName}")
    }
    val layout = page.layout.toBuilder
    layout.getMiniBlockLayoutBuilder.setDictionary(encoding).setNumDictionaryItems(order.length.toLong)
    EncodedPage(layout.build(), page.buffers.take(2) ++ Seq(items) ++ page.buffers.drop(2))
  }

  private def span(r0: Int, r1: Int): PageSpan = {
    val e0 = entryOf(r0)
    val e1 = entryOf(r1)
    val s0 = slotOf(r0)
    val s1 = slotOf(r1)
    val present = new Array[Boolean](2 * depth + 1)
    var i = e0
    while (i < e1) { present(raw.array(i)) = true; i += 1 }
    // A layer is nullable where its own nulls occur, and also below a struct with nulls down to the
    // next list: pylance gives a struct's nulls to its children, so it declares their layers
    // nullable even though the def codes name only the struct. Its reader gives a leaf validity
    // only from the leaf's own layer, and would read the leaf of a null struct as valid.
    val nullable = new Array[Boolean](depth)
    for (k <- 0 until depth)
      nullable(k) = present(nullRaw(k)) || (k > 0 && !isList(k - 1) && nullable(k - 1))
    // Layers innermost first; other codes are declared only if they occur in the page, as pylance does.
    val toDef = new Array[Int](2 * depth + 1)
    val layers = new Array[RepDefLayer](depth)
    var c = 1
    var maxVisibleDef = 0
    for (layer <- 0 until depth) {
      val k = depth - 1 - layer
      val hasNull = nullable(k)
      val hasEmpty = present(2 * layer + 2)
      layers(layer) =
        if (isList(k)) (hasNull, hasEmpty) match {
          case (true, true) => REPDEF_NULL_AND_EMPTY_LIST
          case (true, false) => REPDEF_NULLABLE_LIST
          case (false, true) => REPDEF_EMPTYABLE_LIST
          case _ => REPDEF_ALL_VALID_LIST
        } else if (hasNull) REPDEF_NULLABLE_ITEM else REPDEF_ALL_VALID_ITEM
      if (hasNull) { toDef(2 * layer + 1) = c; c += 1 }
      if (hasEmpty) { toDef(2 * layer + 2) = c; c += 1 }
      if (k > deepestList) maxVisibleDef = c - 1
    }
    val n = e1 - e0
    val defs = if (c > 1) Primitives.ints(n)(j => toDef(raw.array(e0 + j))) else null
    val reps = if (rep != null) java.util.Arrays.copyOfRange(rep.array, e0, e1) else null
    new PageSpan(r1 - r0, reps, defs, n, layers.toIndexedSeq, maxRep, c - 1, maxVisibleDef, values, s0, s1 - s0)
  }

  private def writePage(out: ContainerWriter, s: PageSpan): Unit = {
    val page =
      if (!s.hasValidValue) ConstantEncoder.allNull(s)
      else if (dictionaryIndex.isDefined) dictionaryPage(s, dictionaryIndex.get)
      else if (minor >= 2 && s.numSlots > 1 && ConstantEncoder.commonValue(s).isDefined)
        ConstantEncoder.inline(s, ConstantEncoder.commonValue(s).get)
      else {
        val large = PageEncoding.largestSlotBytes(s) >= PageEncoding.FullZipThreshold
        val mini = if (large) None else MiniBlockEncoder.encode(s, minor, scratch = Some(chunkScratch))
        mini.getOrElse(FullZipEncoder.encode(s, name))
      }
    val b = ColumnMetadata.Page.newBuilder()
    page.buffers.foreach { buf =>
      b.addBufferOffsets(out.writeBuffer(buf.array, 0, buf.size))
      b.addBufferSizes(buf.size.toLong)
    }
    b.setLength(s.rows.toLong)
      .setEncoding(TypedAny.direct(PageEncoding.PageLayoutName, page.layout))
      .setPriority(rowsWritten)
    rowsWritten += s.rows
    pages += b.build()
  }

  def metadata: ColumnMetadata = ColumnMetadata.newBuilder()
    .setEncoding(TypedAny.direct(PageEncoding.ColumnEncodingName, PageEncoding.columnValues))
    .addAllPages(pages.asJava).build()
}

private[v2_1] object LeafColumnWriter {
  /** The longest run of levels without a value slot a mini-block page is given. */
  val MaxInvisibleRun = 4096

  def isList(t: ArrowType): Boolean = sparklance.format.table.LogicalTypes.isList(t)

  def sinkFor(f: LanceField, column: String): ValueSink = f.arrowType match {
    case _ if PackedStructs.isPacked(f) => new ValueSink.PackedStruct(f.children.map(c => FixedWidth.bits(c.arrowType).get / 8).toIndexedSeq, column)
    case _: ArrowType.Null => new ValueSink.Nulls
    case _: ArrowType.Bool => new ValueSink.Bools
    case _: ArrowType.Utf8 | _: ArrowType.Binary => new ValueSink.Variable(large = false)
    case _: ArrowType.LargeUtf8 | _: ArrowType.LargeBinary => new ValueSink.Variable(large = true)
    case l: ArrowType.FixedSizeList => new ValueSink.FixedSizeList(l.getListSize, FixedWidth.bits(f.arrowItemType.get).get)
    case t @ (_: ArrowType.Int | _: ArrowType.Date | _: ArrowType.Time | _: ArrowType.Timestamp | _: ArrowType.Duration) =>
      new ValueSink.Fixed(FixedWidth.bits(t).get / 8, integer = true)
    case t => new ValueSink.Fixed(FixedWidth.bits(t).get / 8)
  }
}
