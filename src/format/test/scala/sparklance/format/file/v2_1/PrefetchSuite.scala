package sparklance.format.file.v2_1

import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.types.pojo.ArrowType
import org.roaringbitmap.RoaringBitmap
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import sparklance.format.file.{ContainerReader, DataFileReader}
import sparklance.format.io.InputFile
import sparklance.format.table.LanceField

/**
 * A scan that says which columns and rows it reads ([[DataFileReader.willRead]]) has the file
 * fetch each column's first page at once, then each next page as the scan reaches the one before,
 * none past the rows it reads; scattered reads ([[DataFileReader.readSparsely]]) fetch the pages
 * they read much of likewise.
 */
class PrefetchSuite extends AnyFunSuite {
  import Writer21Fixtures._

  /** A file's bytes, with the prefetches asked of it recorded as (stream, position, length). */
  private final class RecordingFile(bytes: Array[Byte]) extends InputFile {
    private val file = new MemFile(bytes, "recording")
    val prefetches = ArrayBuffer.empty[(Int, Long, Int)]
    val reads = ArrayBuffer.empty[(Long, Int)]
    def path: String = file.path
    def length: Long = file.length
    def read(position: Long, len: Int): Array[Byte] = { reads += ((position, len)); file.read(position, len) }
    override def prefetch(stream: Int, position: Long, length: Int): Unit = prefetches += ((stream, position, length))
    def close(): Unit = ()
  }

  private val schema = schemaOf(id => Seq(
    LanceField(id(), "id", new ArrowType.Int(64, true), nullable = true),
    LanceField(id(), "name", ArrowType.Utf8.INSTANCE, nullable = true)))
  private val columns = Seq(0 -> "id", 1 -> "name")
  private val columnOf = schema.fields.map(_.id).zipWithIndex.toMap

  /** Per column, its pages' first rows (one more: the column's end) and the byte span of their buffers. */
  private def pagesOf(bytes: Array[Byte], column: Int): (IndexedSeq[Long], IndexedSeq[(Long, Int)]) = {
    val pages = new ContainerReader(new MemFile(bytes, "meta")).columns(column).getPagesList.asScala.toIndexedSeq
    val starts = pages.scanLeft(0L)(_ + _.getLength)
    val spans = pages.map { p =>
      val used = (0 until p.getBufferOffsetsCount).filter(p.getBufferSizes(_) > 0)
      val start = used.map(p.getBufferOffsets(_)).min
      val end = used.map(i => p.getBufferOffsets(i) + p.getBufferSizes(i)).max
      (start, math.min(end - start, ColumnReader21.MaxPrefetch.toLong).toInt)
    }
    (starts, spans)
  }

  /** A 2.`minor` file of `n` rows of `schema` in pages of at most `maxPageBytes`. */
  private def fileOf(minor: Int, n: Int, seed: Long, maxPageBytes: Int, a: RootAllocator): Array[Byte] = {
    val bs = batches(schema, Seq(n), seed, 0.1, a)
    try write(schema, bs, minor, maxPageBytes = maxPageBytes)._1 finally bs.flatten.foreach(_.close())
  }

  /** Reads every field of rows [from, until) through `reader`, `batch` rows at a time, and checks them against the file's rows. */
  private def readsInBatches(reader: DataFileReader, bytes: Array[Byte], from: Long, until: Long, batch: Int, a: RootAllocator): Unit = {
    val expected = {
      val r = new FileReader21(new MemFile(bytes, "expected"))
      try schema.fields.map { f => val v = r.read(f, columnOf, 0, until.toInt, a); try (0 until until.toInt).map(Canon(v, _)) finally v.close() }
      finally r.close()
    }
    var start = from
    while (start < until) {
      val count = math.min(batch.toLong, until - start).toInt
      for ((f, fi) <- schema.fields.zipWithIndex) {
        val v = reader.read(f, columnOf, start, count, a)
        try assert((0 until count).forall(i => Canon(v, i) == expected(fi)((start + i).toInt)), s"${f.name} rows $start+$count")
        finally v.close()
      }
      start += count
    }
  }

  for (minor <- Seq(1, 2))
    test(s"2.$minor: the first page of every column at once, then each next page before it is read, none past the rows read") {
      val a = new RootAllocator()
      try {
        val bytes = fileOf(minor, 40000, 5L + minor, maxPageBytes = 32 << 10, a)
        val (starts0, _) = pagesOf(bytes, 0)
        assert(starts0.size > 6, s"column 0 has ${starts0.size - 1} pages")
        // From inside a page, to where a page of column 0 starts: that page is not fetched.
        val from = (starts0(1) + starts0(2)) / 2
        val until = starts0(starts0.size - 3)

        val file = new RecordingFile(bytes)
        val reader: DataFileReader = new FileReader21(file)
        reader.willRead(columns, from, until)
        // A column's fetches alternate between its two streams, its first on the odd one.
        def wanted(c: Int, pages: Seq[Int]) = {
          val spans = pagesOf(bytes, c)._2
          pages.zipWithIndex.map { case (p, k) => (2 * c + ((k + 1) & 1), spans(p)._1, spans(p)._2) }
        }
        def pageOf(c: Int, row: Long) = pagesOf(bytes, c)._1.lastIndexWhere(_ <= row)
        assert(file.prefetches == columns.flatMap { case (c, _) => wanted(c, Seq(pageOf(c, from))) })

        readsInBatches(reader, bytes, from, until, 3000, a)
        reader.close()
        for ((c, _) <- columns) {
          val (starts, _) = pagesOf(bytes, c)
          val pages = pageOf(c, from) until starts.indexWhere(_ >= until)
          assert(file.prefetches.filter(_._1 / 2 == c) == wanted(c, pages), s"column $c")
        }
        assert(a.getAllocatedMemory == 0)
      } finally a.close()
    }

  for (minor <- Seq(1, 2))
    test(s"2.$minor: a page running into the tail the file opened with is fetched up to the tail, and read from the file only that far") {
      val a = new RootAllocator()
      try {
        val n = 30000
        val bytes = fileOf(minor, n, 11L + minor, maxPageBytes = 1 << 20, a)
        val tailStart = bytes.length - ContainerReader.TailBytes
        val (_, spans) = pagesOf(bytes, 1)
        val (lastStart, lastLength) = spans.last
        assert(lastStart < tailStart && lastStart + lastLength > tailStart, s"the last page spans ${spans.last}, the tail starts at $tailStart")
        val file = new RecordingFile(bytes)
        val reader: DataFileReader = new FileReader21(file)
        reader.willRead(columns, 0, n)
        readsInBatches(reader, bytes, 0, n, 7000, a)
        reader.close()
        // Every page of column 1 fetched in turn, the first on its odd stream: the last on the stream of the column's page count's parity.
        assert(file.prefetches.contains((2 + (spans.size & 1), lastStart, (tailStart - lastStart).toInt)))
        // A read of the file across the tail's start could not be served by what was fetched ahead.
        assert(file.reads.forall { case (p, l) => p >= tailStart || p + l <= tailStart }, file.reads)
        assert(a.getAllocatedMemory == 0)
      } finally a.close()
    }

  test("scattered reads fetch ahead, in order, the pages of which they read a quarter of the rows or more; an untold reader nothing") {
    val a = new RootAllocator()
    try {
      val n = 20000
      val bs = batches(schema, Seq(n), 3L, 0.1, a)
      val (bytes, _) = try write(schema, bs, 2, maxPageBytes = 16 << 10) finally bs.flatten.foreach(_.close())
      // Every row of the first quarter, every 7th after it (a seventh of those pages' rows: not fetched).
      val picked = ((0L until 5000L) ++ (5000L until n.toLong by 7)).toArray
      val rows = new RoaringBitmap()
      picked.foreach(r => rows.add(r.toInt))
      val sparse = new RecordingFile(bytes)
      val picking = new FileReader21(sparse)
      picking.readSparsely(columns, rows)
      val expected = new FileReader21(new MemFile(bytes, "expected"))
      for (f <- schema.fields) {
        val (got, all) = (picking.readRows(f, columnOf, picked, a), expected.read(f, columnOf, 0, n, a))
        try assert(picked.indices.forall(i => Canon(got, i) == Canon(all, picked(i).toInt)), f.name)
        finally { got.close(); all.close() }
      }
      expected.close()
      picking.close()
      for ((c, _) <- columns) {
        val (starts, spans) = pagesOf(bytes, c)
        val dense = spans.indices.filter(p => rows.rangeCardinality(starts(p), starts(p + 1)) * 4 >= starts(p + 1) - starts(p))
        assert(dense.size > 1 && dense.size < spans.size, s"column $c: pages $dense of ${spans.size} are read densely")
        val fetched = sparse.prefetches.filter(_._1 / 2 == c)
        assert(fetched.map(f => (f._2, f._3)) == dense.map(spans), s"column $c")
        // One after the other on the column's two streams: the next page's fetch leaves the one before to its reads.
        assert(fetched.map(_._1 % 2).sliding(2).forall(w => w.size < 2 || w(0) != w(1)), fetched)
      }
      val untold = new RecordingFile(bytes)
      val plain = new FileReader21(untold)
      schema.fields.foreach(f => plain.read(f, columnOf, 0, n, a).close())
      plain.close()
      assert(untold.prefetches.isEmpty)
      assert(a.getAllocatedMemory == 0)
    } finally a.close()
  }
}
