package sparklance.format.table

import java.nio.file.Files
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.{CommitConflictException, SchemaChangeException}
import sparklance.format.commit.{Committer, Operation}
import sparklance.format.io.LocalStorage
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}
import sparklance.format.table.SchemaChange._

/** Field ids, operations and refusals of schema changes (LANCE-SCHEMA-EVOLUTION.md §2-§6), and the type-change race. */
class SchemaEvolutionSuite extends AnyFunSuite {
  private val int32 = new ArrowType.Int(32, true)
  private def field(name: String, t: ArrowType = int32, nullable: Boolean = true, kids: Seq[Field] = Nil) =
    new Field(name, new FieldType(nullable, t, null), kids.asJava)

  /** a int32, s struct<x int32>: ids a#0 s#1 x#2; one fragment whose file lists a and x, another file listing id 5. */
  private def table(): Dataset = {
    val ds = new Dataset(LocalStorage, Files.createTempDirectory("evolution").resolve("t.lance").toString)
    val schema = LanceSchema.fromArrow(new Schema(List(field("a"), field("s", ArrowType.Struct.INSTANCE, kids = Seq(field("x")))).asJava))
    new Committer(ds).commit(None, Operation.Overwrite(Nil, schema, Map(Committer.StorageVersionKey -> "2.2")))
    val fragment = DataFragment.newBuilder().setPhysicalRows(3)
      .addFiles(DataFile.newBuilder().setPath("f.lance").addFields(0).addFields(2).addColumnIndices(0).addColumnIndices(1))
      .addFiles(DataFile.newBuilder().setPath("old.lance").addFields(5).addColumnIndices(0)).build()
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(fragment)))
    ds
  }

  test("new fields take ids above every id the schema or a current data file uses, depth first; adds are a Merge") {
    val ds = table()
    val e = SchemaEvolution.plan("t", ds.snapshot(), Seq(
      AddField(Seq("d"), field("d", ArrowType.Struct.INSTANCE, kids = Seq(field("p"), field("q")))),
      AddField(Seq("s", "y"), field("y"))))
    assert(e.schema.allFields.map(f => f.name -> f.id) == Seq("a" -> 0, "s" -> 1, "x" -> 2, "y" -> 9, "d" -> 6, "p" -> 7, "q" -> 8))
    e.operation match {
      case Operation.Merge(fragments, _, pn) => assert(pn && fragments == ds.snapshot().fragments, "no data written")
      case other => fail(s"expected a Merge, got $other")
    }
    val committed = new Committer(ds).commit(Some(ds.snapshot()), e.operation).snapshot
    assert(committed.fragments.map(_.getFilesCount) == Seq(1), "the file holding only id 5, which no field has, leaves")
  }

  test("drops, renames and nullability are a Project; what would break the table is refused, naming the column") {
    val ds = table()
    val dropped = SchemaEvolution.plan("t", ds.snapshot(), Seq(DropField(Seq("s")), RenameField(Seq("a"), "b")))
    assert(dropped.operation == Operation.Project(dropped.schema, preservesNullability = true))
    assert(dropped.schema.allFields.map(f => f.name -> f.id) == Seq("b" -> 0))
    def refused(changes: SchemaChange*): String =
      intercept[SchemaChangeException](SchemaEvolution.plan("t", ds.snapshot(), changes)).getMessage
    assert(refused(DropField(Seq("nope"))).contains("'nope'"))
    assert(refused(DropField(Seq("s", "x"))).contains("at least one field"))
    assert(refused(AddField(Seq("a"), field("a"))).contains("already exists"))
    assert(refused(AddField(Seq("n"), field("n", nullable = false))).contains("nullable"))
    assert(refused(DropField(Seq("a")), DropField(Seq("s"))).contains("at least one column"))
    assert(refused(ChangeType(Seq("a"), new ArrowType.FloatingPoint(org.apache.arrow.vector.types.FloatingPointPrecision.DOUBLE)))
      .contains("change meaning"))
    assert(refused(ChangeType(Seq("s", "x"), new ArrowType.Int(64, true))).contains("inside a struct"))
    val tightened = SchemaEvolution.plan("t", ds.snapshot(), Seq(SetNullable(Seq("a"), nullable = false)))
    assert(tightened.tightened == Seq(Seq("a")) && tightened.operation == Operation.Project(tightened.schema, preservesNullability = false))
  }

  test("an append written before a concurrent type change retries instead of landing as NULLs") {
    val ds = table()
    val read = ds.snapshot()
    // pylance's cast: a Merge that gives 'a' a new id and preserves nullability.
    val cast = SchemaEvolution.plan("t", read, Seq(ChangeType(Seq("a"), new ArrowType.Int(64, true))))
    val merge = cast.withFiles(read.fragments.map(f => f.getId -> DataFile.newBuilder().setPath("cast.lance")
      .addFields(cast.retyped.head.to.id).addColumnIndices(0).build()).toMap).asInstanceOf[Operation.Merge]
    new Committer(ds).commit(Some(read), merge.copy(preservesNullability = true))
    val staged = DataFragment.newBuilder().setPhysicalRows(1)
      .addFiles(DataFile.newBuilder().setPath("late.lance").addFields(0).addFields(2).addColumnIndices(0).addColumnIndices(1)).build()
    val e = intercept[CommitConflictException](new Committer(ds).commit(Some(read), Operation.Append(Seq(staged))))
    assert(e.retryable && e.getMessage.contains("the type of a changed"), e.getMessage)
  }
}
