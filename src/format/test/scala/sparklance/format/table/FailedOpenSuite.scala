package sparklance.format.table

import java.nio.file.{Files, Paths}
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.BigIntVector
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}
import sparklance.format.file.DataFileReader
import sparklance.format.io.{Storage, TrackingStorage}
import sparklance.format.proto.TableProtos.DataFragment

/** What a reader or writer opened is closed when it then fails to open. */
class FailedOpenSuite extends AnyFunSuite {
  private def field(name: String) = new Field(name, FieldType.notNullable(new ArrowType.Int(64, true)), null)

  /** One fragment whose columns `a` and `b` sit in two data files; the path of `b`'s file. */
  private def twoFileFragment(storage: Storage, dir: String, allocator: RootAllocator): (DataFragment, LanceSchema, String) = {
    val schema = LanceSchema.fromArrow(new Schema(List(field("a"), field("b")).asJava))
    val files = schema.fields.map { f =>
      val writer = new FragmentWriter(storage, dir, LanceSchema(Seq(f)), StorageVersion.V2_0, allocator)
      Using.resource(new BigIntVector(f.name, allocator)) { v =>
        v.allocateNew(3); (0 until 3).foreach(i => v.set(i, i.toLong)); v.setValueCount(3)
        writer.write(Seq(v))
      }
      writer.finish().head.getFiles(0)
    }
    (DataFragment.newBuilder().setId(0).setPhysicalRows(3).addAllFiles(files.asJava).build(), schema,
      Storage.join(dir, s"data/${files(1).getPath}"))
  }

  test("a data file that cannot be opened is closed, and so are those the scanner opened before it") {
    Using.resource(new RootAllocator()) { allocator =>
      val storage = new TrackingStorage
      val dir = Files.createTempDirectory("failed-open").toString
      val (fragment, schema, second) = twoFileFragment(storage, dir, allocator)
      Files.write(Paths.get(second), Array.fill[Byte](64)(7)) // no Lance footer
      intercept[CorruptFileException](DataFileReader.open(storage.openInput(second), 2, 0))
      assert(storage.open == 0)
      intercept[UnsupportedFeatureException](DataFileReader.open(storage.openInput(second), 9, 9))
      assert(storage.open == 0)
      intercept[CorruptFileException](new FragmentScanner(storage, BasePaths.own(dir), fragment, schema.fields, allocator, 0, 3))
      assert(storage.opened.get > 0 && storage.open == 0)
    }
  }

  test("a data file writer that cannot be made closes the stream it was given") {
    Using.resource(new RootAllocator()) { allocator =>
      val storage = new TrackingStorage
      val packed = new Field("p", new FieldType(false, new ArrowType.Int(64, true), null,
        Map("lance-encoding:packed" -> "true").asJava), null)
      val writer = new FragmentWriter(storage, Files.createTempDirectory("failed-writer").toString,
        LanceSchema.fromArrow(new Schema(List(packed).asJava)), StorageVersion.V2_1, allocator)
      Using.resource(new BigIntVector(packed, allocator)) { v =>
        v.allocateNew(1); v.set(0, 1L); v.setValueCount(1)
        intercept[UnsupportedFeatureException](writer.write(Seq(v)))
      }
      assert(storage.opened.get == 1 && storage.open == 0)
      writer.abort()
    }
  }
}
