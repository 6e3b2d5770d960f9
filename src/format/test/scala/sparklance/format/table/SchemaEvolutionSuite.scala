package sparklance.format.table

import java.nio.file.Files
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.{CommitConflictException, SchemaChangeException}
import sparklance.format.commit.{Committer, Operation, Transactions}
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

  test("a list column made a vector: a new field id, the item type kept in the field; what is no list of primitives is refused") {
    val ds = new Dataset(LocalStorage, Files.createTempDirectory("evolution").resolve("v.lance").toString)
    val float32 = new ArrowType.FloatingPoint(org.apache.arrow.vector.types.FloatingPointPrecision.SINGLE)
    val schema = LanceSchema.fromArrow(new Schema(List(field("a"), field("emb", ArrowType.List.INSTANCE, kids = Seq(field("item", float32))),
      field("nested", ArrowType.List.INSTANCE, kids = Seq(field("item", ArrowType.Struct.INSTANCE, kids = Seq(field("x")))))).asJava))
    new Committer(ds).commit(None, Operation.Overwrite(Nil, schema, Map(Committer.StorageVersionKey -> "2.2")))
    val e = SchemaEvolution.plan("t", ds.snapshot(), Seq(MakeVector(Seq("emb"), 3)))
    val vector = e.schema.fields(1)
    assert(vector.id == schema.maxFieldId + 1 && vector.children.isEmpty && vector.arrowItemType.contains(float32))
    assert(vector.arrowType == new ArrowType.FixedSizeList(3) && e.retyped.map(_.from.name) == Seq("emb"))
    assert(e.operation.isInstanceOf[Operation.Merge] && !e.operation.asInstanceOf[Operation.Merge].preservesNullability)
    assert(SchemaDiff.of(schema, e.schema).map(_.getClass.getSimpleName) == Seq("Retyped"), "the list's item goes with it")
    def refused(change: SchemaChange): String =
      intercept[SchemaChangeException](SchemaEvolution.plan("t", ds.snapshot(), Seq(change))).getMessage
    assert(refused(MakeVector(Seq("a"), 3)).contains("only a list (ARRAY) column"))
    assert(refused(MakeVector(Seq("nested"), 3)).contains("primitive type"))
    assert(refused(MakeVector(Seq("emb"), 0)).contains("positive"))
    val converted = new Committer(ds).commit(Some(ds.snapshot()), e.operation).snapshot
    assert(intercept[SchemaChangeException](SchemaEvolution.plan("t", converted, Seq(MakeVector(Seq("emb"), 4))))
      .getMessage.contains("a vector of 3 items already"))
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

  test("a write and its schema change are one Merge; concurrent writers pass it or make it retry as the change requires") {
    def pending(read: Snapshot, changes: SchemaChange*): PendingSchema = {
      val e = SchemaEvolution.plan("t", read, changes)
      val files = e.retyped.headOption.fold(Map.empty[Long, DataFile])(r => read.fragments.map(f => f.getId ->
        DataFile.newBuilder().setPath(s"cast-${f.getId}.lance").addFields(r.to.id).addColumnIndices(0).build()).toMap)
      PendingSchema(read, e.schema, files, e.retyped.nonEmpty, e.operation.asInstanceOf[Operation.Merge].preservesNullability)
    }
    def rows(path: String, fields: Int*) = DataFragment.newBuilder().setPhysicalRows(2)
      .addFiles(DataFile.newBuilder().setPath(path).addAllFields(fields.map(Int.box).asJava)
        .addAllColumnIndices(fields.indices.map(Int.box).asJava)).build()

    // An added column passes a concurrent append: its rows read the new column as NULL.
    val ds = table()
    val read = ds.snapshot()
    val add = pending(read, AddField(Seq("b"), field("b")))
    assert(add.view.schema.field("b").isDefined && add.view.version == read.version)
    new Committer(ds).commit(Some(read), Operation.Append(Seq(rows("theirs.lance", 0, 2))))
    val landed = new Committer(ds).commit(Some(read), Operation.Evolving(Operation.Append(Seq(rows("ours.lance", 0, 2, 6))), add)).snapshot
    assert(landed.version == read.version + 2 && landed.schema.field("b").map(_.id).contains(6))
    assert(landed.fragments.map(_.getFilesList.asScala.map(_.getPath).mkString("+")) == Seq("f.lance", "theirs.lance", "ours.lance"))
    val recorded = Transactions.committed(ds, landed.version).get
    assert(recorded.hasMerge && recorded.getMerge.getFragmentsCount == 3 && recorded.getMerge.getPreservesNullability &&
      recorded.getReadVersion == read.version + 1, "recorded as pylance's Merge of the whole list, read at the version it rebased on")

    // A retyped column does not: the concurrent rows hold the old type under the old id.
    val ds2 = table()
    val read2 = ds2.snapshot()
    val retype = pending(read2, ChangeType(Seq("a"), new ArrowType.Int(64, true)))
    new Committer(ds2).commit(Some(read2), Operation.Append(Seq(rows("theirs.lance", 0, 2))))
    val e = intercept[CommitConflictException](new Committer(ds2).commit(Some(read2),
      Operation.Evolving(Operation.Append(Seq(rows("ours.lance", 6, 2))), retype)))
    assert(e.retryable && e.getMessage.contains("without the new type"), e.getMessage)
    assert(ds2.latestVersion == read2.version + 1)
    // Without a concurrent writer it lands: the old fragment gains its column file.
    val read3 = ds2.snapshot()
    val retyped = new Committer(ds2).commit(Some(read3), Operation.Evolving(Operation.Append(Nil),
      pending(read3, ChangeType(Seq("a"), new ArrowType.Int(64, true))))).snapshot
    assert(retyped.fragments.map(_.getFilesList.asScala.map(_.getPath).mkString("+")) ==
      Seq("f.lance+cast-0.lance", "theirs.lance+cast-1.lance"))

    // Nor does any change passed a concurrent schema change.
    val ds3 = table()
    val read4 = ds3.snapshot()
    new Committer(ds3).commit(Some(read4), SchemaEvolution.plan("t", read4, Seq(AddField(Seq("c"), field("c")))).operation)
    val e2 = intercept[CommitConflictException](new Committer(ds3).commit(Some(read4),
      Operation.Evolving(Operation.Append(Nil), pending(read4, AddField(Seq("b"), field("b"))))))
    assert(e2.retryable && e2.getMessage.contains("changed the schema"), e2.getMessage)
  }
}
