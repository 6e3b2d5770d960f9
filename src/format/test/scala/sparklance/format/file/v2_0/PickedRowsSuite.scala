package sparklance.format.file.v2_0

import java.io.ByteArrayOutputStream
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.{FieldVector, VarCharVector}
import org.apache.arrow.vector.types.pojo.ArrowType
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random
import sparklance.format.file.{ContainerReader, RowBytes}
import sparklance.format.table.{LanceField, LanceSchema}

/** Scattered rows of a 2.0 file (`readRows`): the same values as a whole read, from the parts of pages holding them. */
class PickedRowsSuite extends AnyFunSuite {
  private val schema = LanceSchema(Seq(
    LanceField(0, "a", new ArrowType.Int(64, true), nullable = true),
    LanceField(1, "s", ArrowType.Utf8.INSTANCE, nullable = true),
    LanceField(2, "b", ArrowType.Binary.INSTANCE, nullable = true),
    LanceField(3, "st", ArrowType.Struct.INSTANCE, nullable = true,
      Seq(LanceField(4, "t", ArrowType.Utf8.INSTANCE, nullable = true))),
    LanceField(5, "l", ArrowType.List.INSTANCE, nullable = true,
      Seq(LanceField(6, "item", ArrowType.Utf8.INSTANCE, nullable = true))),
    LanceField(7, "d", new ArrowType.FloatingPoint(org.apache.arrow.vector.types.FloatingPointPrecision.DOUBLE), nullable = true),
    LanceField(8, "dec", new ArrowType.Decimal(38, 4, 128), nullable = true)))
  private val columnOf = (id: Int) => id
  private val rows = 30000

  /**
   * Ten batches of random values, in pages of at most 32 KiB: many pages a column. Every other
   * batch has no nulls, so that some pages store their values plainly and others do not.
   */
  private lazy val (file, expected) = {
    val (withNulls, without) = (new RandomVectors(7, 0.1), new RandomVectors(8, 0.0))
    TestFiles.random(schema, 10, rows / 10, maxPageBytes = 32 * 1024)(k => if (k % 2 == 0) withNulls else without)
  }

  private def picked(rnd: Random, share: Double): Array[Long] =
    (0L until rows).filter(_ => rnd.nextDouble() < share).toArray match {
      case none if none.isEmpty => Array(rnd.nextInt(rows).toLong)
      case some => some
    }

  test("random rows of every column, from one row in two thousand to nine in ten, are the rows a whole read holds") {
    val rnd = new Random(11)
    val a = new RootAllocator()
    try {
      // From a local file, out of the parts of pages; from an object store, out of whole pages.
      for (cheap <- Seq(true, false)) {
        val reader = new FileReader20(new BytesInputFile(file, readsCheaply = cheap))
        for (share <- Seq(0.0005, 0.003, 0.02, 0.2, 0.9); (field, i) <- schema.fields.zipWithIndex) {
          val rowsAsked = picked(rnd, share)
          val v = reader.readRows(field, columnOf, rowsAsked, a)
          try assert(Rows(v) == rowsAsked.toIndexedSeq.map(r => expected(i)(r.toInt)), s"${field.name}, share $share, cheap $cheap")
          finally v.close()
        }
      }
    } finally a.close()
  }

  test("within a byte budget, the first of the rows asked for, one at least") {
    val rnd = new Random(12)
    val a = new RootAllocator()
    try {
      val reader = new FileReader20(new BytesInputFile(file, readsCheaply = true))
      for (budget <- Seq(1L, 2000L, 50000L); (field, i) <- schema.fields.zipWithIndex) {
        val rowsAsked = picked(rnd, 0.01)
        val v = reader.readRows(field, columnOf, rowsAsked, a, budget)
        try {
          val got = Rows(v)
          assert(got.nonEmpty && got.size <= rowsAsked.length)
          assert(got == rowsAsked.toIndexedSeq.take(got.size).map(r => expected(i)(r.toInt)), s"${field.name}, budget $budget")
          // The rows but the last fit the budget (the last may spend it, as a whole read's would);
          // a range of lists is read whole (DataFileReader.read).
          if (got.size > 1 && field.name != "l") assert(RowBytes(v, 0, got.size - 1) <= budget, s"${field.name}, budget $budget")
        } finally v.close()
      }
    } finally a.close()
  }

  test("a few numbers out of a page of megabytes read their own bytes, not the page") {
    val field = LanceField(0, "x", new ArrowType.Int(64, true), nullable = true)
    val n = 1000000
    val a = new RootAllocator()
    try {
      val out = new ByteArrayOutputStream
      val w = new FileWriter20(out, LanceSchema(Seq(field)), maxPageBytes = 64L << 20)
      val v = new org.apache.arrow.vector.BigIntVector("x", a)
      try {
        v.allocateNew(n)
        (0 until n).foreach(i => v.set(i, i * 3L))
        v.setValueCount(n)
        w.write(Seq(v))
      } finally v.close()
      w.finish()
      val bytes = out.toByteArray
      val rowsAsked = Array(0L, 1L, 4096L, 500000L, 500001L, n - 1L)
      for (cheap <- Seq(true, false)) {
        val in = new BytesInputFile(bytes, readsCheaply = cheap)
        val reader = new FileReader20(in)
        val opened = in.reads.map(_._2.toLong).sum
        val got = reader.readRows(field, _ => 0, rowsAsked, a)
        try assert((0 until got.getValueCount).map(got.asInstanceOf[org.apache.arrow.vector.BigIntVector].get(_)) == rowsAsked.toSeq.map(_ * 3))
        finally got.close()
        // From an object store, the page in one request, as a scan reads it.
        val fetched = in.reads.map(_._2.toLong).sum - opened
        if (cheap) assert(fetched < 4096, in.reads.drop(1)) else assert(fetched > 7L * n && in.reads.size - 1 <= 2, in.reads)
      }
    } finally a.close()
  }

  test("a few strings out of a page of megabytes read their own bytes, not the page") {
    val field = LanceField(0, "s", ArrowType.Utf8.INSTANCE, nullable = true)
    val n = 100000
    val a = new RootAllocator()
    try {
      val strings = IndexedSeq.tabulate(n)(i => if (i % 7 == 3) null else f"row-$i%08d-" + "x" * (i % 97))
      val out = new ByteArrayOutputStream
      val w = new FileWriter20(out, LanceSchema(Seq(field)), maxPageBytes = 64L << 20)
      val v = new VarCharVector("s", a)
      try {
        v.allocateNew(n)
        strings.zipWithIndex.foreach { case (s, i) => if (s == null) v.setNull(i) else v.setSafe(i, s.getBytes("UTF-8")) }
        v.setValueCount(n)
        w.write(Seq(v))
      } finally v.close()
      w.finish()
      val bytes = out.toByteArray
      assert(new ContainerReader(new BytesInputFile(bytes)).columns(0).getPagesCount == 1)
      val rowsAsked = Array(0L, 3L, 17L, 25000L, 25001L, 52003L, n - 1L)
      // The page holds about 6 MB; the rows asked for, a few hundred bytes and their end offsets.
      assert(bytes.length > 5000000)
      for (cheap <- Seq(true, false)) {
        val in = new BytesInputFile(bytes, readsCheaply = cheap)
        val reader = new FileReader20(in)
        val opened = in.reads.map(_._2.toLong).sum
        val got = reader.readRows(field, _ => 0, rowsAsked, a)
        try assert(Rows(got).map { case b: Seq[_] => new String(b.map(_.asInstanceOf[Byte]).toArray, "UTF-8"); case other => other } ==
          rowsAsked.toIndexedSeq.map(r => strings(r.toInt)))
        finally got.close()
        val fetched = in.reads.map(_._2.toLong).sum - opened
        if (cheap) assert(fetched < 4096, in.reads.drop(1)) else assert(fetched > 5000000 && in.reads.size - 1 <= 2, in.reads)
      }
    } finally a.close()
  }
}
