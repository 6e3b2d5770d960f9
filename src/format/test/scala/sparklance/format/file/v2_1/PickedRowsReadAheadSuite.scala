package sparklance.format.file.v2_1

import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.types.pojo.ArrowType
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.io.InputFile
import sparklance.format.table.LanceField

/**
 * Rows picked out of mini-block pages: where they lie close together (a scan around deleted rows)
 * the chunks are read ahead, so such a scan sends about as many reads as one without deletions
 * (on an object store each read is a request); rows far apart get only their chunks.
 */
class PickedRowsReadAheadSuite extends AnyFunSuite {
  import Writer21Fixtures._

  /** A file's bytes, with its reads counted. */
  private final class CountedFile(bytes: Array[Byte], readAhead: Int) extends InputFile {
    private val file = new MemFile(bytes, "counted", readAhead)
    var reads = 0
    var bytesRead = 0L
    def path: String = file.path
    def length: Long = file.length
    override def readAheadBytes: Int = readAhead
    def read(position: Long, len: Int): Array[Byte] = { reads += 1; bytesRead += len; file.read(position, len) }
    def close(): Unit = ()
  }

  private val schema = schemaOf(id => Seq(
    LanceField(id(), "id", new ArrowType.Int(64, true), nullable = true),
    LanceField(id(), "score", new ArrowType.FloatingPoint(org.apache.arrow.vector.types.FloatingPointPrecision.DOUBLE), nullable = true),
    LanceField(id(), "name", ArrowType.Utf8.INSTANCE, nullable = true)))

  private val batchRows = 8192

  for (minor <- Seq(1, 2))
    test(s"2.$minor: picking all rows but every 100th reads about as often as reading them all, and gives their values") {
      val a = new RootAllocator()
      try {
        val sizes = Seq(60000, 60000)
        val bs = batches(schema, sizes, 11L * minor, 0.1, a)
        val (bytes, _) = try write(schema, bs, minor) finally bs.flatten.foreach(_.close())
        val n = sizes.sum
        val columnOf = schema.fields.map(_.id).zipWithIndex.toMap
        val readAhead = 256 << 10
        val expected = {
          val reader = new FileReader21(new MemFile(bytes, "expected"))
          try schema.fields.map { f =>
            val v = reader.read(f, columnOf, 0, n, a)
            try (0 until n).map(Canon(v, _)) finally v.close()
          } finally reader.close()
        }

        // Every row, in consecutive batches, column by column in turn, as a scan without deletions reads them.
        val whole = new CountedFile(bytes, readAhead)
        val wholeReader = new FileReader21(whole)
        try for (start <- 0 until n by batchRows; f <- schema.fields)
          wholeReader.read(f, columnOf, start, math.min(batchRows, n - start), a).close()
        finally wholeReader.close()

        // The live rows of the same file with every 100th row deleted, a batch of them at a time.
        val live = (0L until n).filter(_ % 100 != 37).toArray
        val picked = new CountedFile(bytes, readAhead)
        val pickReader = new FileReader21(picked)
        try for (batch <- live.grouped(batchRows); (f, fi) <- schema.fields.zipWithIndex) {
          val v = pickReader.readRows(f, columnOf, batch, a)
          try {
            assert(v.getValueCount == batch.length)
            val bad = batch.indices.find(i => Canon(v, i) != expected(fi)(batch(i).toInt))
            assert(bad.isEmpty, s"${f.name} row ${bad.map(batch(_))}")
          } finally v.close()
        } finally pickReader.close()

        // Exactly read, each batch's chunks of each column were a read: 15 batches x 3 columns.
        assert(picked.reads <= whole.reads + schema.fields.size,
          s"picking read ${picked.reads} times (${picked.bytesRead} bytes), reading every row ${whole.reads} times (${whole.bytesRead} bytes)")
        assert(a.getAllocatedMemory == 0)
      } finally a.close()
    }

  test("rows far apart are read from their chunks only, not ahead") {
    val a = new RootAllocator()
    try {
      val bs = batches(schema, Seq(120000), 5L, 0.1, a)
      val (bytes, _) = try write(schema, bs, 2) finally bs.flatten.foreach(_.close())
      val columnOf = schema.fields.map(_.id).zipWithIndex.toMap
      val file = new CountedFile(bytes, 256 << 10)
      val reader = new FileReader21(file)
      val rows = (0L until 120000L by 4000L).toArray
      try for (f <- schema.fields) reader.readRows(f, columnOf, rows, a).close()
      finally reader.close()
      // 30 rows in each of 3 columns: a few KB of chunks each, where reading ahead from each
      // would read most of the file.
      assert(file.bytesRead < bytes.length / 4, s"${file.bytesRead} bytes of ${bytes.length} read for ${rows.length} rows")
      assert(a.getAllocatedMemory == 0)
    } finally a.close()
  }
}
