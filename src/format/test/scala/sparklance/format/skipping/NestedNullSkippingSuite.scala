package sparklance.format.skipping

import java.nio.file.Files
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.IntVector
import org.apache.arrow.vector.complex.StructVector
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Using
import sparklance.format.commit.{CommitRecord, CommitRetries, Committer, Operation, Statement}
import sparklance.format.index.Indices
import sparklance.format.io.LocalStorage
import sparklance.format.skipping.ColumnFilter._
import sparklance.format.table.{Dataset, LanceSchema, StorageVersion}
import sparklance.format.table.BasePaths

/**
 * A field below a struct is NULL wherever the struct is, whatever its own values say. A zone map
 * on `st.a` built from the child values alone, as an index on a file that stores valid children
 * under NULL structs says, counts no nulls: data skipping must not answer a null test on such a
 * field from it, unless the schema lets no ancestor be NULL.
 */
class NestedNullSkippingSuite extends AnyFunSuite {
  private val rows = 400

  /**
   * A table of `st STRUCT<a INT>` whose `st` is NULL in every 4th row (when `nullable`) while `a`
   * holds a value in every row, and a zone map on `st.a` of zones of 100 rows built from `a` alone;
   * returns data skipping on the newest version and the id of `st.a`.
   */
  private def table(nullable: Boolean)(check: (DataSkipping, Int) => Unit): Unit =
    Using.resource(new RootAllocator()) { allocator =>
      val path = Files.createTempDirectory("nested-null-skipping").resolve("t.lance").toString
      try {
        val dataset = new Dataset(LocalStorage, path)
        val a = new Field("a", FieldType.nullable(new ArrowType.Int(32, true)), null)
        val st = new Field("st", new FieldType(nullable, ArrowType.Struct.INSTANCE, null), java.util.List.of(a))
        dataset.create(LanceSchema.fromArrow(new Schema(java.util.List.of(st))), StorageVersion.V2_1)
        val created = dataset.snapshot()
        Using.resources(dataset.newWriter(created, allocator), st.createVector(allocator).asInstanceOf[StructVector]) { (writer, vector) =>
          val values = vector.getChild("a", classOf[IntVector])
          vector.allocateNew()
          (0 until rows).foreach { i =>
            values.setSafe(i, i)
            if (nullable && i % 4 == 0) vector.setNull(i) else vector.setIndexDefined(i)
          }
          values.setValueCount(rows); vector.setValueCount(rows)
          writer.write(Seq(vector))
          new Committer(dataset).commit(Some(created), Operation.Append(writer.finish()))
        }
        val written = dataset.snapshot()
        val aId = written.schema.allFields.find(_.name == "a").get.id
        val fragment = written.fragments.head.getId
        val zones = new ZoneBuilder(fragment, 100)
        (0 until rows).foreach(i => zones.add(i, Some(ZoneValue.Integral(i))))
        val segment = ZoneMapSegment.create(LocalStorage, path, "a_zm", aId, new ArrowType.Int(32, true), zones.result(),
          Seq(fragment), written.version, 100, allocator)
        ZoneMapSegment.commit(dataset, written, Seq(segment), Nil, CommitRetries(1), CommitRecord(Statement.CreateIndex))
        val indexed = dataset.snapshot()
        val indices = Indices.parse(indexed.file.indexSection, path)
        check(new DataSkipping(LocalStorage, BasePaths.own(path), indexed.schema, indices, indexed.fragments, indexed.stableRowIds, allocator), aId)
      } finally LocalStorage.deleteRecursively(path)
    }

  test("null tests on a field of a nullable struct are not answered by its index; comparisons are") {
    table(nullable = true) { (skipping, a) =>
      // No fragment restricted: each is read whole.
      assert(skipping.candidates(IsNull(a)) == Map.empty)
      assert(skipping.candidates(Not(IsNotNull(a))) == Map.empty)
      assert(skipping.candidates(IsNotNull(a)) == Map.empty)
      assert(skipping.candidates(Or(IsNull(a), Compare(a, CompareOp.Equal, ZoneValue.Integral(5)))) == Map.empty)
      // A comparison is true only where the struct holds a value, which the index describes.
      val point = skipping.candidates(Compare(a, CompareOp.Equal, ZoneValue.Integral(250)))
      assert(point.values.map(_.toArray.toSeq).toSeq == Seq(200 until 300))
      val both = skipping.candidates(And(IsNull(a), Compare(a, CompareOp.Less, ZoneValue.Integral(50))))
      assert(both.values.map(_.toArray.toSeq).toSeq == Seq(0 until 100))
    }
  }

  test("null tests on a field of a struct that cannot be NULL are answered by its index") {
    table(nullable = false) { (skipping, a) =>
      assert(skipping.candidates(IsNull(a)).values.map(_.isEmpty).toSeq == Seq(true))
      assert(skipping.candidates(IsNotNull(a)).values.map(_.getCardinality).toSeq == Seq(rows))
    }
  }
}
