package sparklance.format.file.v2_1

import java.util.zip.GZIPInputStream
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.types.pojo.ArrowType
import org.scalatest.funsuite.AnyFunSuite
import scala.io.Source
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.io.InputFile
import sparklance.format.table.LanceField

/** In-memory file bytes. */
final class MemFile(bytes: Array[Byte], val path: String, readAhead: Int = 8 << 20) extends InputFile {
  def length: Long = bytes.length
  override def readAheadBytes: Int = readAhead
  def read(position: Long, len: Int): Array[Byte] = {
    if (position < 0 || position + len > bytes.length) throw new java.io.EOFException(s"$path: $len bytes at $position")
    java.util.Arrays.copyOfRange(bytes, position.toInt, position.toInt + len)
  }
  def close(): Unit = ()
}

object Corpus {
  val dir = "/lance21/"
  def bytes(name: String): Array[Byte] = {
    val in = getClass.getResourceAsStream(dir + name)
    require(in != null, s"missing test resource $name")
    try in.readAllBytes() finally in.close()
  }
  def expected(corpus: String): Map[String, IndexedSeq[String]] = {
    val src = Source.fromInputStream(new GZIPInputStream(getClass.getResourceAsStream(s"$dir$corpus.expected.gz")), "UTF-8")
    try src.getLines().map { l => val p = l.split("\t", -1); p(0) -> p.toIndexedSeq.tail }.toMap finally src.close()
  }
  def isLeaf(f: LanceField): Boolean = f.arrowType match {
    case _: ArrowType.FixedSizeList => true
    case _: ArrowType.Struct => f.metadata.get("lance-encoding:packed").contains("true") || f.children.isEmpty
    case _ => f.children.isEmpty
  }
  /** Leaf field id -> column, as the manifest's DataFile records it for 2.1+. */
  def columnsOf(fields: Seq[LanceField]): Map[Int, Int] = {
    def leaves(f: LanceField): Seq[LanceField] = if (isLeaf(f)) Seq(f) else f.children.flatMap(leaves)
    fields.flatMap(leaves).map(_.id).zipWithIndex.toMap
  }
  def open(name: String, readAhead: Int = 8 << 20) = new FileReader21(new MemFile(bytes(name), name, readAhead))
}

class FileReader21Suite extends AnyFunSuite {
  // Packed structs ("packed", "vpacked") are read too.
  private val unsupportedColumns = Set.empty[String]

  for ((corpus, version) <- Seq("tiny", "prim", "nested", "wide", "comp", "pages", "fsst").flatMap(c => Seq(c -> "2.1", c -> "2.2")) ++
      Seq("packed" -> "2.1", "vpacked" -> "2.2")) {
    val file = s"${corpus}_$version.lance"
    test(s"$file: every column matches pylance, whole, in row ranges and in scattered rows") {
      locally {
        val expected = Corpus.expected(corpus)
        val reader = Corpus.open(file)
        val allocator = new RootAllocator()
        try {
          val schema = reader.schema
          val cols = Corpus.columnsOf(schema.fields)
          assert(reader.numColumns == cols.size)
          val n = reader.numRows.toInt
          for (f <- schema.fields) {
            val want = expected(f.name)
            assert(want.size == n, f.name)
            if (unsupportedColumns(f.name)) {
              assertThrows[UnsupportedFeatureException](reader.read(f, cols, 0, n, allocator))
            } else {
              val v = reader.read(f, cols, 0, n, allocator)
              try {
                assert(v.getField.getType == f.arrowType, f.name)
                val got = (0 until n).map(Canon(v, _))
                val bad = (0 until n).find(i => got(i) != want(i))
                assert(bad.isEmpty, s"${f.name} row ${bad.getOrElse(0)}: got ${bad.map(got(_))}, want ${bad.map(want(_))}")
              } finally v.close()
              // consecutive ranges of uneven size, by a reader holding decoded pages, and by fresh
              // readers reading ahead far and by a few bytes (windows of pages decoded alone)
              for (ranger <- Seq(reader, Corpus.open(file), Corpus.open(file, readAhead = 1000))) {
                var start = 0
                val step = 1 + n / 7
                while (start < n) {
                  val len = math.min(step, n - start)
                  val r = ranger.read(f, cols, start, len, allocator)
                  try {
                    for (i <- 0 until len) assert(Canon(r, i) == want(start + i), s"${f.name} row ${start + i} in range $start+$len")
                  } finally r.close()
                  start += len
                }
                if (ranger ne reader) ranger.close()
              }
              // Scattered rows picked by a fresh reader (chunk by chunk), and by one holding decoded pages.
              val random = new scala.util.Random(f.id)
              val picks = Seq(Array(0L), Array(n - 1L), (0L until n by 37).toArray, (0L until n).filter(_ => random.nextInt(100) == 0).toArray,
                (0L until n).filter(_ => random.nextInt(10) < 3).toArray).filter(_.nonEmpty)
              for ((rows, k) <- picks.zipWithIndex; fresh <- Seq(true, false)) {
                val picker = if (fresh) Corpus.open(file) else reader
                val r = try picker.readRows(f, cols, rows, allocator) finally if (fresh) picker.close()
                try {
                  assert(r.getValueCount == rows.length)
                  for (i <- rows.indices) assert(Canon(r, i) == want(rows(i).toInt), s"${f.name} row ${rows(i)} of pick $k (fresh reader: $fresh)")
                } finally r.close()
              }
              // The same picks under a budget of Arrow memory: the first rows that fit it, one at least.
              for ((rows, k) <- picks.zipWithIndex; maxBytes <- Seq(1L, 4096L)) {
                val r = reader.readRows(f, cols, rows, allocator, maxBytes)
                try {
                  val taken = r.getValueCount
                  assert(taken >= 1 && taken <= rows.length, s"${f.name} pick $k in $maxBytes bytes: $taken rows")
                  // A null takes no value bytes, so nulls after the first row still fit one byte.
                  if (maxBytes == 1 && rows.length > 1 && want(rows(1).toInt) != "null")
                    assert(taken == 1, s"${f.name} pick $k in one byte: $taken rows")
                  for (i <- 0 until taken) assert(Canon(r, i) == want(rows(i).toInt), s"${f.name} row ${rows(i)} of pick $k in $maxBytes bytes")
                } finally r.close()
              }
            }
          }
          assert(allocator.getAllocatedMemory == 0)
        } finally { allocator.close(); reader.close() }
      }
    }
  }

  test("nested projection: a struct with only some children") {
    val reader = Corpus.open("nested_2.2.lance")
    val allocator = new RootAllocator()
    try {
      val cols = Corpus.columnsOf(reader.schema.fields)
      val f = reader.schema.field("struct_n").get
      val onlyB = f.copy(children = f.children.filter(_.name == "b"))
      val v = reader.read(onlyB, cols, 10, 20, allocator)
      val want = Corpus.expected("nested")("struct_n").slice(10, 30).map(s => if (s == "null") s else "{" + s.substring(s.indexOf(",b=") + 1))
      try assert((0 until 20).map(Canon(v, _)) == want) finally v.close()
      assert(allocator.getAllocatedMemory == 0)
    } finally { allocator.close(); reader.close() }
  }

  test("only the columns of the requested field are opened") {
    val reader = Corpus.open("prim_2.1.lance")
    val allocator = new RootAllocator()
    try {
      val cols = Corpus.columnsOf(reader.schema.fields)
      val f = reader.schema.field("f64").get
      reader.read(f, cols, 0, 10, allocator).close()
      assert((0 until reader.numColumns).filter(reader.columnOpened) == Seq(cols(f.id)))
    } finally { allocator.close(); reader.close() }
  }

  test("a truncated file is a CorruptFileException") {
    val bytes = Corpus.bytes("tiny_2.1.lance")
    for (cut <- Seq(10, 39, bytes.length / 2, bytes.length - 1)) {
      val e = intercept[CorruptFileException](new FileReader21(new MemFile(bytes.take(cut), "cut.lance")))
      assert(e.getMessage.contains("cut.lance"))
    }
  }

  test("damaged page bytes give CorruptFileException, never another exception") {
    val bytes = Corpus.bytes("nested_2.1.lance")
    val rnd = new scala.util.Random(7)
    for (round <- 0 until 60) {
      val b = bytes.clone()
      // damage the page data (everything before the metadata at the end)
      for (_ <- 0 until 20) { val at = rnd.nextInt(bytes.length - 4000); b(at) = rnd.nextInt(256).toByte }
      val reader = new FileReader21(new MemFile(b, "damaged.lance"))
      val allocator = new RootAllocator()
      try {
        val cols = Corpus.columnsOf(reader.schema.fields)
        for (f <- reader.schema.fields) {
          try reader.read(f, cols, 0, reader.numRows.toInt, allocator).close()
          catch { case _: CorruptFileException | _: UnsupportedFeatureException => }
        }
        assert(allocator.getAllocatedMemory == 0)
      } finally { allocator.close(); reader.close() }
    }
  }

  test("an unknown encoding is an UnsupportedFeatureException naming it, the file and the column") {
    import sparklance.format.proto.Encodings21Protos._
    import sparklance.format.file.{ContainerReader, TypedAny}
    val bytes = Corpus.bytes("tiny_2.2.lance")
    val container = new ContainerReader(new MemFile(bytes, "x"))
    val col0 = container.columns(0)
    val page = col0.getPages(0)
    val layout = PageLayout.parseFrom(TypedAny.unpackDirect(page.getEncoding, "lance.encodings21.PageLayout", "x", "page"))
    val range = CompressiveEncoding.newBuilder().setRange(Range.newBuilder().setUncompressedBitsPerValue(32)).build()
    val changed = layout.toBuilder.setMiniBlockLayout(layout.getMiniBlockLayout.toBuilder.setValueCompression(range)).build()
    val newCol = col0.toBuilder.setPages(0, page.toBuilder.setEncoding(TypedAny.direct("lance.encodings21.PageLayout", changed))).build()
    val file = rebuild(bytes, container, container.columns.updated(0, newCol))
    val reader = new FileReader21(new MemFile(file, "weird.lance"))
    val allocator = new RootAllocator()
    try {
      val e = intercept[UnsupportedFeatureException](reader.read(reader.schema.fields.head, Corpus.columnsOf(reader.schema.fields), 0, 3, allocator))
      assert(e.getMessage.contains("range") && e.getMessage.contains("weird.lance") && e.getMessage.contains("column 0"), e.getMessage)
      assert(allocator.getAllocatedMemory == 0)
    } finally { allocator.close(); reader.close() }
  }

  test("a file of another version is refused") {
    val bytes = Corpus.bytes("tiny_2.1.lance").clone()
    bytes(bytes.length - 6) = 3 // minor version 3
    assertThrows[UnsupportedFeatureException](new FileReader21(new MemFile(bytes, "v23.lance")))
  }

  /** The same file with other column metadata, appended after the original bytes. */
  private def rebuild(bytes: Array[Byte], c: sparklance.format.file.ContainerReader,
      cols: Seq[sparklance.format.proto.File2Protos.ColumnMetadata]): Array[Byte] = {
    val f = c.footer
    val out = new java.io.ByteArrayOutputStream()
    val body = bytes.take(bytes.length - 40)
    out.write(body)
    val metaStart = out.size
    val entries = cols.map { m => val p = out.size.toLong; out.write(m.toByteArray); (p, m.getSerializedSize.toLong) }
    val cmo = out.size
    val bb = java.nio.ByteBuffer.allocate(16 * entries.size).order(java.nio.ByteOrder.LITTLE_ENDIAN)
    entries.foreach { case (p, l) => bb.putLong(p).putLong(l) }
    out.write(bb.array())
    val gbo = out.size
    out.write(bytes, f.globalBufferOffsetsPosition.toInt, 16 * f.numGlobalBuffers)
    out.write(f.copy(columnMetaStart = metaStart, columnMetaOffsetsPosition = cmo, globalBufferOffsetsPosition = gbo).toBytes)
    out.toByteArray
  }
}
