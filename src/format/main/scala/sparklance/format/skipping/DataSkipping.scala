package sparklance.format.skipping

import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.types.pojo.ArrowType
import org.roaringbitmap.RoaringBitmap
import scala.collection.mutable
import scala.jdk.CollectionConverters._
import sparklance.format.deletion.DeletionFiles
import sparklance.format.index.{FragmentReuse, Indices}
import sparklance.format.io.DecodedFileCache
import sparklance.format.index.scalar.ScalarIndexType
import sparklance.format.index.text.TextIndexSegment
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.{DataFragment, IndexMetadata}
import sparklance.format.skipping.ColumnFilter._
import sparklance.format.table.{BasePaths, LanceField, LanceSchema}

/**
 * Which rows of a snapshot's fragments a filter may keep, by the table's ZONEMAP, BTREE and
 * BITMAP indices (LANCE-SCALAR-INDICES.md §2-§4, §6) and, for a text match, its INVERTED index
 * (docs/format-inverted-index.md): a fragment an index covers is read only on the spans of the
 * zones the filter cannot rule out (zone map) or at the rows whose values match (BTREE, BITMAP,
 * INVERTED); a fragment no index covers is read whole.
 *
 * An index is used only for fragments that both exist and are in its fragment bitmap: what a
 * segment still holds of fragments since rewritten, or covered by another segment, is ignored.
 * Segments of one index (one name) cover disjoint fragments and are used together; where several
 * indices cover a fragment, a row must pass all of them.
 */
final class DataSkipping(storage: Storage, files: BasePaths, schema: LanceSchema, indices: Seq[IndexMetadata],
    fragments: Seq[DataFragment], stableRowIds: Boolean, allocator: BufferAllocator) {

  private val physicalRows: Map[Long, Long] = fragments.map(f => f.getId -> f.getPhysicalRows).toMap
  private val existing: RoaringBitmap = {
    val ids = new RoaringBitmap()
    fragments.foreach(f => if (f.getId >= 0 && f.getId <= 0xFFFFFFFFL) ids.add(f.getId.toInt))
    ids
  }

  /**
   * The existing fragments a segment is used for, as a bitmap (fragment ids are unsigned 32-bit
   * in an index's fragment bitmap): asked for every fragment of every planned scan.
   */
  private final class Covered(ids: RoaringBitmap) extends (Long => Boolean) {
    def apply(fragment: Long): Boolean = fragment >= 0 && fragment <= 0xFFFFFFFFL && ids.contains(fragment.toInt)
    def nonEmpty: Boolean = !ids.isEmpty
    def foreach(f: Long => Unit): Unit = ids.forEach((id: Int) => f(Integer.toUnsignedLong(id)))
  }

  /** Rows an index holds under the addresses of fragments a deferred compaction replaced are not looked up. */
  private lazy val reuse = FragmentReuse.of(storage, files, indices)

  /**
   * The fields below a struct that may be NULL. Such a field is NULL wherever an ancestor is, but a
   * file that stores a valid child value there (older sparklance wrote 0 or "", other writers may
   * too) gives an index built on the field a value for the row: their null tests are never
   * answered by an index. Any other test is true only where the field, and so every ancestor,
   * holds a value, which the indices describe as it is.
   */
  private val belowNullable: Set[Int] = {
    def below(f: LanceField, ancestorNullable: Boolean): Seq[Int] =
      (if (ancestorNullable) Seq(f.id) else Nil) ++ f.children.flatMap(below(_, ancestorNullable || f.nullable))
    schema.fields.flatMap(below(_, ancestorNullable = false)).toSet
  }

  /** What one index tells of the rows of the fragments it covers that a filter on its column keeps. */
  private trait FieldIndex {
    def covers(fragment: Long): Boolean
    /** Whether it judges `leaf`: a text match only by an INVERTED index, which judges nothing else. */
    def answers(leaf: ColumnFilter): Boolean = !leaf.isInstanceOf[TextMatch]
    /** The offsets of `fragment` (covered) that may hold a row `leaf` keeps. */
    def candidates(leaf: ColumnFilter, fragment: Long): RoaringBitmap
    /** The offsets of `fragment` (covered) whose rows `leaf` surely keeps, if they are live. */
    def certain(leaf: ColumnFilter, fragment: Long): RoaringBitmap
  }

  /** `zones`: the zones of each fragment the index is used for (none: it holds no rows of it). */
  private final class ZoneMapIndex(zones: Map[Long, Array[Zone]]) extends FieldIndex {
    def covers(fragment: Long): Boolean = zones.contains(fragment)
    def candidates(leaf: ColumnFilter, fragment: Long): RoaringBitmap = spans(fragment, ZoneTest.mightMatch(_, leaf))
    def certain(leaf: ColumnFilter, fragment: Long): RoaringBitmap = spans(fragment, ZoneTest.allMatch(_, leaf))
    /** The offsets of the fragment's zones that pass `test`. */
    private def spans(fragment: Long, test: Zone => Boolean): RoaringBitmap = {
      val kept = new RoaringBitmap()
      val end = physicalRows(fragment)
      zones(fragment).foreach(z => if (test(z)) kept.add(z.start, math.min(z.end, end)))
      kept
    }
  }

  /** An index that names the rows holding each value (BTREE, BITMAP): found once per filter. */
  private abstract class RowsIndex(coverages: Seq[Covered]) extends FieldIndex {
    private val matched = mutable.Map.empty[ColumnFilter, Map[Long, RoaringBitmap]]
    def covers(fragment: Long): Boolean = coverages.exists(_(fragment))
    def candidates(leaf: ColumnFilter, fragment: Long): RoaringBitmap =
      matched.getOrElseUpdate(leaf, rows(leaf)).getOrElse(fragment, new RoaringBitmap())
    /** The rows whose indexed values pass `leaf`, which are exactly those it keeps (a text match's rows are not). */
    def certain(leaf: ColumnFilter, fragment: Long): RoaringBitmap =
      if (leaf.isInstanceOf[TextMatch] || leaf.isInstanceOf[ListContains]) new RoaringBitmap() else candidates(leaf, fragment)
    /** The offsets, per covered fragment, of the rows whose values pass `leaf`. */
    protected def rows(leaf: ColumnFilter): Map[Long, RoaringBitmap]
  }

  /** Reads the pages whose bounds do not rule `leaf` out, then tests each value. */
  private final class BTreeIndex(segments: Seq[(Covered, BTreeSegment)]) extends RowsIndex(segments.map(_._1)) {
    protected def rows(leaf: ColumnFilter): Map[Long, RoaringBitmap] = {
      val found = mutable.Map.empty[Long, RoaringBitmap]
      for ((coverage, segment) <- segments;
           (value, address) <- BTreeSegment.entries(storage, files, segment, segment.pages.filter(segment.mayHold(_, leaf)), allocator)
           if ColumnFilter.keeps(leaf, value) && coverage(address >>> 32))
        found.getOrElseUpdate(address >>> 32, new RoaringBitmap()).add(address.toInt)
      found.toMap
    }
  }

  /** Tests each distinct value and gathers the rows of those that pass. */
  private final class BitmapIndex(segments: Seq[(Covered, BitmapSegment)]) extends RowsIndex(segments.map(_._1)) {
    protected def rows(leaf: ColumnFilter): Map[Long, RoaringBitmap] = {
      val found = mutable.Map.empty[Long, RoaringBitmap]
      for ((coverage, segment) <- segments; (key, rows) <- segment.keys if ColumnFilter.keeps(leaf, key);
           (fragment, offsets) <- BitmapSegment.treemap(rows, id => physicalRows.getOrElse(id, 0L)) if coverage(fragment))
        found.getOrElseUpdate(fragment, new RoaringBitmap()).or(offsets)
      found.toMap
    }
  }

  /**
   * Reads the posting lists of the query's tokens: the rows holding one, where the segment's
   * analyzer is the match's; a segment of another analyzer rules nothing out. Deleted rows are
   * left to the reader.
   */
  private final class InvertedIndex(segments: Seq[(Covered, IndexMetadata)]) extends RowsIndex(segments.map(_._1)) {
    override def answers(leaf: ColumnFilter): Boolean = leaf.isInstanceOf[TextMatch]
    protected def rows(leaf: ColumnFilter): Map[Long, RoaringBitmap] = leaf match {
      case TextMatch(_, query, analyzer, _) =>
        val found = mutable.Map.empty[Long, RoaringBitmap]
        segments.foreach { case (coverage, entry) =>
          scala.util.Using.resource(TextIndexSegment.open(storage, files, files.tablePath, entry, allocator)) { segment =>
            if (segment.analyzer != analyzer)
              coverage.foreach(id => found.getOrElseUpdate(id, new RoaringBitmap()).add(0L, physicalRows(id)))
            else {
              coverage.foreach(id => found.getOrElseUpdate(id, new RoaringBitmap()))
              val tokens = analyzer.tokens(query).distinct
              for (partition <- segment.partitions; token <- tokens; id <- partition.tokens.get(token)) {
                val docs = partition.postings(id, allocator).docs
                var i = 0
                while (i < docs.length) {
                  val address = partition.rowIds(docs(i))
                  if (coverage(address >>> 32)) found(address >>> 32).add(address.toInt)
                  i += 1
                }
              }
            }
          }
        }
        found.toMap
      case _ => Map.empty
    }
  }

  /**
   * The indices of a kind on the field, one a name, each as its segments with the existing
   * fragments they cover.
   */
  private def indicesOn(fieldId: Int, kind: IndexMetadata => Boolean): Seq[Seq[(Covered, IndexMetadata)]] =
    indices.filter(i => kind(i) && i.getFieldsList.asScala.map(_.intValue) == Seq(fieldId))
      .groupBy(_.getName).toSeq.sortBy(_._1).map { case (_, segments) =>
        segments.map { segment =>
          val covered = Indices.coverage(segment).fold(new RoaringBitmap())(RoaringBitmap.and(_, existing))
          reuse.unmapped(segment).foreach(id => covered.remove(id.toInt))
          new Covered(covered) -> segment
        }.filter(_._1.nonEmpty)
      }.filter(_.nonEmpty)

  private def load[T](kind: String, segments: Seq[(Covered, IndexMetadata)], keyType: ArrowType)(read: IndexMetadata => Option[T]): Seq[(Covered, T)] =
    loadWeighed[T](kind, segments, keyType, _ => DecodedFileCache.UnknownWeight)(read)

  private def loadWeighed[T](kind: String, segments: Seq[(Covered, IndexMetadata)], keyType: ArrowType,
      weigh: Option[T] => Long)(read: IndexMetadata => Option[T]): Seq[(Covered, T)] =
    segments.flatMap { case (coverage, segment) =>
      DecodedFileCache.get(DataSkipping.cacheKey(files, segment, kind, keyType), weigh)(read(segment)).map(coverage -> _)
    }

  private def usable(kind: IndexMetadata => Boolean)(i: IndexMetadata) = kind(i) && DataSkipping.uses(i, stableRowIds)

  private def indicesOf(fieldId: Int): Seq[FieldIndex] =
    schema.allFields.find(_.id == fieldId).toSeq.flatMap(field => if (ZoneValues.supports(field)) valueIndicesOf(field) else listIndicesOf(field))

  /** The LABEL_LIST indices of a list column of comparable elements (their keys are the elements). */
  private def listIndicesOf(field: LanceField): Seq[FieldIndex] = ZoneValues.listElement(field).toSeq.flatMap { element =>
    indicesOn(field.id, usable(DataSkipping.isLabelList))
      .map(load("label_list", _, element)(BitmapSegment.read(storage, files, _, element, allocator)))
      .filter(_.nonEmpty).map(b => new BitmapIndex(b): FieldIndex)
  }

  /** The zone maps, BTREE, BITMAP and INVERTED indices of a column of comparable values. */
  private def valueIndicesOf(field: LanceField): Seq[FieldIndex] = {
    // Grouped by fragment once per segment and kept with it: planning over 10,000 fragments regrouped them per query.
    // Weighed by their zones: a table of many small appends has a segment per append, and with
    // the default weight a point query's segments no longer fitted and were all read again.
    val zoneMaps = indicesOn(field.id, ZoneMapSegment.isZoneMap).map(segments =>
      loadWeighed[Map[Long, Array[Zone]]](DataSkipping.ZoneMapKind, segments, field.arrowType, DataSkipping.zoneMapWeight)(segment =>
        ZoneMapSegment.read(storage, files, segment, field.arrowType, allocator).map(DataSkipping.byFragment)))
    val btrees = indicesOn(field.id, usable(BTreeSegment.isBTree))
      .map(load("btree", _, field.arrowType)(BTreeSegment.read(storage, files, _, field.arrowType, allocator)))
    val bitmaps = indicesOn(field.id, usable(BitmapSegment.isBitmap))
      .map(load("bitmap", _, field.arrowType)(BitmapSegment.read(storage, files, _, field.arrowType, allocator)))
    val inverted = indicesOn(field.id, usable(DataSkipping.isInverted))
    zoneMaps.filter(_.nonEmpty).map { segments =>
        // One map for the index's segments (they cover disjoint fragments): a lookup per fragment,
        // not a search of the segments, which a table of many appends has one of per append.
        val byFragment = Map.newBuilder[Long, Array[Zone]]
        segments.foreach { case (coverage, zones) => coverage.foreach(id => byFragment += id -> zones.getOrElse(id, Array.empty[Zone])) }
        new ZoneMapIndex(byFragment.result()): FieldIndex
      } ++
      btrees.filter(_.nonEmpty).map(b => new BTreeIndex(b): FieldIndex) ++
      bitmaps.filter(_.nonEmpty).map(b => new BitmapIndex(b): FieldIndex) ++
      inverted.map(i => new InvertedIndex(i): FieldIndex)
  }

  /**
   * For each fragment the filter lets skip rows of, the physical offsets that may hold matching
   * rows (empty when none can); fragments absent from the result are read whole.
   */
  def candidates(filter: ColumnFilter): Map[Long, RoaringBitmap] = {
    val plain = withoutImpliedNotNull(negationFree(filter))
    val byField = ColumnFilter.fieldIds(plain).toSeq.map(id => id -> indicesOf(id)).filter(_._2.nonEmpty).toMap
    if (byField.isEmpty) Map.empty
    else {
      val test = bound(plain, byField)
      val found = Map.newBuilder[Long, RoaringBitmap]
      physicalRows.keysIterator.foreach(id => test(id).foreach(rows => found += id -> rows))
      found.result()
    }
  }

  /**
   * The live rows `filter` keeps in each fragment whose every live row the indices decide: rows a
   * zone's statistics prove to pass or to fail, and rows a BTREE or BITMAP index names or leaves
   * out. Fragments holding a row they cannot decide are absent, as are all of them when the filter
   * tests a nested column or compares a column with a value of another kind (whose zones prove
   * nothing). What a COUNT with this filter can take without reading the fragments.
   */
  def counted(filter: ColumnFilter): Map[Long, Long] = {
    val plain = withoutImpliedNotNull(negationFree(filter))
    val topLevel = schema.fields.map(f => f.id -> f).toMap
    def decidable(f: ColumnFilter): Boolean = f match {
      case And(l, r) => decidable(l) && decidable(r)
      case Or(l, r) => decidable(l) && decidable(r)
      case Keep => true
      case _: TextMatch | _: ListContains | _: Not => false
      case leaf => ColumnFilter.fieldId(leaf).flatMap(topLevel.get).exists(field => values(leaf).forall(ZoneValues.sameKind(field.arrowType, _)))
    }
    val byField = ColumnFilter.fieldIds(plain).toSeq.map(id => id -> indicesOf(id)).filter(_._2.nonEmpty).toMap
    if (byField.isEmpty || !decidable(plain)) Map.empty
    else {
      val (maybe, sure) = (bound(plain, byField), boundCertain(plain, byField))
      val counts = Map.newBuilder[Long, Long]
      fragments.foreach { fragment =>
        val id = fragment.getId
        val passed = sure(id)
        val undecided = RoaringBitmap.andNot(maybe(id).getOrElse(RoaringBitmap.bitmapOfRange(0L, fragment.getPhysicalRows)), passed)
        val deletions = fragment.hasDeletionFile
        if (undecided.isEmpty && !deletions) counts += id -> passed.getLongCardinality
        else if (undecided.isEmpty && passed.getLongCardinality == fragment.getPhysicalRows)
          counts += id -> (fragment.getPhysicalRows - DeletionFiles.deletedRows(storage, files, fragment))
        else if (deletions) {
          // Rows left undecided may all have been deleted since the indices were written.
          val deleted = DeletionFiles.read(storage, files, fragment)
          if (RoaringBitmap.andNot(undecided, deleted).isEmpty) counts += id -> RoaringBitmap.andNot(passed, deleted).getLongCardinality
        }
      }
      counts.result()
    }
  }

  /** The values a test on one column compares with. */
  private def values(leaf: ColumnFilter): Seq[ZoneValue] = leaf match {
    case Compare(_, _, v) => Seq(v)
    case NotEqual(_, v) => Seq(v)
    case In(_, vs) => vs
    case _ => Nil
  }

  /** For a fragment, the offsets whose rows the filter surely keeps if they are live. */
  private def boundCertain(filter: ColumnFilter, byField: Map[Int, Seq[FieldIndex]]): Long => RoaringBitmap = filter match {
    case And(l, r) =>
      val (a, b) = (boundCertain(l, byField), boundCertain(r, byField))
      id => RoaringBitmap.and(a(id), b(id))
    case Or(l, r) =>
      val (a, b) = (boundCertain(l, byField), boundCertain(r, byField))
      id => RoaringBitmap.or(a(id), b(id))
    case IsNull(field) if belowNullable(field) => _ => new RoaringBitmap()
    case IsNotNull(field) if belowNullable(field) => _ => new RoaringBitmap()
    case leaf =>
      // A row any covering index proves to pass passes.
      val judges = ColumnFilter.fieldId(leaf).toSeq.flatMap(byField.getOrElse(_, Nil)).filter(_.answers(leaf)).toArray
      id => {
        val passed = new RoaringBitmap()
        judges.foreach(j => if (j.covers(id)) passed.or(j.certain(leaf, id)))
        passed
      }
  }

  /** A filter with the indices of each of its tests looked up once, to be asked of every fragment. */
  // Given a fragment id, the offsets of it that may match; None for all of them.
  private type BoundFilter = Long => Option[RoaringBitmap]

  private def bound(filter: ColumnFilter, byField: Map[Int, Seq[FieldIndex]]): BoundFilter = filter match {
    case And(l, r) =>
      val (a, b) = (bound(l, byField), bound(r, byField))
      id => (a(id), b(id)) match {
        case (Some(x), Some(y)) => Some(RoaringBitmap.and(x, y))
        case (x, y) => x.orElse(y)
      }
    case Or(l, r) =>
      val (a, b) = (bound(l, byField), bound(r, byField))
      id => for (x <- a(id); y <- b(id)) yield RoaringBitmap.or(x, y)
    case IsNull(field) if belowNullable(field) => _ => None: Option[RoaringBitmap]
    case IsNotNull(field) if belowNullable(field) => _ => None: Option[RoaringBitmap]
    case leaf =>
      // Every index covering the fragment bounds the rows; together, by their intersection.
      val judges = ColumnFilter.fieldId(leaf).toSeq.flatMap(byField.getOrElse(_, Nil)).filter(_.answers(leaf)).toArray
      id => {
        var kept: RoaringBitmap = null
        var i = 0
        while (i < judges.length) {
          if (judges(i).covers(id)) {
            val rows = judges(i).candidates(leaf, id)
            kept = if (kept == null) rows else RoaringBitmap.and(kept, rows)
          }
          i += 1
        }
        Option(kept)
      }
  }
}

object DataSkipping {
  /** About what a zone held by fragment weighs in memory (its bounds, counts and the map's share). */
  private val ZoneBytes = 160L

  private def zoneMapWeight(zones: Option[Map[Long, Array[Zone]]]): Long =
    256L + zones.fold(0L)(_.valuesIterator.map(_.length.toLong).sum * ZoneBytes)

  private val ZoneMapKind = "zonemap-by-fragment"

  /** Where the process keeps what it decoded of `segment` as `kind`, for keys of type `keyType`. */
  private def cacheKey(files: BasePaths, segment: IndexMetadata, kind: String, keyType: ArrowType): String =
    s"${files.indexDir(segment)}|$kind|$keyType"

  private def byFragment(zones: Seq[Zone]): Map[Long, Array[Zone]] = zones.groupBy(_.fragmentId).map { case (id, zs) => id -> zs.toArray }

  /**
   * Keeps `zones`, which the process has just written as the file of zone map `segment` of
   * `tablePath` (on a column of Arrow type `columnType`), as if a scan had read them: the next
   * statement on the table in this process does not read back the segments the last one wrote
   * (a GET on an object store before its scan can plan).
   */
  def remember(tablePath: String, segment: IndexMetadata, columnType: ArrowType, zones: Seq[Zone]): Unit = {
    val value = Some(byFragment(zones))
    DecodedFileCache.get(cacheKey(BasePaths.own(tablePath), segment, ZoneMapKind, columnType), zoneMapWeight)(value)
  }

  /**
   * Whether scans skip rows by this index: a zone map; a BTREE, but not one of index version 0 on
   * a table with stable row ids, which may hold row ids rather than addresses; a BITMAP, a
   * LABEL_LIST or an INVERTED index on a table without stable row ids (with them they hold row ids).
   */
  def uses(index: IndexMetadata, stableRowIds: Boolean): Boolean =
    ZoneMapSegment.isZoneMap(index) ||
      (BTreeSegment.isBTree(index) && !(stableRowIds && index.getIndexVersion == 0)) ||
      ((BitmapSegment.isBitmap(index) || isLabelList(index) || isInverted(index)) && !stableRowIds)

  /** A LABEL_LIST index: BITMAP's file, keyed by the elements of a list column. */
  def isLabelList(index: IndexMetadata): Boolean = ScalarIndexType.of(index).contains(ScalarIndexType.LabelList)

  /** A segment of a full-text (INVERTED) index. */
  def isInverted(index: IndexMetadata): Boolean = Indices.typeName(index) == "Inverted"

  /**
   * The fields scans of a table with these indices can skip rows by for comparisons (an INVERTED
   * index answers text matches only, a LABEL_LIST `array_contains`).
   */
  def indexedFields(indices: Seq[IndexMetadata], stableRowIds: Boolean): Set[Int] =
    indices.filter(i => i.getFieldsCount == 1 && uses(i, stableRowIds) && !isInverted(i) && !isLabelList(i))
      .map(_.getFields(0).intValue).toSet
}
