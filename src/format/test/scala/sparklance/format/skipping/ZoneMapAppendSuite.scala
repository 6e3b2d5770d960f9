package sparklance.format.skipping

import java.io.{IOException, OutputStream}
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files
import java.util.concurrent.{CountDownLatch, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.commit.{Committer, Operation}
import sparklance.format.index.Indices
import sparklance.format.io.{Background, FileEntry, ForwardingStorage, InputFile, LocalStorage, Storage}
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}
import sparklance.format.table.{Dataset, LanceSchema}

class ZoneMapAppendSuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(List(
    new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null),
    new Field("name", FieldType.nullable(ArrowType.Utf8.INSTANCE), null)).asJava))

  private val fragment = DataFragment.newBuilder().setPhysicalRows(10)
    .addFiles(DataFile.newBuilder().setPath("a.lance").addFields(0).addFields(1).addColumnIndices(0).addColumnIndices(1)
      .setFileMajorVersion(2)).build()

  // The zones of the one fragment appended, by its position among the new fragments.
  private val idZone = Zone(0, 0, 10, Some(ZoneValue.Integral(0)), Some(ZoneValue.Integral(9)), 0, 0)
  private val nameZone = Zone(0, 0, 10, Some(ZoneValue.Bytes("a".getBytes(UTF_8))), Some(ZoneValue.Bytes("j".getBytes(UTF_8))), 2, 0)

  /** A store that runs its background work on threads of its own, as an object store does. */
  private class ThreadedStorage extends ForwardingStorage() {
    override def inBackground[T](path: String)(work: () => T): Background[T] = ForwardingStorage.onOwnThread(work)
  }

  private def append(storage: Storage, dir: String) = {
    val local = new Dataset(LocalStorage, dir)
    val indexing = new ZoneMapAppend(storage, dir, Seq(
      ZoneMapAppend.Column("id_idx", 0, new ArrowType.Int(64, true), 8192, Seq(idZone)),
      ZoneMapAppend.Column("name_idx", 1, ArrowType.Utf8.INSTANCE, 8192, Seq(nameZone))))
    new Committer(new Dataset(storage, dir)).commit(Some(local.snapshot()), Operation.Append(Seq(fragment)), indexing = Some(indexing))
  }

  private def newTable(): String = {
    val dir = Files.createTempDirectory("zonemap-append").resolve("t.lance").toString
    new Committer(new Dataset(LocalStorage, dir)).commit(None, Operation.Overwrite(Nil, schema))
    dir
  }

  test("where the store works in the background, the columns' segments are written side by side, while the versions are listed, and land with the fragments") {
    val dir = newTable()
    val (bothStarted, versionsListed) = (new CountDownLatch(2), new CountDownLatch(1))
    // Each segment's file waits for the other's to start, and for the committer's look for newer
    // versions: written one after the other, or before that look, the first waits 10 s and fails.
    val storage = new ThreadedStorage {
      override def create(path: String): OutputStream = {
        if (path.endsWith(ZoneMapSegment.FileName)) {
          bothStarted.countDown()
          if (!bothStarted.await(10, TimeUnit.SECONDS)) throw new IOException(s"$path was written alone")
          if (!versionsListed.await(10, TimeUnit.SECONDS)) throw new IOException(s"$path was written before the versions were listed")
        }
        super.create(path)
      }
      override def list(dir: String): Seq[FileEntry] = {
        if (dir.endsWith("_versions")) versionsListed.countDown()
        super.list(dir)
      }
    }
    val v2 = append(storage, dir)
    assert(v2.version == 2)
    val snapshot = new Dataset(LocalStorage, dir).snapshot()
    val segments = Indices.parse(snapshot.file.indexSection, dir)
    assert(segments.map(_.getName).sorted == Seq("id_idx", "name_idx"))
    val allocator = new RootAllocator()
    try {
      val zones = segments.map(s => s.getName -> ZoneMapSegment.read(LocalStorage, snapshot.files, s,
        if (s.getName == "id_idx") new ArrowType.Int(64, true) else ArrowType.Utf8.INSTANCE, allocator).get).toMap
      val fragmentId = snapshot.fragments.head.getId
      assert(zones("id_idx") == Seq(idZone.copy(fragmentId = fragmentId)))
      assert(zones("name_idx").map(z => (z.fragmentId, z.length, z.nullCount, z.min.map(v => new String(v.asInstanceOf[ZoneValue.Bytes].value, UTF_8)))) ==
        Seq((fragmentId, 10L, 2L, Some("a"))))
    } finally allocator.close()
  }

  test("the segments a commit wrote are kept as read: the next scan's data skipping in the process does not read them back") {
    val dir = newTable()
    append(LocalStorage, dir)
    val snapshot = new Dataset(LocalStorage, dir).snapshot()
    val unreadable = new ForwardingStorage() {
      override def openInput(path: String): InputFile =
        if (path.endsWith(ZoneMapSegment.FileName)) throw new IOException(s"$path was read") else super.openInput(path)
      override def openInput(path: String, length: Long): InputFile =
        if (path.endsWith(ZoneMapSegment.FileName)) throw new IOException(s"$path was read") else super.openInput(path, length)
    }
    val allocator = new RootAllocator()
    try {
      val skipping = new DataSkipping(unreadable, snapshot.files, snapshot.schema, Indices.parse(snapshot.file.indexSection, dir),
        snapshot.fragments, snapshot.stableRowIds, allocator)
      val fragmentId = snapshot.fragments.head.getId
      // ids 0 to 9: 50 is in no zone, 5 in the fragment's one zone of 10 rows.
      assert(skipping.candidates(ColumnFilter.Compare(0, ColumnFilter.CompareOp.Equal, ZoneValue.Integral(50))).map {
        case (id, rows) => id -> rows.getCardinality } == Map(fragmentId -> 0))
      assert(skipping.candidates(ColumnFilter.Compare(0, ColumnFilter.CompareOp.Equal, ZoneValue.Integral(5))).map {
        case (id, rows) => id -> rows.getCardinality } == Map(fragmentId -> 10))
    } finally allocator.close()
  }

  test("a column whose segment cannot be written fails the commit, leaves the table as it was and no segment file behind") {
    val dir = newTable()
    val creates = new AtomicInteger()
    val storage = new ThreadedStorage {
      override def create(path: String): OutputStream =
        if (path.endsWith(ZoneMapSegment.FileName) && creates.incrementAndGet() == 2) throw new IOException("injected: no room")
        else super.create(path)
    }
    val e = intercept[IOException](append(storage, dir))
    assert(e.getMessage == "injected: no room")
    assert(new Dataset(LocalStorage, dir).versions == Seq(1L))
    assert(creates.get == 2)
    val indices = Storage.join(dir, "_indices")
    assert(LocalStorage.listDirectories(indices).flatMap(d => LocalStorage.list(Storage.join(indices, d))).isEmpty)
  }
}
