package sparklance.format.table

import java.nio.file.Files
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.BigIntVector
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.roaringbitmap.RoaringBitmap
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format.deletion.DeletionFiles
import sparklance.format.io.LocalStorage

class FragmentScannerSuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(List(
    new Field("v", FieldType.notNullable(new ArrowType.Int(64, true)), null)).asJava))

  /** Writes rows 0..n-1 (value = offset) as one fragment and returns it. */
  private def fragment(dir: String, n: Int, allocator: RootAllocator) = {
    val writer = new FragmentWriter(LocalStorage, dir, schema, StorageVersion.V2_0, allocator)
    Using.resource(new BigIntVector("v", allocator)) { v =>
      v.allocateNew(n); (0 until n).foreach(i => v.set(i, i.toLong)); v.setValueCount(n)
      writer.write(Seq(v))
    }
    writer.finish().head.toBuilder.setId(4).build()
  }

  test("live rows and their offsets, across deleted runs and scattered deletions") {
    Using.resource(new RootAllocator()) { allocator =>
      val dir = Files.createTempDirectory("scan").toString
      val n = 20000
      val deleted = new RoaringBitmap()
      deleted.add(0L, 10L)                         // a deleted prefix
      (3000 until 4000 by 3).foreach(deleted.add)   // scattered: compacted windows
      deleted.add(9000L, 12500L)                   // a run longer than a batch
      deleted.add(19999)
      val base = fragment(dir, n, allocator)
      val withDeletions = base.toBuilder.setDeletionFile(DeletionFiles.write(LocalStorage, dir, 4, 1, deleted)).build()
      for ((start, end) <- Seq((0L, n.toLong), (2500L, 15000L))) {
        val scanner = new FragmentScanner(LocalStorage, dir, withDeletions, schema.fields, allocator, start, end, batchRows = 1024)
        val values = scala.collection.mutable.ArrayBuffer.empty[Long]
        val offsets = scala.collection.mutable.ArrayBuffer.empty[Int]
        scanner.foreach { b =>
          val v = b.vectors.head.asInstanceOf[BigIntVector]
          (0 until b.numRows).foreach(i => values += v.get(i))
          offsets ++= b.offsets
          b.close()
        }
        scanner.close()
        val expected = (start until end).filterNot(i => deleted.contains(i.toInt))
        assert(values == expected)
        assert(offsets.map(_.toLong) == expected)
      }
    }
  }
}
