package sparklance.format.file.v1

import java.nio.file.{Files, Path, Paths}
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.FieldVector
import org.scalatest.funsuite.AnyFunSuite
import scala.io.Source
import sparklance.format.{CorruptFileException, Pylance, UnsupportedFeatureException}
import sparklance.format.file.{DataFileReader, RowBytes}
import sparklance.format.file.v2_1.Canon
import sparklance.format.io.{InputFile, LocalStorage}

/**
 * Legacy (V1, 0.2) data files written by pylance 14 (`data_storage_version="legacy"`, batches of
 * 100 rows) read by FileReaderV1: every column must match pylance's own read, whole, in row ranges
 * crossing batches, in scattered rows, and cut by a byte budget. write_v1.py writes the dataset and
 * the expected values; needs the project's virtual environment (see [[sparklance.format.Pylance]]).
 */
class FileReaderV1Suite extends AnyFunSuite {
  private lazy val (file: Path, expected: Map[String, IndexedSeq[String]]) = {
    val dir = Files.createTempDirectory("v1-pylance")
    val script = Paths.get(getClass.getResource("/v1/write_v1.py").toURI)
    val name = Pylance.run(script, dir.toString).linesIterator.toSeq.last.trim
    val src = Source.fromFile(dir.resolve("expected.tsv").toFile, "UTF-8")
    val want = try src.getLines().map { l => val p = l.split("\t", -1); p(0) -> p.toIndexedSeq.tail }.toMap finally src.close()
    (dir.resolve("t.lance/data").resolve(name), want)
  }

  private def open(): DataFileReader = DataFileReader.open(LocalStorage.openInput(file.toString), 0, 2)

  test("every column of a pylance V1 file matches pylance: whole, in ranges across batches, scattered rows") {
    Pylance.pythonOrCancel()
    val allocator = new RootAllocator()
    val reader = open()
    try {
      assert(reader.isInstanceOf[FileReaderV1])
      val n = reader.numRows.toInt
      assert(n == 1030)
      val schema = reader.schema
      assert(schema.fields.map(_.name).toSet == expected.keySet)
      for (f <- schema.fields) {
        val want = expected(f.name)
        def check(rows: Seq[Long], v: FieldVector, what: String): Unit = try {
          assert(v.getValueCount == rows.size, s"${f.name} $what")
          rows.zipWithIndex.foreach { case (r, i) => assert(Canon(v, i) == want(r.toInt), s"${f.name} row $r ($what)") }
        } finally v.close()
        check(0L until n, reader.read(f, identity, 0, n, allocator), "whole")
        for ((start, len) <- Seq((0L, 1), (95L, 10), (99L, 102), (250L, 700), (1000L, 30), (1029L, 1)))
          check(start until start + len, reader.read(f, identity, start, len, allocator), s"range $start+$len")
        val random = new scala.util.Random(f.id)
        val rows = (0L until n).filter(_ => random.nextInt(10) < 2).toArray
        check(rows.toSeq, reader.readRows(f, identity, rows, allocator), "scattered")
      }
      // A byte budget cuts a read after the batch that reaches it.
      val ls = schema.field("ls").get
      val cut = reader.read(ls, identity, 50, 900, allocator, 10)
      try {
        assert(cut.getValueCount == 50) // the rest of the first batch
        (0 until 50).foreach(i => assert(Canon(cut, i) == expected("ls")(50 + i)))
        assert(RowBytes(cut, 0, 50) >= 10)
      } finally cut.close()
      assert(allocator.getAllocatedMemory == 0)
    } finally { reader.close(); allocator.close() }
  }

  test("a damaged V1 file is a CorruptFileException; another version is refused by name") {
    Pylance.pythonOrCancel()
    val bytes = Files.readAllBytes(file)
    def mem(b: Array[Byte]): InputFile = new InputFile {
      def path = "damaged.lance"
      def length: Long = b.length
      def read(position: Long, len: Int): Array[Byte] = java.util.Arrays.copyOfRange(b, position.toInt, position.toInt + len)
      def close(): Unit = ()
    }
    intercept[CorruptFileException](DataFileReader.open(mem(bytes.take(10)), 0, 2))
    val noMagic = bytes.clone(); noMagic(noMagic.length - 1) = 'X'
    intercept[CorruptFileException](DataFileReader.open(mem(noMagic), 0, 2))
    val farMeta = bytes.clone()
    java.nio.ByteBuffer.wrap(farMeta).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(farMeta.length - 16, 1L << 40)
    intercept[CorruptFileException](DataFileReader.open(mem(farMeta), 0, 2))
    val v3 = bytes.clone(); v3(v3.length - 6) = 3
    val e = intercept[UnsupportedFeatureException](DataFileReader.open(mem(v3), 0, 2))
    assert(e.getMessage.contains("0.3"))
  }

  test("FileWriterV1 writes back what FileReaderV1 read from pylance's file, value for value, across its batches") {
    Pylance.pythonOrCancel()
    val allocator = new RootAllocator()
    val reader = open()
    val copy = Files.createTempFile("v1-copy", ".lance")
    try {
      val n = reader.numRows.toInt
      val vectors = reader.schema.fields.map(f => reader.read(f, identity, 0, n, allocator))
      val result = try {
        val w = new FileWriterV1(Files.newOutputStream(copy), reader.schema)
        w.write(vectors) // 1030 rows: batches of 1024 and 6
        w.finish()
      } finally vectors.foreach(_.close())
      assert(result.numRows == n && result.columnIndices.isEmpty)
      assert(result.fieldIds == reader.schema.allFields.map(_.id))
      val back = DataFileReader.open(LocalStorage.openInput(copy.toString), 0, 2)
      try {
        assert(back.numRows == n)
        for (f <- back.schema.fields) {
          val v = back.read(f, identity, 0, n, allocator)
          try (0 until n).foreach(i => assert(Canon(v, i) == expected(f.name)(i), s"${f.name} row $i")) finally v.close()
          val r = back.read(f, identity, 1020, 10, allocator)
          try (0 until 10).foreach(i => assert(Canon(r, i) == expected(f.name)(1020 + i), s"${f.name} row ${1020 + i}")) finally r.close()
        }
      } finally back.close()
      assert(allocator.getAllocatedMemory == 0)
    } finally { reader.close(); allocator.close() }
  }
}
