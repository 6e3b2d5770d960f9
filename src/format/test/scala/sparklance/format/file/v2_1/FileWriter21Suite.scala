package sparklance.format.file.v2_1

import java.io.ByteArrayOutputStream
import java.nio.charset.StandardCharsets.UTF_8
import org.apache.arrow.memory.{BufferAllocator, RootAllocator}
import org.apache.arrow.vector._
import org.apache.arrow.vector.complex.{ListVector, StructVector}
import org.apache.arrow.vector.types.{DateUnit, FloatingPointPrecision, TimeUnit}
import org.apache.arrow.vector.types.pojo.ArrowType
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import scala.util.Random
import sparklance.format.UnsupportedFeatureException
import sparklance.format.file.ContainerReader
import sparklance.format.file.v2_0.RandomVectors
import sparklance.format.proto.Encodings21Protos.PageLayout
import sparklance.format.table.{LanceField, LanceSchema}

/** Test schemas and data for the 2.1/2.2 writer, shared with the pylance interop suite. */
object Writer21Fixtures {
  val i32 = new ArrowType.Int(32, true)
  val f32 = new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)

  val primitives: Seq[(String, ArrowType)] = Seq(
    "bool" -> ArrowType.Bool.INSTANCE,
    "i8" -> new ArrowType.Int(8, true), "i16" -> new ArrowType.Int(16, true),
    "i32" -> i32, "i64" -> new ArrowType.Int(64, true),
    "u8" -> new ArrowType.Int(8, false), "u16" -> new ArrowType.Int(16, false),
    "u32" -> new ArrowType.Int(32, false), "u64" -> new ArrowType.Int(64, false),
    "f16" -> new ArrowType.FloatingPoint(FloatingPointPrecision.HALF),
    "f32" -> f32,
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

  /** Top-level fields with ids assigned pre-order, as a table schema would. */
  def schemaOf(build: (() => Int) => Seq[LanceField]): LanceSchema = {
    var next = 0
    LanceSchema(build(() => { next += 1; next - 1 }))
  }

  def fsl(id: Int, name: String, item: ArrowType, dim: Int): LanceField =
    LanceField(id, name, new ArrowType.FixedSizeList(dim), nullable = true, arrowItemType = Some(item))

  val flatSchema: LanceSchema = schemaOf(id => primitives.map { case (n, t) => LanceField(id(), n, t, nullable = true) } ++
    Seq(fsl(id(), "fsl_f32_3", f32, 3), fsl(id(), "fsl_bool_5", ArrowType.Bool.INSTANCE, 5),
      fsl(id(), "fsl_dec_2", new ArrowType.Decimal(10, 1, 128), 2), fsl(id(), "fsl_f32_64", f32, 64),
      fsl(id(), "fsl_i8_300", new ArrowType.Int(8, true), 300)))

  val nestedSchema: LanceSchema = schemaOf { id =>
    def f(name: String, t: ArrowType, kids: LanceField*) = LanceField(id(), name, t, nullable = true, kids)
    Seq(
      f("l", ArrowType.List.INSTANCE, f("item", i32)),
      f("ll", ArrowType.LargeList.INSTANCE, f("item", ArrowType.Utf8.INSTANCE)),
      f("lll", ArrowType.List.INSTANCE, f("item", ArrowType.LargeList.INSTANCE, f("item", new ArrowType.Int(64, true)))),
      f("st", ArrowType.Struct.INSTANCE, f("a", i32), f("b", ArrowType.Binary.INSTANCE),
        f("inner", ArrowType.Struct.INSTANCE, f("c", ArrowType.Bool.INSTANCE), f("l", ArrowType.List.INSTANCE, f("item", i32)))),
      f("ls", ArrowType.List.INSTANCE, f("item", ArrowType.Struct.INSTANCE, f("x", i32), f("y", ArrowType.LargeUtf8.INSTANCE))),
      { val id0 = id(); LanceField(id0, "lf", ArrowType.List.INSTANCE, nullable = true, Seq(fsl(id(), "item", i32, 2))) },
      f("lnul", ArrowType.List.INSTANCE, f("item", ArrowType.Null.INSTANCE)))
  }

  /** Strings of 200..700 bytes (full-zip pages) in lists and structs as well as at the top. */
  val longSchema: LanceSchema = schemaOf { id =>
    def f(name: String, t: ArrowType, kids: LanceField*) = LanceField(id(), name, t, nullable = true, kids)
    Seq(f("s", ArrowType.Utf8.INSTANCE), f("lb", ArrowType.LargeBinary.INSTANCE),
      f("ls", ArrowType.List.INSTANCE, f("item", ArrowType.Utf8.INSTANCE)),
      f("st", ArrowType.Struct.INSTANCE, f("s", ArrowType.Utf8.INSTANCE), f("l", ArrowType.List.INSTANCE, f("item", ArrowType.Utf8.INSTANCE))),
      fsl(id(), "vec", f32, 128), f("fsb", new ArrowType.FixedSizeBinary(300)))
  }

  /** Fills string/binary leaves (at any depth) with values of `minLen` to `maxLen` bytes. */
  def longStrings(v: ValueVector, rnd: Random, minLen: Int, maxLen: Int): Unit = v match {
    case s: BaseVariableWidthVector =>
      val n = s.getValueCount
      val nulls = (0 until n).map(s.isNull)
      s.reset(); s.allocateNew()
      (0 until n).foreach(i => if (nulls(i)) s.setNull(i) else s.setSafe(i, Array.fill(minLen + rnd.nextInt(maxLen - minLen))(('a' + rnd.nextInt(26)).toByte)))
      s.setValueCount(n)
    case s: BaseLargeVariableWidthVector =>
      val n = s.getValueCount
      val nulls = (0 until n).map(s.isNull)
      s.reset(); s.allocateNew()
      (0 until n).foreach(i => if (nulls(i)) s.setNull(i) else s.setSafe(i, Array.fill(minLen + rnd.nextInt(maxLen - minLen))(rnd.nextInt.toByte)))
      s.setValueCount(n)
    case s: StructVector => s.getChildrenFromFields.asScala.foreach(longStrings(_, rnd, minLen, maxLen))
    case l: ListVector => longStrings(l.getDataVector, rnd, minLen, maxLen)
    case _ =>
  }

  /**
   * Makes integer-like values (at any depth) small, except every third run of 1500 values, so that
   * bit-packing pays for some chunks and not for others; strings become repetitive (LZ4 pays).
   */
  def smallInts(v: ValueVector): Unit = v match {
    case _: BitVector | _: Float2Vector | _: Float4Vector | _: Float8Vector | _: DecimalVector | _: Decimal256Vector |
        _: FixedSizeBinaryVector =>
    case f: BaseFixedWidthVector =>
      val w = f.getTypeWidth
      (0 until f.getValueCount).foreach { i =>
        if ((i / 1500) % 3 != 2) {
          val x = (i * 7L) % 300
          (0 until w).foreach(k => f.getDataBuffer.setByte(i.toLong * w + k, (x >>> (8 * k)).toInt))
        }
      }
    case s: BaseVariableWidthVector => rewrite(s, i => s"item-$i-${i % 13}-item-${i % 7}".getBytes(UTF_8))
    case s: BaseLargeVariableWidthVector => rewrite(s, i => s"large-$i-${i % 13}-large".getBytes(UTF_8))
    case s: StructVector => s.getChildrenFromFields.asScala.foreach(smallInts)
    case l: ListVector => smallInts(l.getDataVector)
    case l: org.apache.arrow.vector.complex.LargeListVector => smallInts(l.getDataVector)
    case _ =>
  }

  /** Makes every fixed-width value (at any depth, fixed-size list items excepted) the same. */
  def constants(v: ValueVector): Unit = v match {
    case b: BitVector => (0 until b.getValueCount).foreach(i => if (!b.isNull(i)) b.set(i, 1))
    case f: BaseFixedWidthVector =>
      val w = f.getTypeWidth
      (0 until f.getValueCount).foreach(i => (0 until w).foreach(k => f.getDataBuffer.setByte(i.toLong * w + k, 3 + k)))
    case s: StructVector => s.getChildrenFromFields.asScala.foreach(constants)
    case l: ListVector => constants(l.getDataVector)
    case l: org.apache.arrow.vector.complex.LargeListVector => constants(l.getDataVector)
    case _ =>
  }

  /**
   * Makes every third struct value (at any depth: top-level, nested, in lists) NULL without touching
   * its children's values, which Arrow allows: with no nulls of their own, the children's pages
   * then hold nulls only through their struct.
   */
  def nullStructs(v: ValueVector): Unit = v match {
    case s: StructVector =>
      s.getChildrenFromFields.asScala.foreach(nullStructs)
      (0 until s.getValueCount by 3).foreach(s.setNull)
    case l: ListVector => nullStructs(l.getDataVector)
    case l: org.apache.arrow.vector.complex.LargeListVector => nullStructs(l.getDataVector)
    case _ =>
  }

  /** Replaces the valid values of a string/binary vector by `value(i)`, keeping its nulls. */
  private def rewrite(v: FieldVector, value: Int => Array[Byte]): Unit = {
    val n = v.getValueCount
    val nulls = (0 until n).map(v.isNull)
    v.reset()
    v match {
      case s: BaseVariableWidthVector =>
        s.allocateNew(); (0 until n).foreach(i => if (nulls(i)) s.setNull(i) else s.setSafe(i, value(i)))
      case s: BaseLargeVariableWidthVector =>
        s.allocateNew(); (0 until n).foreach(i => if (nulls(i)) s.setNull(i) else s.setSafe(i, value(i)))
    }
    v.setValueCount(n)
  }

  /** list<int32>, list<list<int32>> and list<int64> columns for `runs`. */
  val runsSchema: LanceSchema = schemaOf { id =>
    Seq(LanceField(id(), "l", ArrowType.List.INSTANCE, nullable = true, Seq(LanceField(id(), "item", i32, nullable = true))),
      LanceField(id(), "ll", ArrowType.List.INSTANCE, nullable = true, Seq(LanceField(id(), "item", ArrowType.List.INSTANCE,
        nullable = true, Seq(LanceField(id(), "item", i32, nullable = true))))),
      LanceField(id(), "big", ArrowType.List.INSTANCE, nullable = true,
        Seq(LanceField(id(), "item", new ArrowType.Int(64, true), nullable = true))))
  }

  /**
   * n rows of runsSchema that are mostly null or empty lists: `l` has two values every 7001 rows;
   * row 5 of `ll` holds 70000 empty inner lists and then [7], more levels than a mini-block chunk
   * can carry; `big` has rows of 10000 values (spanning several chunks) among short ones.
   */
  def runs(n: Int, a: BufferAllocator): Seq[FieldVector] = {
    val l = runsSchema.fields(0).toArrow.createVector(a).asInstanceOf[ListVector]
    val ll = runsSchema.fields(1).toArrow.createVector(a).asInstanceOf[ListVector]
    l.allocateNew()
    val items = l.getDataVector.asInstanceOf[IntVector]
    var k = 0
    for (i <- 0 until n) {
      l.startNewValue(i)
      if (i % 7001 == 3) { items.setSafe(k, i); items.setSafe(k + 1, -i); k += 2; l.endValue(i, 2) }
      else if (i % 3 == 0) l.setNull(i) else l.endValue(i, 0)
    }
    items.setValueCount(k); l.setValueCount(n)
    ll.allocateNew()
    val inner = ll.getDataVector.asInstanceOf[ListVector]
    inner.allocateNew()
    val deep = inner.getDataVector.asInstanceOf[IntVector]
    var m = 0
    for (i <- 0 until n) {
      ll.startNewValue(i)
      if (i == 5) {
        for (_ <- 0 until 70000) { inner.startNewValue(m); inner.endValue(m, 0); m += 1 }
        inner.startNewValue(m); deep.setSafe(0, 7); inner.endValue(m, 1); m += 1
        ll.endValue(i, 70001)
      } else if (i % 2 == 0) ll.setNull(i) else ll.endValue(i, 0)
    }
    deep.setValueCount(1); inner.setValueCount(m); ll.setValueCount(n)
    val big = runsSchema.fields(2).toArrow.createVector(a).asInstanceOf[ListVector]
    big.allocateNew()
    val longs = big.getDataVector.asInstanceOf[BigIntVector]
    var q = 0
    for (i <- 0 until n) {
      big.startNewValue(i)
      val len = if (i % 1000 == 7) 10000 else i % 3
      for (j <- 0 until len) { if (j % 101 == 5) longs.setNull(q) else longs.setSafe(q, i * 31L + j * (if (i % 2000 == 7) 1L << 40 else 1L)); q += 1 }
      big.endValue(i, len)
    }
    longs.setValueCount(q); big.setValueCount(n)
    Seq(l, ll, big)
  }

  /** Batches of random vectors for `schema`; `batchRates`, when given, is each batch's own null rate. */
  def batches(schema: LanceSchema, sizes: Seq[Int], seed: Long, nullRate: Double, a: BufferAllocator,
      long: Boolean = false, small: Boolean = false, const: Boolean = false,
      nullEveryThirdStruct: Boolean = false, batchRates: Seq[Double] = Nil): Seq[Seq[FieldVector]] = {
    val gen = new RandomVectors(seed, nullRate, structNulls = true)
    val rnd = new Random(seed)
    sizes.zipWithIndex.map { case (n, k) =>
      val g = if (batchRates.isEmpty) gen else new RandomVectors(seed * 1000 + k, batchRates(k), structNulls = true)
      schema.fields.map { f =>
        val v = g.vector(f, n, a)
        if (long) longStrings(v, rnd, 200, 700)
        if (small) smallInts(v)
        if (const) constants(v)
        if (nullEveryThirdStruct) nullStructs(v)
        v
      }
    }
  }

  def write(schema: LanceSchema, batches: Seq[Seq[FieldVector]], minor: Int, maxPageBytes: Long = 8L << 20): (Array[Byte], FileWriter21.Result) = {
    val out = new ByteArrayOutputStream
    val w = new FileWriter21(out, schema, minor, maxPageBytes)
    batches.foreach(w.write)
    val r = w.finish()
    (out.toByteArray, r)
  }
}

/** Write → read round trips through FileWriter21 and FileReader21. */
class FileWriter21Suite extends AnyFunSuite {
  import Writer21Fixtures._

  /** Writes, reads back whole and in ranges of `step` rows, and compares row by row. */
  private def check(schema: LanceSchema, sizes: Seq[Int], seed: Long, nullRate: Double, minor: Int,
      maxPageBytes: Long = 8L << 20, step: Int = 0, long: Boolean = false, small: Boolean = false,
      const: Boolean = false, batchRates: Seq[Double] = Nil): FileReader21 = {
    val a = new RootAllocator()
    try {
      val bs = batches(schema, sizes, seed, nullRate, a, long, small, const, batchRates = batchRates)
      val expected = schema.fields.indices.map(fi => bs.flatMap(b => (0 until b(fi).getValueCount).map(Canon(b(fi), _))))
      val (bytes, result) = try write(schema, bs, minor, maxPageBytes) finally bs.flatten.foreach(_.close())
      val n = sizes.sum
      assert(result.numRows == n && result.sizeBytes == bytes.length)
      val leafIds = schema.fields.flatMap(FileWriter21.leaves).map(_.id)
      assert(result.fieldIds == leafIds && result.columnIndices == leafIds.indices)
      val r = new FileReader21(new MemFile(bytes, s"mem-2.$minor"))
      assert(r.numRows == n && r.numColumns == leafIds.size)
      assert(r.schema.fields.map(_.toArrow) == schema.fields.map(_.toArrow))
      val columnOf = leafIds.zipWithIndex.toMap
      val ranges = if (step <= 0) Seq(0 -> n) else (0 until n by step).map(s => s -> math.min(step, n - s))
      schema.fields.zip(expected).foreach { case (f, want) =>
        ranges.foreach { case (start, len) =>
          val v = r.read(f, columnOf, start, len, a)
          try {
            assert(v.getValueCount == len)
            val got = (0 until len).map(Canon(v, _))
            val bad = (0 until len).find(i => got(i) != want(start + i))
            assert(bad.isEmpty, s"2.$minor ${f.name} row ${bad.map(_ + start)}: got ${bad.map(got(_))}, want ${bad.map(i => want(start + i))}")
          } finally v.close()
        }
      }
      assert(a.getAllocatedMemory == 0, "vectors leaked")
      r
    } finally a.close()
  }

  for (minor <- Seq(1, 2)) {
    for ((size, i) <- Seq(0, 1, 5, 3000).zipWithIndex; rate <- Seq(0.0, 0.3, 1.0)) {
      test(s"2.$minor flat types: $size rows, null rate $rate") { check(flatSchema, Seq(size), 17L * i + (rate * 10).toLong, rate, minor) }
      test(s"2.$minor nested types: $size rows, null rate $rate") { check(nestedSchema, Seq(size), 31L * i + (rate * 10).toLong, rate, minor) }
    }

    test(s"2.$minor several batches, many pages, read in ranges across page boundaries") {
      check(flatSchema, Seq(7, 0, 3000, 1, 250), 5, 0.2, minor, maxPageBytes = 2000, step = 333)
      check(nestedSchema, Seq(7, 0, 3000, 1, 250), 6, 0.2, minor, maxPageBytes = 2000, step = 333)
    }

    test(s"2.$minor large values go to full-zip pages, alone and nested") {
      val r = check(longSchema, Seq(300, 41), 9, 0.2, minor, maxPageBytes = 50000, step = 50, long = true)
      r.close()
      check(longSchema, Seq(100), 10, 0.0, minor, long = true)
    }

    test(s"2.$minor vectors without nulls (plain full-zip pages) read straight into Arrow memory, in ranges across pages") {
      val vectors = schemaOf(id => Seq(LanceField(id(), "v", new ArrowType.FixedSizeList(128), nullable = false, arrowItemType = Some(f32)),
        LanceField(id(), "w", new ArrowType.FixedSizeList(80), nullable = false, arrowItemType = Some(new ArrowType.Int(64, true)))))
      check(vectors, Seq(1000, 7, 2000), 21, 0.0, minor, maxPageBytes = 100000, step = 77)
      check(vectors, Seq(300), 22, 0.0, minor)
    }

    test(s"2.$minor bit-packed integers (some chunks packed narrow, some at full width) and levels") {
      check(flatSchema, Seq(10000, 3), 13, 0.1, minor, step = 1000, small = true)
      check(nestedSchema, Seq(6000), 14, 0.1, minor, step = 1000, small = true)
      check(flatSchema, Seq(2500), 15, 0.0, minor, maxPageBytes = 3000, small = true)
    }

    test(s"2.$minor constant values (2.2: inline constant pages)") {
      check(flatSchema, Seq(3000), 16, 0.1, minor, step = 700, const = true)
      check(flatSchema, Seq(300), 17, 0.0, minor, const = true)
      check(nestedSchema, Seq(3000), 18, 0.1, minor, step = 700, const = true)
      val a = new RootAllocator()
      try {
        val bs = batches(flatSchema, Seq(3000), 3, 0.2, a, const = true)
        val (bytes, _) = try write(flatSchema, bs, minor) finally bs.flatten.foreach(_.close())
        val byName = flatSchema.fields.map(_.name).zip(layouts(bytes)).toMap
        for (n <- Seq("i64", "f64", "bool", "dec256", "ts_us", "fsb")) {
          val c = byName(n).map(_.getConstantLayout)
          assert(byName(n).forall(kind(_) == (if (minor == 2) "CONSTANT_LAYOUT" else "MINI_BLOCK_LAYOUT")), n)
          if (minor == 2) assert(c.forall(_.hasInlineValue), n)
        }
        assert(byName("fsl_f32_3").forall(kind(_) == "MINI_BLOCK_LAYOUT"))
      } finally a.close()
    }

    test(s"2.$minor many pages from batches with and without nulls: cleared page buffers, bulk levels of flat columns") {
      // Batches without nulls take the bulk path for a flat column's levels, the others the per-row
      // one; small pages make every column clear and refill its buffers (bools, bit-packed
      // integers, strings, dictionaries of the pages) many times. Each page must hold its own rows only.
      val rates = Seq(0.0, 0.4, 1.0, 0.0, 0.05, 0.0, 0.5, 0.0)
      check(flatSchema, Seq(900, 1500, 1, 2200, 700, 0, 1300, 2000), 41, 0.0, minor, maxPageBytes = 4000, step = 311,
        batchRates = rates)
      check(flatSchema, Seq(3000, 3000, 3000), 42, 0.0, minor, maxPageBytes = 20000, step = 997, small = true,
        batchRates = Seq(0.0, 0.3, 0.0))
      check(nestedSchema, Seq(900, 1500, 1, 2200, 700, 0, 1300, 2000), 43, 0.0, minor, maxPageBytes = 4000, step = 311,
        batchRates = rates)
      check(longSchema, Seq(100, 40, 100), 44, 0.0, minor, maxPageBytes = 30000, step = 37, long = true,
        batchRates = Seq(0.0, 0.5, 0.0))
    }

    test(s"2.$minor chunk boundaries: 10000 rows of one page") {
      check(flatSchema, Seq(10000), 11, 0.1, minor, step = 4097)
      check(nestedSchema, Seq(10000), 12, 0.1, minor, step = 4097)
    }
  }

  /** The page layouts of each column of a file. */
  private def layouts(bytes: Array[Byte]): IndexedSeq[IndexedSeq[PageLayout]] = {
    val c = new ContainerReader(new MemFile(bytes, "mem"))
    c.columns.map(_.getPagesList.asScala.toIndexedSeq.map(p =>
      PageLayout.parseFrom(com.google.protobuf.Any.parseFrom(p.getEncoding.getDirect.getEncoding).getValue)))
  }

  private def kind(l: PageLayout): String = l.getLayoutCase.name

  for (minor <- Seq(1, 2)) {
    test(s"2.$minor layouts: mini-block under 256 bytes, full-zip above, constant for all-null pages; aligned buffers") {
      val a = new RootAllocator()
      try {
        val bs = batches(flatSchema, Seq(3000), 3, 0.2, a)
        val (bytes, _) = try write(flatSchema, bs, minor) finally bs.flatten.foreach(_.close())
        val ls = layouts(bytes)
        val byName = flatSchema.fields.map(_.name).zip(ls).toMap
        assert(byName("fsl_i8_300").forall(kind(_) == "FULL_ZIP_LAYOUT"))
        assert(byName("fsl_f32_64").forall(kind(_) == "FULL_ZIP_LAYOUT"))
        assert(byName("nul").forall(kind(_) == "CONSTANT_LAYOUT"))
        for (n <- Seq("i32", "str", "bool", "dec256", "fsl_f32_3", "fsl_bool_5")) {
          assert(byName(n).forall(kind(_) == "MINI_BLOCK_LAYOUT"), n)
          assert(byName(n).forall(_.getMiniBlockLayout.getHasLargeChunk == (minor == 2)), n)
        }
        assert(byName("i32").forall(_.getMiniBlockLayout.getValueCompression.hasFlat))
        assert(byName("i32").forall(_.getMiniBlockLayout.getDefCompression.hasOutOfLineBitpacking))
        val small = batches(flatSchema, Seq(3000), 3, 0.2, a, small = true)
        val (b3, _) = try write(flatSchema, small, minor) finally small.flatten.foreach(_.close())
        val packed = flatSchema.fields.map(_.name).zip(layouts(b3)).toMap
        for (n <- Seq("i16", "u16", "i32", "u64", "d32", "ts_us", "t32ms", "dur"))
          assert(packed(n).forall(_.getMiniBlockLayout.getValueCompression.hasInlineBitpacking), n)
        for (n <- Seq("f32", "dec", "bool", "str")) assert(packed(n).forall(!_.getMiniBlockLayout.getValueCompression.hasInlineBitpacking), n)
        for (n <- Seq("str", "lstr", "bin", "lbin")) assert(packed(n).forall(_.getMiniBlockLayout.getValueCompression.hasGeneral), n)
        assert(byName("str").forall(_.getMiniBlockLayout.getValueCompression.hasVariable))
        val c = new ContainerReader(new MemFile(bytes, "mem"))
        assert(c.footer.majorVersion == 2 && c.footer.minorVersion == minor)
        for (col <- c.columns; p <- col.getPagesList.asScala; o <- p.getBufferOffsetsList.asScala) assert(o % 64 == 0)
        val allNull = batches(flatSchema, Seq(10), 3, 1.0, a)
        val (b2, _) = try write(flatSchema, allNull, minor) finally allNull.flatten.foreach(_.close())
        assert(layouts(b2).forall(_.forall(kind(_) == "CONSTANT_LAYOUT")))
      } finally a.close()
    }

    test(s"2.$minor long runs of empty lists: all-null pages between mini-block pages, full-zip when one row needs it") {
      val a = new RootAllocator()
      try {
        val schema = runsSchema
        val n = 20000
        val vs = runs(n, a)
        try {
          val want = vs.map(v => (0 until n).map(Canon(v, _)))
          val (bytes, _) = write(schema, Seq(vs), minor)
          val ls = layouts(bytes)
          assert(ls(0).map(kind).toSet == Set("MINI_BLOCK_LAYOUT", "CONSTANT_LAYOUT"))
          assert(ls(1).map(kind).contains("FULL_ZIP_LAYOUT"))
          val r = new FileReader21(new MemFile(bytes, "mem"))
          for ((f, c) <- schema.fields.zipWithIndex; (start, len) <- Seq(0 -> n, 0 -> 6, 5 -> 1, 6000 -> 9000, 7007 -> 1, 7006 -> 3)) {
            val v = r.read(f, Map(1 -> 0, 4 -> 1, 6 -> 2), start, len, a)
            try assert((0 until len).map(Canon(v, _)) == want(c).slice(start, start + len), s"${f.name} $start+$len")
            finally v.close()
          }
        } finally vs.foreach(_.close())
      } finally a.close()
    }
  }

  test("packed structs (lance-encoding:packed) of fixed-width fields round-trip as one column") {
    val packed = LanceField(0, "p", ArrowType.Struct.INSTANCE, nullable = true, Seq(LanceField(1, "x", i32, nullable = false),
      LanceField(2, "y", new ArrowType.FloatingPoint(org.apache.arrow.vector.types.FloatingPointPrecision.DOUBLE), nullable = false),
      LanceField(3, "z", new ArrowType.Int(8, false), nullable = false)), metadata = Map("lance-encoding:packed" -> "true"))
    for (minor <- Seq(1, 2)) check(LanceSchema(Seq(packed, LanceField(4, "n", i32, nullable = true))), Seq(300, 41), 5, 0.0, minor, step = 97)
  }

  test("types and schemas the writer cannot encode are refused, naming the column") {
    def refused(f: LanceField, what: String): Unit = {
      val e = intercept[UnsupportedFeatureException](new FileWriter21(new ByteArrayOutputStream, LanceSchema(Seq(f)), 1))
      assert(e.getMessage.contains(what), e.getMessage)
    }
    refused(LanceField(0, "m", new ArrowType.Map(false), nullable = true, Seq(LanceField(1, "entries", ArrowType.Struct.INSTANCE,
      nullable = false, Seq(LanceField(2, "key", i32, nullable = false), LanceField(3, "value", i32, nullable = true))))), "'m'")
    refused(LanceField(0, "s", ArrowType.Struct.INSTANCE, nullable = true, Seq(LanceField(1, "a", ArrowType.Utf8.INSTANCE, nullable = true)),
      metadata = Map("lance-encoding:packed" -> "true")), "packed struct")
    refused(LanceField(0, "st", ArrowType.Struct.INSTANCE, nullable = true,
      Seq(LanceField(1, "iv", new ArrowType.Interval(org.apache.arrow.vector.types.IntervalUnit.DAY_TIME), nullable = true))), "'st.iv'")
    refused(fsl(0, "v", ArrowType.Utf8.INSTANCE, 2), "fixed_size_list")
    intercept[IllegalArgumentException](new FileWriter21(new ByteArrayOutputStream, flatSchema, 3))
  }
}
