package sparklance.spark

import java.nio.file.{Files, Paths}
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.BigIntVector
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.apache.spark.sql.types.{BooleanType, IntegerType, LongType, StructField, StructType}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format.CorruptFileException
import sparklance.format.io.{LocalStorage, Storage}
import sparklance.format.table.{FragmentWriter, LanceSchema, StorageVersion}
import sparklance.spark.scan.{FragmentSplit, LanceColumnarReader, LanceInputPartition, ReadTarget}
import sparklance.spark.write.{ArrowRowWriter, FragmentSink, WriteTarget}
import sparklance.format.table.BasePaths
import sparklance.spark.errors.LanceExecutionException

/** Arrow memory taken by a reader or writer that then fails to construct is given back. */
class ArrowLeakSuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(List(
    new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null),
    new Field("flag", FieldType.nullable(ArrowType.Bool.INSTANCE), null)).asJava))

  /** Runs `body` with a child allocator that must close without a leak. */
  private def leakChecked(body: RootAllocator => Unit): Unit = {
    val root = new RootAllocator()
    body(root)
    root.close() // throws IllegalStateException("Memory was leaked ...") if anything is still allocated
  }

  test("ArrowRowWriter releases its vectors when a column's type cannot be written") {
    leakChecked { allocator =>
      // BOOLEAN data cannot be written as INT: the second setter fails after both vectors were allocated.
      intercept[UnsupportedTypeException](new ArrowRowWriter("t", schema.fields, Seq(LongType, IntegerType), allocator))
    }
  }

  test("FragmentSink releases its row buffers when its file writer cannot be made") {
    leakChecked { allocator =>
      // No data file can hold 0 rows: the file writer refuses the target.
      val target = WriteTarget("t", BasePaths.own(Files.createTempDirectory("sink").toString), schema.toProto.map(_.toByteArray).toArray,
        StorageVersion.V2_0, 0L, Map.empty[String, String])
      intercept[IllegalArgumentException](new FragmentSink(target, Seq(LongType, BooleanType), allocator))
    }
  }

  test("a columnar reader whose data file cannot be opened gives back its allocator when closed") {
    val dir = Files.createTempDirectory("reader").toString
    val fragment = Using.resource(new RootAllocator()) { allocator =>
      val writer = new FragmentWriter(LocalStorage, dir, LanceSchema(Seq(schema.fields.head)), StorageVersion.V2_0, allocator)
      Using.resource(new BigIntVector("id", allocator)) { v =>
        v.allocateNew(2); v.set(0, 1L); v.set(1, 2L); v.setValueCount(2)
        writer.write(Seq(v))
      }
      writer.finish().head.toBuilder.setId(41).build()
    }
    Files.write(Paths.get(Storage.join(dir, s"data/${fragment.getFiles(0).getPath}")), Array.fill[Byte](64)(7))
    val target = ReadTarget("t", BasePaths.own(dir), Seq(schema.fields.head), StructType(Seq(StructField("id", LongType))), Map.empty, 32L << 20)
    def children = Allocators.root.getChildAllocators.asScala.count(_.getName.startsWith("scan-41-"))
    val reader = new LanceColumnarReader(target, LanceInputPartition(IndexedSeq(FragmentSplit(fragment.toByteArray, 0, 2))))
    // The split's file is opened by the first batch; Spark closes the reader of a failed task.
    // A scan task raises its error in Spark's framework, the file's own error as the cause.
    try assert(intercept[LanceExecutionException](reader.next()).getCause.isInstanceOf[CorruptFileException])
    finally reader.close()
    assert(children == 0)
  }
}
