package sparklance.format.file.v2_0

import java.io.ByteArrayOutputStream
import java.nio.{ByteBuffer, ByteOrder}
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.FieldVector
import org.apache.arrow.vector.types.pojo.ArrowType
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random
import sparklance.format.{CorruptFileException, LanceException, UnsupportedFeatureException}
import sparklance.format.file.{ContainerWriter, TypedAny}
import sparklance.format.proto.Encodings20Protos.{ArrayEncoding, Constant}
import sparklance.format.proto.FileProtos
import sparklance.format.table.{LanceField, LanceSchema}
import sparklance.format.file.v2_0.TestFiles.RawPage

/** Damaged files fail with CorruptFileException / UnsupportedFeatureException naming the file. */
class CorruptFileSuite extends AnyFunSuite {
  private val i32 = new ArrowType.Int(32, true)
  private val schema = LanceSchema(Seq(
    LanceField(0, "i", i32, nullable = true),
    LanceField(1, "s", ArrowType.Utf8.INSTANCE, nullable = true),
    LanceField(2, "l", ArrowType.List.INSTANCE, nullable = true, Seq(LanceField(3, "item", ArrowType.LargeUtf8.INSTANCE, nullable = true))),
    LanceField(4, "st", ArrowType.Struct.INSTANCE, nullable = false, Seq(LanceField(5, "b", ArrowType.Bool.INSTANCE, nullable = true)))))
  private val columnOf = schema.allFields.map(_.id).zipWithIndex.toMap

  private lazy val good: Array[Byte] = {
    val a = new RootAllocator()
    try {
      val gen = new RandomVectors(11, 0.2)
      val out = new ByteArrayOutputStream
      val w = new FileWriter20(out, schema, maxPageBytes = 200)
      val vs: Seq[FieldVector] = schema.fields.map(gen.vector(_, 300, a))
      try w.write(vs) finally vs.foreach(_.close())
      w.finish()
      out.toByteArray
    } finally a.close()
  }

  private def readEverything(bytes: Array[Byte]): Unit = {
    val a = new RootAllocator()
    try {
      val r = new FileReader20(new BytesInputFile(bytes, "mem://bad.lance"))
      val n = math.min(r.numRows, 300L).toInt
      for (f <- schema.fields; start <- Seq(0, n / 3)) {
        val v = r.read(f, columnOf, start, n - start, a)
        v.close()
      }
    } finally a.close()
  }

  private def corrupt(bytes: Array[Byte]): CorruptFileException = {
    val e = intercept[CorruptFileException](readEverything(bytes))
    assert(e.path == "mem://bad.lance" && e.getMessage.contains("mem://bad.lance"))
    e
  }

  private def withFooter(bytes: Array[Byte])(edit: ByteBuffer => Unit): Array[Byte] = {
    val copy = bytes.clone()
    edit(ByteBuffer.wrap(copy, copy.length - 40, 40).slice().order(ByteOrder.LITTLE_ENDIAN))
    copy
  }

  test("the reference file reads") { readEverything(good) }

  test("truncated files") {
    for (cut <- Seq(1, 8, 39, 40, 41, 100, good.length / 2, good.length - 10, good.length)) {
      corrupt(good.dropRight(cut))
    }
    corrupt(good.take(45))
  }

  test("bad magic") {
    val e = corrupt(withFooter(good)(_.put(39, 'X'.toByte)))
    assert(e.getMessage.contains("LANC"))
  }

  test("unsupported footer versions") {
    for ((major, minor) <- Seq((0, 2), (2, 1), (2, 2), (9, 9))) {
      val e = intercept[UnsupportedFeatureException](readEverything(withFooter(good) { b =>
        b.putShort(32, major.toShort).putShort(34, minor.toShort)
      }))
      assert(e.getMessage.contains(s"$major.$minor") && e.getMessage.contains("mem://bad.lance"))
    }
    readEverything(withFooter(good)(_.putShort(32, 2.toShort).putShort(34, 0.toShort)))
  }

  test("footer positions and counts out of range") {
    corrupt(withFooter(good)(_.putLong(0, good.length + 10L)))
    corrupt(withFooter(good)(_.putLong(8, -5L)))
    corrupt(withFooter(good)(_.putLong(16, good.length - 20L)))
    corrupt(withFooter(good)(_.putInt(28, 1000)))
    corrupt(withFooter(good)(_.putInt(28, -1)))
    corrupt(withFooter(good)(_.putInt(24, 0)))
  }

  /** A file with one int32 column whose single page is given as raw buffer ranges. */
  private def oneColumn(length: Long, encoding: ArrayEncoding, buffers: Seq[(Long, Long)], payload: Int = 64): Array[Byte] = {
    val out = new ByteArrayOutputStream
    val w = new ContainerWriter(out)
    w.writeBuffer(new Array[Byte](payload), 0, payload)
    val fd = FileProtos.FileDescriptor.newBuilder().setSchema(FileProtos.Schema.newBuilder()
      .addAllFields(scala.jdk.CollectionConverters.SeqHasAsJava(LanceSchema(Seq(schema.fields.head)).toProto).asJava)).setLength(length).build()
    w.finish(Seq(fd.toByteArray), Seq(TestFiles.columnMetadata(Seq((buffers, length, encoding)))), 0, 3)
    out.toByteArray
  }

  private def readInt(bytes: Array[Byte], n: Int): Unit = {
    val a = new RootAllocator()
    try {
      val r = new FileReader20(new BytesInputFile(bytes, "mem://bad.lance"))
      r.read(schema.fields.head, _ => 0, 0, n, a).close()
    } finally a.close()
  }

  private def corruptInt(bytes: Array[Byte], n: Int): CorruptFileException = {
    val e = intercept[CorruptFileException](readInt(bytes, n))
    assert(e.getMessage.contains("mem://bad.lance"))
    e
  }

  private val nn32 = ArrayEncodings.noNulls(ArrayEncodings.flat(32, 0))

  test("page buffers past the end of the file") {
    readInt(oneColumn(16, nn32, Seq((0L, 64L))), 16)
    corruptInt(oneColumn(16, nn32, Seq((10000L, 64L))), 16)
    corruptInt(oneColumn(16, nn32, Seq((0L, 100000L))), 16)
    corruptInt(oneColumn(16, nn32, Seq((-64L, 64L))), 16)
    corruptInt(oneColumn(16, nn32, Seq((0L, Long.MaxValue))), 16)
  }

  test("a value buffer shorter than the page needs") {
    val e = corruptInt(oneColumn(17, nn32, Seq((0L, 64L))), 17)
    assert(e.getMessage.contains("column 0, page 0"))
  }

  test("a buffer index the page does not have") {
    corruptInt(oneColumn(4, ArrayEncodings.noNulls(ArrayEncodings.flat(32, 3)), Seq((0L, 64L))), 4)
  }

  test("a flat without its Buffer message, or of the wrong width") {
    val noBuffer = ArrayEncoding.newBuilder().setFlat(sparklance.format.proto.Encodings20Protos.Flat.newBuilder().setBitsPerValue(32)).build()
    corruptInt(oneColumn(4, noBuffer, Seq((0L, 64L))), 4)
    corruptInt(oneColumn(4, ArrayEncodings.flat(64, 0), Seq((0L, 64L))), 4)
    val e = intercept[UnsupportedFeatureException](readInt(oneColumn(4, ArrayEncodings.flat(12, 0), Seq((0L, 64L))), 4))
    assert(e.getMessage.contains("12"))
  }

  test("unknown and unsupported encodings name the encoding, the file and the column") {
    val constant = ArrayEncoding.newBuilder().setConstant(Constant.newBuilder()).build()
    val e = intercept[UnsupportedFeatureException](readInt(oneColumn(4, constant, Nil), 4))
    assert(e.getMessage.contains("constant") && e.getMessage.contains("mem://bad.lance") && e.getMessage.contains("column 0"))
    corruptInt(oneColumn(4, ArrayEncoding.getDefaultInstance, Nil), 4)
    corruptInt(oneColumn(4, ArrayEncodings.struct, Nil), 4)
    corruptInt(oneColumn(4, ArrayEncoding.parseFrom(Hex("7a 02 08 01")), Nil), 4) // field 15: unknown to this proto
  }

  test("a wrong type URL") {
    val out = new ByteArrayOutputStream
    val w = new ContainerWriter(out)
    val meta = TestFiles.columnMetadata(Seq((Nil, 4L, ArrayEncodings.allNulls))).toBuilder
    meta.getPagesBuilder(0).setEncoding(TypedAny.direct("lance.encodings21.PageLayout", ArrayEncodings.allNulls))
    val fd = FileProtos.FileDescriptor.newBuilder().setLength(4).build()
    w.finish(Seq(fd.toByteArray), Seq(meta.build()), 0, 3)
    val e = corruptInt(out.toByteArray, 4)
    assert(e.getMessage.contains("PageLayout"))
  }

  test("string offsets that decrease or point past the bytes") {
    val strField = schema.fields(1)
    def file(ends: Seq[Long], bytes: Int) = TestFiles.build(LanceSchema(Seq(strField)), ends.size, Seq(Seq(RawPage(ends.size,
      ArrayEncodings.binary(ArrayEncodings.noNulls(ArrayEncodings.flat(64, 0)), ArrayEncodings.flat(8, 1), 100), Seq({
        val b = ByteBuffer.allocate(8 * ends.size).order(ByteOrder.LITTLE_ENDIAN); ends.foreach(b.putLong); b.array()
      }, new Array[Byte](bytes))))))
    def read(bytes: Array[Byte]) = {
      val a = new RootAllocator()
      try new FileReader20(new BytesInputFile(bytes, "mem://bad.lance")).read(strField, _ => 0, 0, 3, a).close() finally a.close()
    }
    read(file(Seq(2, 4, 6), 6))
    intercept[CorruptFileException](read(file(Seq(4, 2, 6), 6)))
    intercept[CorruptFileException](read(file(Seq(2, 4, 60), 6)))
    intercept[CorruptFileException](read(file(Seq(2, 4, -1), 6)))
  }

  test("a list whose items column is shorter than its offsets say") {
    val listField = LanceSchema(Seq(schema.fields(2).copy(children = Seq(LanceField(3, "item", i32, nullable = true)))))
    val offsets = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(2).putLong(5).array()
    val bytes = TestFiles.build(listField, 2, Seq(
      Seq(RawPage(2, ArrayEncodings.list(ArrayEncodings.noNulls(ArrayEncodings.flat(64, 0)), 6, 5), Seq(offsets))),
      Seq(RawPage(3, nn32, Seq(new Array[Byte](12))))))
    val a = new RootAllocator()
    try {
      val e = intercept[CorruptFileException](new FileReader20(new BytesInputFile(bytes, "mem://bad.lance"))
        .read(listField.fields.head, Map(2 -> 0, 3 -> 1), 0, 2, a))
      assert(e.getMessage.contains("column 1"))
      assert(a.getAllocatedMemory == 0)
    } finally a.close()
  }

  test("random damage to the metadata never escapes as another exception") {
    val rnd = new Random(42)
    val metaStart = ByteBuffer.wrap(good, good.length - 40, 8).order(ByteOrder.LITTLE_ENDIAN).getLong.toInt - 200
    var outcomes = Map.empty[String, Int]
    for (_ <- 0 until 1500) {
      val bad = good.clone()
      for (_ <- 0 until 1 + rnd.nextInt(3)) {
        val at = metaStart + rnd.nextInt(good.length - metaStart)
        bad(at) = (if (rnd.nextBoolean()) rnd.nextInt(256) else bad(at) ^ (1 << rnd.nextInt(8))).toByte
      }
      val outcome =
        try { readEverything(bad); "read" }
        catch {
          case e: LanceException => e.getClass.getSimpleName
          case e: Throwable => fail(s"damage produced ${e.getClass.getName}: ${e.getMessage}", e)
        }
      outcomes += outcome -> (outcomes.getOrElse(outcome, 0) + 1)
    }
    assert(outcomes.getOrElse("CorruptFileException", 0) > 100, outcomes)
  }
}
