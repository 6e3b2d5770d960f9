package sparklance.format.file.v2_0

import java.io.ByteArrayOutputStream
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.FieldVector
import org.apache.arrow.vector.types.FloatingPointPrecision
import org.apache.arrow.vector.types.pojo.ArrowType
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.file.ContainerReader
import sparklance.format.table.{LanceField, LanceSchema}

/** Which byte ranges the reader fetches: the tail once, then only the pages it needs, each once. */
class ReadPatternSuite extends AnyFunSuite {
  private val schema = LanceSchema(Seq(
    LanceField(0, "a", new ArrowType.Int(64, true), nullable = true),
    LanceField(1, "s", ArrowType.Utf8.INSTANCE, nullable = true),
    LanceField(2, "l", ArrowType.List.INSTANCE, nullable = true,
      Seq(LanceField(3, "item", new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE), nullable = true)))))
  private val columnOf = Map(0 -> 0, 1 -> 1, 2 -> 2, 3 -> 3)
  private val rows = 100000

  private lazy val (file, expected) = {
    val gen = new RandomVectors(3, 0.1)
    TestFiles.random(schema, 10, rows / 10, maxPageBytes = 128 * 1024)(_ => gen)
  }

  /** The file ranges of every page buffer of column c. */
  private def pageRanges(c: Int): Seq[(Long, Long)] = {
    val meta = new ContainerReader(new BytesInputFile(file)).columns(c)
    meta.getPagesList.asScala.toSeq.flatMap(p => p.getBufferOffsetsList.asScala.zip(p.getBufferSizesList.asScala)
      .map { case (o, s) => (o.longValue, o + s) }.filter(r => r._2 > r._1))
  }

  test("opening reads the 64 KiB tail once") {
    assert(file.length > 1000000)
    val in = new BytesInputFile(file)
    val r = new FileReader20(in)
    assert(r.numRows == rows)
    assert(in.reads.size <= 2, in.reads)
    assert(in.reads.head == ((file.length - 65536L, 65536)))
  }

  test("a scan in 8192-row batches fetches each page of the read columns once, and nothing else") {
    val a = new RootAllocator()
    try {
      val in = new BytesInputFile(file)
      val r = new FileReader20(in)
      val opened = in.reads.size
      for (f <- Seq(schema.fields(1), schema.fields(2))) {
        var start = 0
        while (start < rows) {
          val n = math.min(8192, rows - start)
          val v = r.read(f, columnOf, start, n, a)
          try assert(Rows(v) == expected(schema.fields.indexOf(f)).slice(start, start + n)) finally v.close()
          start += n
        }
      }
      val reads = in.reads.drop(opened).map { case (p, n) => (p, p + n) }
      val wanted = Seq(1, 2, 3).flatMap(pageRanges)
      val unwanted = pageRanges(0)
      assert(pageRanges(1).size > 10 && pageRanges(3).size > 10)
      // every read covers needed pages only, and each page buffer was read exactly once
      reads.foreach { case (lo, hi) =>
        assert(!unwanted.exists { case (a0, a1) => a0 < hi && lo < a1 }, s"read $lo..$hi touches column 0")
      }
      // Bytes of the tail, read when the file opened, are not read again: of a buffer running
      // into it, only the part before it is read.
      val tailStart = file.length - 65536
      wanted.foreach { case (lo, hi) =>
        val covering =
          if (lo >= tailStart) reads.count { case (a0, a1) => a0 < hi && lo < a1 }
          else reads.count { case (a0, a1) => a0 <= lo && math.min(hi, tailStart) <= a1 }
        assert(covering == (if (lo >= tailStart) 0 else 1), s"page buffer $lo..$hi read $covering times")
      }
      assert(a.getAllocatedMemory == 0)
    } finally a.close()
  }

  test("reading rows out of order still gives the right rows") {
    val a = new RootAllocator()
    try {
      val r = new FileReader20(new BytesInputFile(file))
      for (start <- Seq(90000, 5, 50000, 49999, 0, 99990)) {
        val n = math.min(3000, rows - start)
        for (f <- schema.fields) {
          val v = r.read(f, columnOf, start, n, a)
          try assert(Rows(v) == expected(schema.fields.indexOf(f)).slice(start, start + n)) finally v.close()
        }
      }
      assert(a.getAllocatedMemory == 0)
    } finally a.close()
  }

  test("rows outside the file are refused") {
    val a = new RootAllocator()
    try {
      val r = new FileReader20(new BytesInputFile(file))
      intercept[IllegalArgumentException](r.read(schema.fields.head, columnOf, rows - 5, 10, a))
      intercept[IllegalArgumentException](r.read(schema.fields.head, columnOf, -1, 1, a))
      assert(a.getAllocatedMemory == 0)
    } finally a.close()
  }

  test("metadata larger than the tail is fetched with one more read") {
    val a = new RootAllocator()
    try {
      val field = schema.fields.head
      val v = new RandomVectors(4, 0.1).vector(field, 20000, a)
      val out = new ByteArrayOutputStream
      try {
        val w = new FileWriter20(out, LanceSchema(Seq(field)), maxPageBytes = 64)
        w.write(Seq(v))
        w.finish()
        val bytes = out.toByteArray
        val in = new BytesInputFile(bytes)
        val r = new FileReader20(in)
        assert(r.column(0).numPages == 2500)
        assert(in.reads.size == 2)
        val back = r.read(field, _ => 0, 0, 20000, a)
        try assert(Rows(back) == Rows(v)) finally back.close()
      } finally v.close()
      assert(a.getAllocatedMemory == 0)
    } finally a.close()
  }
}
