package sparklance.format.file.v2_0

import java.io.ByteArrayOutputStream
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.FieldVector
import org.apache.arrow.vector.types.{DateUnit, FloatingPointPrecision, TimeUnit}
import org.apache.arrow.vector.types.pojo.{ArrowType, Field}
import scala.jdk.CollectionConverters._
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.table.{LanceField, LanceSchema}

/** Write → read round trips of every supported type, with random nulls, sizes and batches. */
class RoundTripSuite extends AnyFunSuite {
  private val primitives: Seq[(String, ArrowType)] = Seq(
    "bool" -> ArrowType.Bool.INSTANCE,
    "i8" -> new ArrowType.Int(8, true), "i16" -> new ArrowType.Int(16, true),
    "i32" -> new ArrowType.Int(32, true), "i64" -> new ArrowType.Int(64, true),
    "u8" -> new ArrowType.Int(8, false), "u16" -> new ArrowType.Int(16, false),
    "u32" -> new ArrowType.Int(32, false), "u64" -> new ArrowType.Int(64, false),
    "f16" -> new ArrowType.FloatingPoint(FloatingPointPrecision.HALF),
    "f32" -> new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE),
    "f64" -> new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE),
    "str" -> ArrowType.Utf8.INSTANCE, "lstr" -> ArrowType.LargeUtf8.INSTANCE,
    "bin" -> ArrowType.Binary.INSTANCE, "lbin" -> ArrowType.LargeBinary.INSTANCE,
    "d32" -> new ArrowType.Date(DateUnit.DAY), "d64" -> new ArrowType.Date(DateUnit.MILLISECOND),
    "ts_s" -> new ArrowType.Timestamp(TimeUnit.SECOND, null),
    "ts_ms" -> new ArrowType.Timestamp(TimeUnit.MILLISECOND, "America/New_York"),
    "ts_us" -> new ArrowType.Timestamp(TimeUnit.MICROSECOND, "UTC"),
    "ts_ns" -> new ArrowType.Timestamp(TimeUnit.NANOSECOND, null),
    "t32s" -> new ArrowType.Time(TimeUnit.SECOND, 32), "t32ms" -> new ArrowType.Time(TimeUnit.MILLISECOND, 32),
    "t64us" -> new ArrowType.Time(TimeUnit.MICROSECOND, 64), "t64ns" -> new ArrowType.Time(TimeUnit.NANOSECOND, 64),
    "dur" -> new ArrowType.Duration(TimeUnit.MICROSECOND),
    "dec" -> new ArrowType.Decimal(12, 2, 128), "dec256" -> new ArrowType.Decimal(40, 2, 256),
    "fsb" -> new ArrowType.FixedSizeBinary(6),
    "nul" -> ArrowType.Null.INSTANCE)

  private def fsl(id: Int, item: ArrowType, dim: Int) =
    LanceField(id, s"fsl$id", new ArrowType.FixedSizeList(dim), nullable = true, arrowItemType = Some(item))

  private val i32 = new ArrowType.Int(32, true)

  /** Top-level fields with ids assigned pre-order, as a table schema would. */
  private def schemaOf(build: (() => Int) => Seq[LanceField]): LanceSchema = {
    var next = 0
    LanceSchema(build(() => { next += 1; next - 1 }))
  }

  private val flatSchema = schemaOf(id => primitives.map { case (n, t) => LanceField(id(), n, t, nullable = true) } ++
    Seq(fsl(id(), new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE), 3), fsl(id(), ArrowType.Bool.INSTANCE, 5),
      fsl(id(), new ArrowType.Decimal(10, 1, 128), 2)))

  private val nestedSchema = schemaOf { id =>
    def f(name: String, t: ArrowType, kids: LanceField*) = LanceField(id(), name, t, nullable = true, kids)
    Seq(
      f("l", ArrowType.List.INSTANCE, f("item", i32)),
      f("ll", ArrowType.LargeList.INSTANCE, f("item", ArrowType.Utf8.INSTANCE)),
      f("lll", ArrowType.List.INSTANCE, f("item", ArrowType.LargeList.INSTANCE, f("item", new ArrowType.Int(64, true)))),
      f("st", ArrowType.Struct.INSTANCE, f("a", i32), f("b", ArrowType.Binary.INSTANCE),
        f("inner", ArrowType.Struct.INSTANCE, f("c", ArrowType.Bool.INSTANCE), f("l", ArrowType.List.INSTANCE, f("item", i32)))),
      f("ls", ArrowType.List.INSTANCE, f("item", ArrowType.Struct.INSTANCE, f("x", i32), f("y", ArrowType.LargeUtf8.INSTANCE))),
      { val id0 = id(); LanceField(id0, "lf", ArrowType.List.INSTANCE, nullable = true,
        Seq(LanceField(id(), "item", new ArrowType.FixedSizeList(2), nullable = true, arrowItemType = Some(i32)))) })
  }

  /** Field equality, except that Arrow Java names every list child `$data$` whatever the field says. */
  private def sameShape(a: Field, b: Field, listChild: Boolean = false): Boolean = {
    val isList = a.getType.isInstanceOf[ArrowType.List] || a.getType.isInstanceOf[ArrowType.LargeList] ||
      a.getType.isInstanceOf[ArrowType.FixedSizeList]
    (listChild || a.getName == b.getName) && a.getType == b.getType && a.isNullable == b.isNullable &&
      a.getChildren.size == b.getChildren.size &&
      a.getChildren.asScala.zip(b.getChildren.asScala).forall { case (x, y) => sameShape(x, y, isList) }
  }

  /** Writes `batches` of the given sizes; returns the file and the rows written per field. */
  private def write(schema: LanceSchema, sizes: Seq[Int], seed: Long, nullRate: Double, maxPageBytes: Long,
      a: RootAllocator): (Array[Byte], FileWriter20.Result, Seq[IndexedSeq[Any]]) = {
    val gen = new RandomVectors(seed, nullRate)
    val out = new ByteArrayOutputStream
    val w = new FileWriter20(out, schema, maxPageBytes)
    val expected = schema.fields.map(_ => IndexedSeq.newBuilder[Any])
    sizes.foreach { n =>
      val vs: Seq[FieldVector] = schema.fields.map(f => gen.vector(f, n, a))
      try {
        w.write(vs)
        vs.zip(expected).foreach { case (v, e) => e ++= Rows(v) }
      } finally vs.foreach(_.close())
    }
    val result = w.finish()
    (out.toByteArray, result, expected.map(_.result()))
  }

  private def check(schema: LanceSchema, sizes: Seq[Int], seed: Long, nullRate: Double, maxPageBytes: Long = 8L << 20,
      batch: Int = 8192): FileReader20 = {
    val a = new RootAllocator()
    try {
      val (bytes, result, expected) = write(schema, sizes, seed, nullRate, maxPageBytes, a)
      assert(result.numRows == sizes.sum && result.sizeBytes == bytes.length)
      assert(result.fieldIds == schema.allFields.map(_.id))
      assert(result.columnIndices == schema.allFields.indices)
      val r = new FileReader20(new BytesInputFile(bytes))
      assert(r.numRows == sizes.sum && r.numColumns == schema.allFields.size)
      assert(r.schema.fields.map(_.toArrow) == schema.fields.map(_.toArrow))
      val columnOf = schema.allFields.map(_.id).zipWithIndex.toMap
      schema.fields.zip(expected).foreach { case (f, rows) =>
        var start = 0
        do {
          val n = math.min(batch, rows.size - start)
          val v = r.read(f, columnOf, start, n, a)
          try {
            assert(sameShape(v.getField, f.toArrow), s"${v.getField} vs ${f.toArrow}")
            assert(v.getValueCount == n)
            val got = Rows(v)
            val want = rows.slice(start, start + n)
            assert(got == want, s"field ${f.name}, rows $start until ${start + n}")
          } finally v.close()
          start += n
        } while (start < rows.size)
      }
      assert(a.getAllocatedMemory == 0, "vectors leaked")
      r
    } finally a.close()
  }

  for ((size, i) <- Seq(0, 1, 1000).zipWithIndex; rate <- Seq(0.0, 0.3, 1.0)) {
    test(s"flat types: $size rows, null rate $rate") { check(flatSchema, Seq(size), 17L * i + (rate * 10).toLong, rate) }
    test(s"nested types: $size rows, null rate $rate") { check(nestedSchema, Seq(size), 31L * i + (rate * 10).toLong, rate) }
  }

  test("several batches, read in batches that do not line up with them") {
    check(flatSchema, Seq(7, 0, 300, 1, 250), 5, 0.2, batch = 64)
    check(nestedSchema, Seq(7, 0, 300, 1, 250), 6, 0.2, batch = 64)
  }

  test("vectors stored plainly are read straight into Arrow memory, across pages and within a byte budget") {
    val items = Seq((new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE), 4, 32), (new ArrowType.Int(64, true), 3, 64),
      (new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE), 1, 64))
    val schema = schemaOf(id => items.map { case (t, dim, _) => fsl(id(), t, dim) })
    val a = new RootAllocator()
    try {
      val (bytes, _, expected) = write(schema, Seq(100, 1000, 37), 9, 0.0, maxPageBytes = 256, a)
      val r = new FileReader20(new BytesInputFile(bytes))
      val columnOf = schema.allFields.map(_.id).zipWithIndex.toMap
      val rnd = new scala.util.Random(9)
      schema.fields.zip(expected).zip(items).zipWithIndex.foreach { case (((f, rows), (_, dim, bits)), c) =>
        val col = r.column(c)
        assert(col.numPages > 3 && (0 until col.numPages).forall(col.plainLists(_, dim, bits).isDefined), f.name)
        (0 until 300).foreach { _ =>
          val start = rnd.nextInt(rows.size)
          val n = rnd.nextInt(rows.size - start + 1)
          val maxBytes = if (rnd.nextBoolean()) Long.MaxValue else rnd.nextInt(3000).toLong
          val v = r.read(f, columnOf, start, n, a, maxBytes)
          try {
            // As many as the budget holds, one at least: as decoding pages counts them.
            val want = if (n == 0) 0 else math.max(1L, math.min(n.toLong, maxBytes / (dim * bits / 8))).toInt
            assert(v.getValueCount == want && Rows(v) == rows.slice(start, start + want), s"${f.name} rows $start+$n within $maxBytes")
          } finally v.close()
        }
      }
      assert(a.getAllocatedMemory == 0, "vectors leaked")
    } finally a.close()
  }

  test("many pages, read across page boundaries") {
    val r = check(flatSchema, Seq(100, 1000, 37), 7, 0.25, maxPageBytes = 256, batch = 77)
    val small = Set("nul", "bool", "fsl32") // bitmaps and nulls: few bytes in all
    flatSchema.fields.zipWithIndex.filterNot(f => small(f._1.name)).foreach { case (f, c) =>
      assert(r.column(c).numPages > 3, f.name)
    }
    val r2 = check(nestedSchema, Seq(100, 1000, 37), 8, 0.25, maxPageBytes = 256, batch = 77)
    assert(r2.column(0).numPages > 3)
  }

  test("a 0-row file has no pages except struct headers") {
    val a = new RootAllocator()
    try {
      val (bytes, result, _) = write(nestedSchema, Nil, 1, 0, 1 << 20, a)
      assert(result.numRows == 0)
      val r = new FileReader20(new BytesInputFile(bytes))
      val structColumns = nestedSchema.allFields.zipWithIndex.collect { case (f, c) if f.arrowType == ArrowType.Struct.INSTANCE => c }
      (0 until r.numColumns).foreach { c =>
        assert(r.column(c).numPages == (if (structColumns.contains(c)) 1 else 0))
      }
      val columnOf = nestedSchema.allFields.map(_.id).zipWithIndex.toMap
      nestedSchema.fields.foreach { f =>
        val v = r.read(f, columnOf, 0, 0, a)
        try assert(v.getValueCount == 0) finally v.close()
      }
      assert(a.getAllocatedMemory == 0)
    } finally a.close()
  }

  test("nested projection reads only the kept children's columns") {
    val a = new RootAllocator()
    try {
      val (bytes, _, expected) = write(nestedSchema, Seq(500), 9, 0.2, 1 << 20, a)
      val st = nestedSchema.field("st").get
      val kept = st.copy(children = Seq(st.children(2).copy(children = Seq(st.children(2).children(1)))))
      val columnOf = nestedSchema.allFields.map(_.id).zipWithIndex.toMap
      val file = new BytesInputFile(bytes)
      val r = new FileReader20(file)
      val before = file.reads.size
      val v = r.read(kept, columnOf, 0, 500, a)
      try {
        val want = expected(nestedSchema.fields.indexOf(st)).map {
          case row: List[_] => row.collect { case ("inner", inner: List[_]) => "inner" -> inner.filter(_.asInstanceOf[(String, Any)]._1 == "l") }
        }
        assert(Rows(v) == want)
      } finally v.close()
      // the columns of st.a, st.b and st.inner.c were not touched: small file, so count decoded columns instead
      val touched = (0 until r.numColumns).filter(c => r.columnOpened(c))
      val names = nestedSchema.allFields.map(_.name)
      assert(touched.map(names) == Seq("st", "inner", "l", "item"))
      assert(file.reads.size == before)
      assert(a.getAllocatedMemory == 0)
    } finally a.close()
  }

  test("struct-level nulls are refused") {
    val a = new RootAllocator()
    try {
      val st = nestedSchema.field("st").get
      val schema = LanceSchema(Seq(st))
      val v = new RandomVectors(3, 0.5, structNulls = true).vector(st, 50, a)
      try {
        val w = new FileWriter20(new ByteArrayOutputStream, schema)
        val e = intercept[sparklance.format.UnsupportedFeatureException](w.write(Seq(v)))
        assert(e.getMessage.contains("'st'") && e.getMessage.contains("2.1"))
        intercept[IllegalStateException](w.finish())
      } finally v.close()
    } finally a.close()
  }
}
