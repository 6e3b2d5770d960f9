package sparklance.format.commit

import com.google.protobuf.ByteString
import java.nio.file.Files
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.roaringbitmap.RoaringBitmap
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.LanceException
import sparklance.format.io.LocalStorage
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}
import sparklance.format.rowids.{RowIdSequences, RowLineage, VersionSequences}
import sparklance.format.table.{Dataset, FeatureFlags, LanceSchema}

class StableRowIdCommitSuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(List(
    new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null)).asJava))

  private def fragment(rows: Long, file: String) = DataFragment.newBuilder().setPhysicalRows(rows)
    .addFiles(DataFile.newBuilder().setPath(file).addFields(0).addColumnIndices(0).setFileMajorVersion(2)).build()

  private def stableTable(): Dataset = {
    val ds = new Dataset(LocalStorage, Files.createTempDirectory("rowids").resolve("t.lance").toString)
    new Committer(ds).commit(None, Operation.Overwrite(Nil, schema, stableRowIds = Some(true)))
    ds
  }

  private def ids(ds: Dataset, f: DataFragment) = RowLineage.rowIds(ds.storage, ds.path, f).get.toSeq
  private def created(ds: Dataset, f: DataFragment) = RowLineage.createdAt(ds.storage, ds.path, f).get.toSeq
  private def updated(ds: Dataset, f: DataFragment) = RowLineage.lastUpdatedAt(ds.storage, ds.path, f).get.toSeq

  test("appends get consecutive row ids and their version; the flag and next_row_id are set") {
    val ds = stableTable()
    assert(ds.snapshot().stableRowIds && ds.snapshot().manifest.getNextRowId == 0)
    val v2 = new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(fragment(3, "a"), fragment(2, "b")))).snapshot
    assert(v2.fragments.map(ids(ds, _)) == Seq(Seq(0L, 1L, 2L), Seq(3L, 4L)))
    assert(v2.fragments.flatMap(created(ds, _)).forall(_ == 2) && v2.fragments.flatMap(updated(ds, _)).forall(_ == 2))
    assert(v2.manifest.getNextRowId == 5)
    assert((v2.manifest.getReaderFeatureFlags & FeatureFlags.StableRowIds) != 0)
    assert((v2.manifest.getWriterFeatureFlags & FeatureFlags.StableRowIds) != 0)
  }

  test("an append rebased after losing a race is given ids from the winner's high-water mark") {
    val ds = stableTable()
    val read = ds.snapshot()
    new Committer(ds).commit(Some(read), Operation.Append(Seq(fragment(4, "a"))))
    val second = new Committer(ds).commit(Some(read), Operation.Append(Seq(fragment(3, "b")))).snapshot
    assert(second.version == 3)
    assert(second.fragments.map(ids(ds, _)) == Seq(Seq(0L, 1L, 2L, 3L), Seq(4L, 5L, 6L)))
    assert(created(ds, second.fragments(1)) == Seq(3L, 3L, 3L))
    assert(second.manifest.getNextRowId == 7)
  }

  test("rewritten rows keep their ids and created-at versions; the rest of their fragment is new") {
    val ds = stableTable()
    val v2 = new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(fragment(5, "a")))).snapshot
    val old = v2.fragments.head
    // An update of rows 1 and 3 into a new fragment that also holds two inserted rows.
    val rewritten = fragment(4, "b").toBuilder
      .setInlineRowIds(ByteString.copyFrom(RowIdSequences.encode(Array(1L, 3L))))
      .setInlineCreatedAtVersions(ByteString.copyFrom(VersionSequences.encode(Array(2L, 2L)))).build()
    val deleted = RoaringBitmap.bitmapOf(1, 3)
    val op = RowLevelCommit.operation(ds, v2, Map(old.getId -> deleted), Seq(rewritten), isDelete = false, predicate = "")
    val v3 = new Committer(ds).commit(Some(v2), op).snapshot
    val added = v3.fragments.last
    assert(ids(ds, added) == Seq(1L, 3L, 5L, 6L))
    assert(created(ds, added) == Seq(2L, 2L, 3L, 3L))
    assert(updated(ds, added) == Seq(3L, 3L, 3L, 3L))
    // The old fragment keeps its sequences; its deletion file hides the old copies.
    assert(ids(ds, v3.fragments.head) == Seq(0L, 1L, 2L, 3L, 4L))
    assert(v3.manifest.getNextRowId == 7)
  }

  test("an overwrite never reuses row ids, and a table without stable row ids stores none") {
    val ds = stableTable()
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(fragment(5, "a"))))
    val v3 = new Committer(ds).commit(Some(ds.snapshot()), Operation.Overwrite(Seq(fragment(2, "b")), schema)).snapshot
    assert(v3.stableRowIds && ids(ds, v3.fragments.head) == Seq(5L, 6L))
    val plain = new Dataset(LocalStorage, Files.createTempDirectory("rowids").resolve("p.lance").toString)
    new Committer(plain).commit(None, Operation.Overwrite(Nil, schema))
    val p2 = new Committer(plain).commit(Some(plain.snapshot()), Operation.Append(Seq(fragment(2, "a")))).snapshot
    assert(!p2.stableRowIds && !p2.fragments.head.hasInlineRowIds && RowLineage.rowIds(plain.storage, plain.path, p2.fragments.head).isEmpty)
  }

  test("a fragment claiming more row ids than rows, or ids without versions, is refused") {
    val ds = stableTable()
    val tooMany = fragment(1, "a").toBuilder.setInlineRowIds(ByteString.copyFrom(RowIdSequences.encode(Array(7L, 8L))))
      .setInlineCreatedAtVersions(ByteString.copyFrom(VersionSequences.encode(Array(1L, 1L)))).build()
    val e = intercept[LanceException](new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(tooMany))))
    assert(e.getMessage.contains("2 row ids for 1 rows"), e.getMessage)
    val noVersions = fragment(2, "a").toBuilder.setInlineRowIds(ByteString.copyFrom(RowIdSequences.encode(Array(7L)))).build()
    val e2 = intercept[LanceException](new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(noVersions))))
    assert(e2.getMessage.contains("created-at versions"), e2.getMessage)
    assert(ds.versions == Seq(1L))
  }

  test("row ids kept in an external file are read from their slice of it") {
    val ds = stableTable()
    val sequence = RowIdSequences.encode(Array(10L, 12L, 11L))
    val padded = Array.fill[Byte](7)(0x55) ++ sequence ++ Array.fill[Byte](3)(0x55)
    val out = ds.storage.create(sparklance.format.io.Storage.join(ds.path, "_rowids/shared.bin"))
    try out.write(padded) finally out.close()
    val f = fragment(3, "a").toBuilder.setExternalRowIds(sparklance.format.proto.TableProtos.ExternalFile.newBuilder()
      .setPath("_rowids/shared.bin").setOffset(7).setSize(sequence.length)).build()
    assert(RowLineage.rowIds(ds.storage, ds.path, f).get.toSeq == Seq(10L, 12L, 11L))
    val short = f.toBuilder.setPhysicalRows(4).build()
    val e = intercept[sparklance.format.CorruptFileException](RowLineage.rowIds(ds.storage, ds.path, short))
    assert(e.getMessage.contains("3 entries for 4 physical rows"), e.getMessage)
  }
}
