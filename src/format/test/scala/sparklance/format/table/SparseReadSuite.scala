package sparklance.format.table

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.{BigIntVector, FieldVector, Float8Vector, IntVector, VarCharVector}
import org.apache.arrow.vector.types.FloatingPointPrecision
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.roaringbitmap.RoaringBitmap
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.{Random, Using}
import sparklance.format.io.LocalStorage

/**
 * Reads of the scattered rows data skipping keeps (`within`): from 2.1 / 2.2 files they decode
 * only the mini-block chunks holding those rows, and must return exactly what a whole read
 * returns at the same offsets, for bit-packed, nullable, floating point, dictionary and
 * variable-width columns.
 */
class SparseReadSuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(List(
    new Field("k", FieldType.notNullable(new ArrowType.Int(64, true)), null),
    new Field("n", FieldType.nullable(new ArrowType.Int(32, true)), null),
    new Field("d", FieldType.notNullable(new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)), null),
    new Field("c", FieldType.nullable(ArrowType.Utf8.INSTANCE), null),
    new Field("s", FieldType.notNullable(ArrowType.Utf8.INSTANCE), null)).asJava))

  private val rows = 200000

  private def write(dir: String, version: StorageVersion, allocator: RootAllocator) = {
    val rnd = new Random(7)
    val writer = new FragmentWriter(LocalStorage, dir, schema, version, allocator)
    val k = new BigIntVector("k", allocator)
    val n = new IntVector("n", allocator)
    val d = new Float8Vector("d", allocator)
    val c = new VarCharVector("c", allocator)
    val s = new VarCharVector("s", allocator)
    val vectors = Seq[FieldVector](k, n, d, c, s)
    try {
      vectors.foreach(_.setInitialCapacity(rows))
      vectors.foreach(_.allocateNew())
      for (i <- 0 until rows) {
        k.setSafe(i, i * 3L)
        if (rnd.nextInt(5) == 0) n.setNull(i) else n.setSafe(i, rnd.nextInt(1000))
        d.setSafe(i, rnd.nextGaussian())
        if (rnd.nextInt(9) == 0) c.setNull(i) else c.setSafe(i, s"category-${rnd.nextInt(12)}".getBytes(UTF_8))
        s.setSafe(i, s"row $i ${"x" * rnd.nextInt(40)}".getBytes(UTF_8))
      }
      vectors.foreach(_.setValueCount(rows))
      writer.write(vectors)
    } finally vectors.foreach(_.close())
    writer.finish().head.toBuilder.setId(0).build()
  }

  /** Row offset -> the row's values as text, and the data bytes read. */
  private def scan(dir: String, fragment: sparklance.format.proto.TableProtos.DataFragment, allocator: RootAllocator,
      within: Option[RoaringBitmap], only: Option[RoaringBitmap] = None): (Map[Int, String], Long) = {
    val scanner = new FragmentScanner(LocalStorage, BasePaths.own(dir), fragment, schema.fields, allocator, 0, rows, batchRows = 4096,
      within = within, only = only)
    val out = mutable.Map.empty[Int, String]
    try scanner.foreach { b =>
      try (0 until b.numRows).foreach(i => out(b.offsets(i)) = b.vectors.map(v => String.valueOf(v.getObject(i))).mkString("|"))
      finally b.close()
    } finally scanner.close()
    (out.toMap, scanner.bytesRead)
  }

  for (version <- Seq(StorageVersion.V2_1, StorageVersion.V2_2)) {
    test(s"scattered runs of rows read from file format $version equal the whole read, from a fraction of its bytes") {
      Using.resource(new RootAllocator()) { allocator =>
        val dir = Files.createTempDirectory("sparse").toString
        val fragment = write(dir, version, allocator)
        val (whole, wholeBytes) = scan(dir, fragment, allocator, None)
        assert(whole.size == rows)
        val rnd = new Random(11)
        for (trial <- 0 until 20) {
          val within = new RoaringBitmap()
          for (_ <- 0 until 1 + rnd.nextInt(4)) {
            val start = rnd.nextInt(rows)
            within.add(start.toLong, math.min(rows, start + 1 + rnd.nextInt(if (trial % 2 == 0) 20 else 3000)).toLong)
          }
          val (part, bytes) = scan(dir, fragment, allocator, Some(within))
          assert(part.keySet == within.toArray.toSet, s"trial $trial")
          part.foreach { case (offset, values) => assert(values == whole(offset), s"trial $trial, row $offset") }
          if (trial % 2 == 0) assert(bytes * 10 < wholeBytes, s"trial $trial read $bytes of $wholeBytes bytes")
        }
        // Rows named one by one: every k-th row, and a few random rows, which must cost few bytes.
        for ((named, trial) <- Seq(RoaringBitmap.bitmapOf((0 until rows by 100): _*), RoaringBitmap.bitmapOf((0 until rows by 3): _*),
            RoaringBitmap.bitmapOf(Seq.fill(30)(rnd.nextInt(rows)): _*)).zipWithIndex) {
          val (part, bytes) = scan(dir, fragment, allocator, None, only = Some(named))
          assert(part.keySet == named.toArray.toSet, s"named rows $trial")
          part.foreach { case (offset, values) => assert(values == whole(offset), s"named rows $trial, row $offset") }
          if (trial == 2) assert(bytes * 10 < wholeBytes, s"30 named rows read $bytes of $wholeBytes bytes")
        }
      }
    }
  }
}
