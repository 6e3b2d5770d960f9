package sparklance.format.table

import java.nio.file.Files
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.BigIntVector
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format.io.LocalStorage

class FragmentWriterSuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(List(
    new Field("v", FieldType.notNullable(new ArrowType.Int(64, true)), null)).asJava))

  private def writeRows(n: Int, maxRowsPerFile: Long): Seq[Long] =
    Using.resource(new RootAllocator()) { allocator =>
      val dir = Files.createTempDirectory("fragments").toString
      val writer = new FragmentWriter(LocalStorage, dir, schema, StorageVersion.V2_0, allocator, maxRowsPerFile)
      Using.resource(new BigIntVector("v", allocator)) { v =>
        v.allocateNew(n); (0 until n).foreach(i => v.set(i, i.toLong)); v.setValueCount(n)
        writer.write(Seq(v))
      }
      writer.finish().map(_.getPhysicalRows)
    }

  test("limits above Int.MaxValue, up to Lance's u32 limit, keep every row in one file") {
    for (limit <- Seq(1L << 31, (1L << 32) - 2, FragmentWriter.MaxRowsPerFile))
      assert(writeRows(10, limit) == Seq(10L), s"max rows per file $limit")
  }

  test("files are cut at the limit") {
    assert(writeRows(10, 4) == Seq(4L, 4L, 2L))
  }

  test("a limit outside 1 to u32::MAX is refused") {
    for (limit <- Seq(0L, FragmentWriter.MaxRowsPerFile + 1)) {
      val e = intercept[IllegalArgumentException](writeRows(1, limit))
      assert(e.getMessage.contains(limit.toString) && e.getMessage.contains(FragmentWriter.MaxRowsPerFile.toString))
    }
  }
}
