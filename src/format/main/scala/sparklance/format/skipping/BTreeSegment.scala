package sparklance.format.skipping

import java.nio.charset.StandardCharsets.UTF_8
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.types.pojo.ArrowType
import sparklance.format.Resources
import sparklance.format.io.Storage
import sparklance.format.table.BasePaths
import sparklance.format.proto.TableProtos.IndexMetadata

/**
 * One segment of a BTREE index as pylance writes it (LANCE-SCALAR-INDICES.md §3):
 * `page_data.lance` holds every indexed row's value and row address sorted by value, nulls first;
 * `page_lookup.lance` one row a page of `batchSize` of them, with the page's first and last value
 * and its null count.
 */
final case class BTreeSegment(index: IndexMetadata, pages: IndexedSeq[BTreeSegment.Page], batchSize: Long, rows: Long) {
  private def rowsOf(p: BTreeSegment.Page): Long = math.min(batchSize, rows - p.index * batchSize)

  /**
   * Whether page `p` may hold a row `leaf` keeps. A page starting with nulls records no lower
   * bound (its first value is null) although values may follow: only its nulls are known then.
   */
  def mayHold(p: BTreeSegment.Page, leaf: ColumnFilter): Boolean =
    if (p.min.isEmpty && p.nullCount < rowsOf(p)) true
    else ZoneTest.mightMatch(Zone(0, p.index * batchSize, rowsOf(p), p.min, p.max, p.nullCount, 0), leaf)
}

object BTreeSegment {
  val TypeUrlSuffix = "lance.table.BTreeIndexDetails"
  val DataFile = "page_data.lance"
  val LookupFile = "page_lookup.lance"

  final case class Page(index: Int, min: Option[ZoneValue], max: Option[ZoneValue], nullCount: Long)

  def isBTree(index: IndexMetadata): Boolean = index.getIndexDetails.getTypeUrl.endsWith(TypeUrlSuffix)

  /**
   * The pages of `index`, a BTREE on a column of Arrow type `columnType`; None where this reader
   * does not use it: values of another type, or pages spread over range partitions.
   */
  def read(storage: Storage, files: BasePaths, index: IndexMetadata, columnType: ArrowType,
      allocator: BufferAllocator): Option[BTreeSegment] = {
    val lookup = IndexFile.open(storage, files, index, LookupFile)
    val data = try IndexFile.open(storage, files, index, DataFile) catch { case t: Throwable => lookup.close(); throw t }
    try {
      val metadata = lookup.schema.metadata.map { case (k, v) => k -> new String(v, UTF_8) }
      val typed = Seq("min", "max").forall(n => lookup.schema.field(n).exists(_.arrowType == columnType)) &&
        data.schema.field("values").exists(_.arrowType == columnType)
      if (!typed || !lookup.flat || !data.flat || metadata.get("range_partitioned").contains("true")) None
      else {
        val batchSize = metadata.get("batch_size").flatMap(_.toLongOption).getOrElse(4096L)
        val pages = lookup.all(Seq("min", "max", "null_count", "page_idx"), allocator) {
          case Seq(min, max, nulls, page) => (0 until min.getValueCount).map(i =>
            Page(ZoneValues.long(page, i).toInt, ZoneValues.at(min, i), ZoneValues.at(max, i), ZoneValues.long(nulls, i)))
        }
        Some(BTreeSegment(index, pages, batchSize, data.numRows))
      }
    } finally Resources.closeAll(Seq(lookup, data))
  }

  /** The values and row addresses of `pages` of `segment`, read through one open file. */
  def entries(storage: Storage, files: BasePaths, segment: BTreeSegment, pages: Seq[Page],
      allocator: BufferAllocator): Seq[(Option[ZoneValue], Long)] =
    if (pages.isEmpty) Nil
    else {
      val data = IndexFile.open(storage, files, segment.index, DataFile)
      try pages.flatMap { page =>
        val from = page.index * segment.batchSize
        data.columns(Seq("values", "ids"), allocator, from, Math.toIntExact(math.min(segment.batchSize, segment.rows - from))) {
          case Seq(values, ids) => (0 until values.getValueCount).map(i => ZoneValues.at(values, i) -> ZoneValues.long(ids, i))
        }
      } finally data.close()
    }
}
