package sparklance.format.file.v2_0

import java.io.ByteArrayOutputStream
import java.nio.{ByteBuffer, ByteOrder}
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.{BitVector, Float4Vector, IntVector, VarCharVector}
import org.apache.arrow.vector.complex.FixedSizeListVector
import org.apache.arrow.vector.types.FloatingPointPrecision
import org.apache.arrow.vector.types.pojo.ArrowType
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.table.{LanceField, LanceSchema}
import sparklance.format.file.v2_0.TestFiles.page

/** The worked examples of LANCE-FILE-2.0.md, byte for byte. */
class ExampleFilesSuite extends AnyFunSuite {
  private val int32 = new ArrowType.Int(32, true)
  private def u64s(vs: Long*): Array[Byte] = {
    val b = ByteBuffer.allocate(8 * vs.size).order(ByteOrder.LITTLE_ENDIAN)
    vs.foreach(b.putLong)
    b.array()
  }
  private def i32s(vs: Int*): Array[Byte] = {
    val b = ByteBuffer.allocate(4 * vs.size).order(ByteOrder.LITTLE_ENDIAN)
    vs.foreach(b.putInt)
    b.array()
  }
  private def ident(f: LanceSchema): Int => Int = {
    val ids = f.allFields.map(_.id)
    id => ids.indexOf(id)
  }

  private def withAllocator(body: RootAllocator => Unit): Unit = {
    val a = new RootAllocator()
    try {
      body(a)
      assert(a.getAllocatedMemory == 0, "vectors leaked")
    } finally a.close()
  }

  private def readAll(bytes: Array[Byte], schema: LanceSchema, a: RootAllocator): Seq[IndexedSeq[Any]] = {
    val r = new FileReader20(new BytesInputFile(bytes))
    try schema.fields.map { f =>
      val v = r.read(f, ident(schema), 0, r.numRows.toInt, a)
      try Rows(v) finally v.close()
    } finally r.close()
  }

  private def s(x: String): Seq[Byte] = x.getBytes("UTF-8").toSeq
  private def i(x: Int): Seq[Byte] = i32s(x).toSeq

  // §1.1: LanceFileWriter(version="2.0"), one nullable int32 column x = [1, NULL, 3]
  private val example348: Array[Byte] = Hex(
    "05" + "48" * 63 +
      "01000000 00000000 03000000" + "48" * 52 +
      "0a 1b 0a 19 12 01 78 20 ff ff ff ff ff ff ff ff ff 01 2a 05 69 6e 74 33 32 30 01 38 01 10 03" +
      "0a 29 12 27 0a 25 0a 1f") ++ Hex.ascii("/lance.encodings.ColumnEncoding") ++ Hex(
      "12 02 0a 00" +
      "12 48 0a 02 00 40 12 02 01 0c 18 03 22 3c 12 3a 0a 38 0a 1e") ++ Hex.ascii("/lance.encodings.ArrayEncoding") ++ Hex(
      "12 16 12 14 12 12 0a 06 0a 04 08 01 12 00 12 08 0a 06 08 20 12 02 08 01" +
      "9f00000000000000 7500000000000000" +
      "8000000000000000 1f00000000000000" +
      "9f00000000000000 1401000000000000 2401000000000000 01000000 01000000 0000 0300 4c414e43")
  private val xSchema = LanceSchema(Seq(LanceField(0, "x", int32, nullable = true)))

  test("§1.1: the 348-byte file is reproduced exactly") {
    assert(example348.length == 348)
    withAllocator { a =>
      val v = new IntVector("x", a)
      try {
        v.allocateNew(3)
        v.set(0, 1); v.setNull(1); v.set(2, 3)
        v.setValueCount(3)
        val out = new ByteArrayOutputStream
        val w = new FileWriter20(out, xSchema)
        w.write(Seq(v))
        val result = w.finish()
        assert(result == FileWriter20.Result(3, 348, Seq(0), Seq(0)))
        assert(out.toByteArray.toSeq == example348.toSeq)
      } finally v.close()
    }
  }

  test("§1.1: the 348-byte file decodes") {
    withAllocator { a =>
      val r = new FileReader20(new BytesInputFile(example348))
      assert(r.numRows == 3 && r.numColumns == 1)
      assert(r.schema == xSchema)
      val v = r.read(r.schema.fields.head, _ => 0, 0, 3, a)
      try {
        assert(v.isInstanceOf[IntVector] && v.getName == "x")
        assert(Rows(v) == Seq(i(1), null, i(3)))
      } finally v.close()
      val tail = r.read(r.schema.fields.head, _ => 0, 1, 2, a)
      try assert(Rows(tail) == Seq(null, i(3))) finally tail.close()
      r.close()
    }
  }

  private val strSchema = LanceSchema(Seq(LanceField(0, "s", ArrowType.Utf8.INSTANCE, nullable = true)))
  private val strEncoding = Hex("32 1a 0a 0c 12 0a 0a 08 0a 06 0a 04 08 40 12 00 12 08 0a 06 08 08 12 02 08 01 18 06")

  test("§2.5: strings [ab, NULL, '', xyz, NULL] decode") {
    val file = TestFiles.build(strSchema, 5, Seq(Seq(page(5, strEncoding, u64s(2, 8, 2, 5, 11), Hex.ascii("abxyz")))))
    withAllocator { a =>
      assert(readAll(file, strSchema, a) == Seq(Seq(s("ab"), null, s(""), s("xyz"), null)))
    }
  }

  test("§2.5: the writer produces the same string page") {
    withAllocator { a =>
      val v = new VarCharVector("s", a)
      try {
        v.allocateNew()
        v.setSafe(0, s("ab").toArray); v.setNull(1); v.setSafe(2, Array.emptyByteArray); v.setSafe(3, s("xyz").toArray); v.setNull(4)
        v.setValueCount(5)
        val out = new ByteArrayOutputStream
        val w = new FileWriter20(out, strSchema)
        w.write(Seq(v))
        w.finish()
        val r = new FileReader20(new BytesInputFile(out.toByteArray))
        assert(r.column(0).encoding(0).toByteArray.toSeq == strEncoding.toSeq)
        assert(r.column(0).numPages == 1)
        val bytes = out.toByteArray
        assert(bytes.slice(0, 40).toSeq == u64s(2, 8, 2, 5, 11).toSeq)
        assert(bytes.slice(64, 69).toSeq == s("abxyz"))
      } finally v.close()
    }
  }

  test("§2.6: a string dictionary page decodes (u8 indices, 0 = null)") {
    val enc = Hex("3a 30 0a 0c 12 0a 0a 08 0a 06 0a 04 08 08 12 00 12 1e 32 1c 0a 0e 12 0c 0a 0a 0a 08 0a 06 08 40 12 02 08 01" +
      "12 08 0a 06 08 08 12 02 08 02 18 0d 18 03")
    val indices = Array.tabulate[Byte](100)(i => if (i % 10 == 9) 0 else (i % 3 + 1).toByte)
    val file = TestFiles.build(strSchema, 100,
      Seq(Seq(page(100, enc, indices, u64s(3, 8, 12), Hex.ascii("redgreenblue")))))
    val colors = Seq("red", "green", "blue")
    withAllocator { a =>
      val expected = (0 until 100).map(i => if (i % 10 == 9) null else s(colors(i % 3)))
      assert(readAll(file, strSchema, a) == Seq(expected))
    }
  }

  test("§2.6: one-null-item and one-empty-item dictionaries") {
    val enc = ArrayEncodings.binary(ArrayEncodings.noNulls(ArrayEncodings.flat(64, 1)), ArrayEncodings.flat(8, 2), 1)
    def dict(items: Int) = sparklance.format.proto.Encodings20Protos.ArrayEncoding.newBuilder()
      .setDictionary(sparklance.format.proto.Encodings20Protos.Dictionary.newBuilder()
        .setIndices(ArrayEncodings.noNulls(ArrayEncodings.flat(8, 0))).setItems(enc).setNumDictionaryItems(items)).build()
    val allNull = TestFiles.RawPage(300, dict(1), Seq(new Array[Byte](300), u64s(1), Array.emptyByteArray))
    val allEmpty = TestFiles.RawPage(200, dict(1), Seq(Array.fill[Byte](200)(1), u64s(0), Array.emptyByteArray))
    val file = TestFiles.build(strSchema, 500, Seq(Seq(allNull, allEmpty)))
    withAllocator { a =>
      assert(readAll(file, strSchema, a) == Seq(Seq.fill(300)(null) ++ Seq.fill(200)(s(""))))
    }
  }

  test("§2.5: an all-null string page is binary with adj 1, or all_nulls") {
    val binaryNulls = TestFiles.RawPage(3, ArrayEncodings.binary(ArrayEncodings.noNulls(ArrayEncodings.flat(64, 0)),
      ArrayEncodings.flat(8, 1), 1), Seq(u64s(1, 1, 1), Array.emptyByteArray))
    val allNulls = TestFiles.RawPage(2, ArrayEncodings.allNulls, Nil)
    val file = TestFiles.build(strSchema, 5, Seq(Seq(binaryNulls, allNulls)))
    withAllocator { a => assert(readAll(file, strSchema, a) == Seq(Seq.fill(5)(null))) }
  }

  test("§2.4: bool [true, NULL, false, true, true] is validity 1d, values 19") {
    val schema = LanceSchema(Seq(LanceField(0, "b", ArrowType.Bool.INSTANCE, nullable = true)))
    withAllocator { a =>
      val v = new BitVector("b", a)
      try {
        v.allocateNew(5)
        v.set(0, 1); v.setNull(1); v.set(2, 0); v.set(3, 1); v.set(4, 1)
        v.setValueCount(5)
        val out = new ByteArrayOutputStream
        val w = new FileWriter20(out, schema)
        w.write(Seq(v))
        w.finish()
        val bytes = out.toByteArray
        assert(bytes(0) == 0x1d && bytes(64) == 0x19)
        assert(readAll(bytes, schema, a) == Seq(Seq(true, null, false, true, true)))
      } finally v.close()
    }
  }

  test("§2.7: fixed_size_list<float32, 2> with a null row, written and read as in the spec") {
    val field = LanceField(0, "v", new ArrowType.FixedSizeList(2), nullable = true,
      arrowItemType = Some(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)))
    val schema = LanceSchema(Seq(field))
    val enc = Hex("12 20 12 1e 0a 06 0a 04 08 01 12 00 12 14 1a 12 08 02 12 0e 12 0c 0a 0a 0a 08 0a 06 08 20 12 02 08 01")
    withAllocator { a =>
      val v = field.toArrow.createVector(a).asInstanceOf[FixedSizeListVector]
      try {
        v.allocateNew()
        val items = v.getDataVector.asInstanceOf[Float4Vector]
        items.allocateNew(10)
        (0 until 10).foreach(i => items.set(i, (i + 1).toFloat))
        items.setValueCount(10)
        (0 until 5).foreach(i => if (i == 1) v.setNull(i) else v.setNotNull(i))
        v.setValueCount(5)
        val out = new ByteArrayOutputStream
        val w = new FileWriter20(out, schema)
        w.write(Seq(v))
        w.finish()
        val r = new FileReader20(new BytesInputFile(out.toByteArray))
        assert(r.column(0).encoding(0).toByteArray.toSeq == enc.toSeq)
        val back = r.read(field, _ => 0, 0, 5, a)
        try assert(Rows(back) == Rows(v)) finally back.close()
      } finally v.close()
    }
  }

  private val listSchema = LanceSchema(Seq(LanceField(0, "l", ArrowType.List.INSTANCE, nullable = true,
    children = Seq(LanceField(1, "item", int32, nullable = true)))))
  private val nnFlat64 = "0a 0c 12 0a 0a 08 0a 06 0a 04 08 40 12 00"
  private val nnFlat32 = Hex("12 0a 0a 08 0a 06 0a 04 08 20 12 00")

  test("§2.8: list<int32> [[1,2], NULL, [], [3], NULL]") {
    val file = TestFiles.build(listSchema, 5, Seq(
      Seq(page(5, Hex("22 12 " + nnFlat64 + " 10 04 18 03"), u64s(2, 6, 2, 3, 7))),
      Seq(page(3, nnFlat32, i32s(1, 2, 3)))))
    withAllocator { a =>
      assert(readAll(file, listSchema, a) == Seq(Seq(Seq(i(1), i(2)), null, Seq(), Seq(i(3)), null)))
    }
  }

  test("§2.8: a list in two pages, the second starting with a null list") {
    val file = TestFiles.build(listSchema, 4, Seq(
      Seq(page(2, Hex("22 12 " + nnFlat64 + " 10 04 18 03"), u64s(2, 3)),
        page(2, Hex("22 12 " + nnFlat64 + " 10 04 18 03"), u64s(4, 3))),
      Seq(page(3, nnFlat32, i32s(1, 2, 3)), page(3, nnFlat32, i32s(4, 5, 6)))))
    withAllocator { a =>
      val expected = Seq(Seq(i(1), i(2)), Seq(i(3)), null, Seq(i(4), i(5), i(6)))
      assert(readAll(file, listSchema, a) == Seq(expected))
      val r = new FileReader20(new BytesInputFile(file))
      for (start <- 0 until 4; n <- 0 to 4 - start) {
        val v = r.read(listSchema.fields.head, ident(listSchema), start, n, a)
        try assert(Rows(v) == expected.slice(start, start + n), s"rows $start+$n") finally v.close()
      }
    }
  }

  test("§2.8: list<list<int32>> [[[1,2],[],NULL], NULL, [[3]], [], [NULL]]") {
    val schema = LanceSchema(Seq(LanceField(0, "ll", ArrowType.List.INSTANCE, nullable = true, children = Seq(
      LanceField(1, "item", ArrowType.List.INSTANCE, nullable = true, children = Seq(LanceField(2, "item", int32, nullable = true)))))))
    val file = TestFiles.build(schema, 5, Seq(
      Seq(page(5, Hex("22 12 " + nnFlat64 + " 10 06 18 05"), u64s(3, 9, 4, 4, 5))),
      Seq(page(5, Hex("22 12 " + nnFlat64 + " 10 04 18 03"), u64s(2, 2, 6, 3, 7))),
      Seq(page(3, nnFlat32, i32s(1, 2, 3)))))
    withAllocator { a =>
      assert(readAll(file, schema, a) == Seq(Seq(Seq(Seq(i(1), i(2)), Seq(), null), null, Seq(Seq(i(3))), Seq(), Seq(null))))
    }
  }

  test("§2.8: list<struct<x int32, y string>>") {
    val schema = LanceSchema(Seq(LanceField(0, "ls", ArrowType.List.INSTANCE, nullable = true, children = Seq(
      LanceField(1, "item", ArrowType.Struct.INSTANCE, nullable = true, children = Seq(
        LanceField(2, "x", int32, nullable = true), LanceField(3, "y", ArrowType.Utf8.INSTANCE, nullable = true)))))))
    val sn32 = ArrayEncodings.someNulls(ArrayEncodings.flat(1, 0), ArrayEncodings.flat(32, 1))
    val bin = ArrayEncodings.binary(ArrayEncodings.noNulls(ArrayEncodings.flat(64, 0)), ArrayEncodings.flat(8, 1), 4)
    val file = TestFiles.build(schema, 5, Seq(
      Seq(page(5, Hex("22 12 " + nnFlat64 + " 10 05 18 04"), u64s(2, 2, 7, 3, 4))),
      Seq(TestFiles.RawPage(4, ArrayEncodings.struct, Nil)),
      Seq(TestFiles.RawPage(4, sn32, Seq(Hex("0d"), i32s(1, 0, 4, 5)))),
      Seq(TestFiles.RawPage(4, bin, Seq(u64s(1, 2, 6, 3), Hex.ascii("abe"))))))
    withAllocator { a =>
      def st(x: Any, y: Any) = List("x" -> x, "y" -> y)
      assert(readAll(file, schema, a) == Seq(Seq(
        Seq(st(i(1), s("a")), st(null, s("b"))), Seq(), null, Seq(st(i(4), null)), Seq(st(i(5), s("e"))))))
    }
  }
}
