package sparklance.format.file

import java.io.ByteArrayOutputStream
import java.nio.charset.StandardCharsets.UTF_8
import org.apache.arrow.memory.{BufferAllocator, RootAllocator}
import org.apache.arrow.vector._
import org.apache.arrow.vector.types.FloatingPointPrecision
import org.apache.arrow.vector.types.pojo.ArrowType
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.file.v2_0.{BytesInputFile, FileReader20, FileWriter20}
import sparklance.format.file.v2_1.{Canon, FileReader21, FileWriter21}
import sparklance.format.proto.Encodings20Protos.ArrayEncoding
import sparklance.format.proto.Encodings21Protos.PageLayout
import sparklance.format.table.{LanceField, LanceSchema}

/**
 * Dictionary fields (pylance's Arrow dictionary columns, logical type `dict:...`): written as the
 * dictionary pages pylance writes for them in each file version, read back as their values.
 */
class DictionaryPagesSuite extends AnyFunSuite {
  private val i8 = new ArrowType.Int(8, true)
  private val i16 = new ArrowType.Int(16, true)
  private val i32 = new ArrowType.Int(32, true)
  private val i64 = new ArrowType.Int(64, true)
  private val f64 = new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)

  private val schema = LanceSchema(Seq(
    LanceField(0, "s", ArrowType.Utf8.INSTANCE, nullable = true, dictionary = Some(i32)),
    LanceField(1, "ls", ArrowType.LargeUtf8.INSTANCE, nullable = true, dictionary = Some(i8)),
    LanceField(2, "k", i64, nullable = true, dictionary = Some(i32)),
    LanceField(3, "f", f64, nullable = true, dictionary = Some(i16)),
    LanceField(4, "allnull", ArrowType.Utf8.INSTANCE, nullable = true, dictionary = Some(i32))))

  /** n rows: few distinct strings with nulls, 100 distinct large strings (int8 indices), integers, 0.0 and -0.0, nulls. */
  private def vectors(n: Int, a: BufferAllocator): Seq[FieldVector] = {
    val s = new VarCharVector("s", a)
    val ls = new LargeVarCharVector("ls", a)
    val k = new BigIntVector("k", a)
    val f = new Float8Vector("f", a)
    val nul = new VarCharVector("allnull", a)
    Seq(s, ls, k, f, nul).foreach(_.allocateNew())
    for (i <- 0 until n) {
      if (i % 7 == 0) s.setNull(i) else s.setSafe(i, s"v${i % 5}".getBytes(UTF_8))
      ls.setSafe(i, s"n${i % 100}".getBytes(UTF_8))
      if (i % 11 == 0) k.setNull(i) else k.setSafe(i, (i % 4) * 1000L)
      if (i % 3 == 2) f.setNull(i) else f.setSafe(i, if (i % 3 == 0) -0.0 else 0.0)
      nul.setNull(i)
    }
    Seq(s, ls, k, f, nul).foreach(_.setValueCount(n))
    Seq(s, ls, k, f, nul)
  }

  private def write(version: Int, batches: Seq[Seq[FieldVector]]): Array[Byte] = {
    val out = new ByteArrayOutputStream
    if (version == 0) { val w = new FileWriter20(out, schema); batches.foreach(w.write); w.finish() }
    else { val w = new FileWriter21(out, schema, version); batches.foreach(w.write); w.finish() }
    out.toByteArray
  }

  private def reader(version: Int, bytes: Array[Byte]): DataFileReader =
    if (version == 0) new FileReader20(new BytesInputFile(bytes)) else new FileReader21(new BytesInputFile(bytes))

  private def encodings(bytes: Array[Byte]): IndexedSeq[IndexedSeq[com.google.protobuf.ByteString]] =
    new ContainerReader(new BytesInputFile(bytes)).columns.map(_.getPagesList.asScala.toIndexedSeq.map(p =>
      com.google.protobuf.Any.parseFrom(p.getEncoding.getDirect.getEncoding).getValue))

  for (version <- Seq(0, 1, 2)) test(s"2.$version: dictionary pages hold each page's distinct values; read back as the values") {
    val a = new RootAllocator()
    val batches = Seq(vectors(1000, a), vectors(37, a))
    val expected = schema.fields.indices.map(c => batches.flatMap(b => (0 until b(c).getValueCount).map(Canon(b(c), _))))
    val bytes = try write(version, batches) finally batches.flatten.foreach(_.close())
    try {
      val r = reader(version, bytes)
      assert(r.schema.fields.map(_.logicalType) ==
        Seq("dict:string:int32:false", "dict:large_string:int8:false", "dict:int64:int32:false", "dict:double:int16:false",
          "dict:string:int32:false"))
      val columnOf = schema.fields.map(_.id).zipWithIndex.toMap
      for ((field, c) <- schema.fields.zipWithIndex; (start, n) <- Seq((0, 1037), (990, 40), (1036, 1))) {
        val v = r.read(field, columnOf, start, n, a)
        try assert((0 until n).map(Canon(v, _)) == expected(c).slice(start, start + n), s"${field.name} rows $start+$n")
        finally v.close()
      }
      // 0.0 and -0.0 are different items (their bytes differ), as pylance keeps them.
      assert(expected(3).take(2) == Seq("d:8000000000000000", "d:0000000000000000"))
      r.close()
      assert(a.getAllocatedMemory == 0, "vectors leaked")
    } finally a.close()

    val pages = encodings(bytes)
    if (version == 0) {
      val dicts = pages.map(_.map(ArrayEncoding.parseFrom))
      assert(dicts.take(4).flatten.forall(_.hasDictionary))
      // Indices of the index type.
      val bits = dicts.map(_.map(_.getDictionary.getIndices.getNullable.getNoNulls.getValues.getFlat.getBitsPerValue))
      assert(bits.take(4).map(_.toSet) == Seq(Set(32), Set(8), Set(32), Set(16)))
      // Items: the distinct values, then a null item when the page has nulls.
      assert(dicts(0).head.getDictionary.getNumDictionaryItems == 6 && dicts(0).head.getDictionary.getItems.hasBinary)
      assert(dicts(3).head.getDictionary.getNumDictionaryItems == 3 && dicts(3).head.getDictionary.getItems.getNullable.hasSomeNulls)
      assert(dicts(4).forall(_.getDictionary.getNumDictionaryItems == 1))
    } else {
      val layouts = pages.map(_.map(PageLayout.parseFrom))
      assert(layouts.take(4).flatten.forall(l => l.hasMiniBlockLayout && l.getMiniBlockLayout.hasDictionary))
      val m = layouts.map(_.map(_.getMiniBlockLayout))
      // Nulls live in the def levels: the dictionaries hold only values (0.0 and -0.0: two items).
      assert(m(0).head.getNumDictionaryItems == 5 && m(2).head.getNumDictionaryItems == 4 && m(3).head.getNumDictionaryItems == 2)
      // Indices of the index type (flat, or bit-packed from that width).
      val widths = m.take(4).map(_.head.getValueCompression).map(c =>
        if (c.hasFlat) c.getFlat.getBitsPerValue else c.getInlineBitpacking.getUncompressedBitsPerValue)
      assert(widths == Seq(32, 8, 32, 16))
      assert(layouts(4).forall(_.hasConstantLayout)) // all null: the constant layout pylance writes too
    }
  }

  for (version <- Seq(0, 1, 2)) test(s"2.$version: more distinct values in a file than int8 indices number are refused, naming the column") {
    val a = new RootAllocator()
    try {
      val one = LanceSchema(Seq(schema.fields(1)))
      val v = new LargeVarCharVector("ls", a)
      try {
        (0 until 200).foreach(i => v.setSafe(i, s"x$i".getBytes(UTF_8)))
        v.setValueCount(200)
        val out = new ByteArrayOutputStream
        val e = intercept[sparklance.format.UnsupportedFeatureException] {
          if (version == 0) { val w = new FileWriter20(out, one); w.write(Seq(v)); w.finish() }
          else { val w = new FileWriter21(out, one, version); w.write(Seq(v)); w.finish() }
        }
        assert(e.getMessage.contains("'ls'") && e.getMessage.contains("int8") && e.getMessage.contains("128"), e.getMessage)
      } finally v.close()
    } finally a.close()
  }
}
