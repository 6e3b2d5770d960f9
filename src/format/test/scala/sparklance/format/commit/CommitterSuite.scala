package sparklance.format.commit

import java.nio.file.Files
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.{CommitConflictException, TableNotFoundException, VersionNotFoundException}
import sparklance.format.io.{Background, FileEntry, ForwardingStorage, LocalStorage, Storage}
import sparklance.format.proto.TableProtos.{DataFile, DataFragment}
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.table.{Dataset, LanceSchema, ManifestFile, VersionNaming}

class CommitterSuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(List(
    new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null),
    new Field("name", FieldType.nullable(ArrowType.Utf8.INSTANCE), null)).asJava))

  private def fragment(rows: Long, file: String) = DataFragment.newBuilder().setPhysicalRows(rows)
    .addFiles(DataFile.newBuilder().setPath(file).addFields(0).addFields(1).addColumnIndices(0).addColumnIndices(1)
      .setFileMajorVersion(2)).build()

  private def newTable(): Dataset = {
    val ds = new Dataset(LocalStorage, Files.createTempDirectory("commit").resolve("t.lance").toString)
    new Committer(ds).commit(None, Operation.Overwrite(Nil, schema))
    ds
  }

  test("create, append and overwrite produce consecutive versions with fresh fragment ids") {
    val ds = newTable()
    assert(ds.versions == Seq(1L))
    assert(ds.snapshot().schema.fields.map(_.name) == Seq("id", "name"))
    val v2 = new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(fragment(10, "a.lance"), fragment(5, "b.lance"))))
    assert(v2.version == 2)
    assert(v2.snapshot.fragments.map(_.getId) == Seq(0L, 1L))
    assert(v2.snapshot.countRows(ds.storage) == 15)
    val v3 = new Committer(ds).commit(Some(ds.snapshot()), Operation.Overwrite(Seq(fragment(1, "c.lance")), schema))
    // Overwrite never reuses fragment ids: indices may still name the old ones.
    assert(v3.snapshot.fragments.map(_.getId) == Seq(2L))
    assert(v3.snapshot.manifest.getMaxFragmentId == 2)
    assert(ds.versions == Seq(1L, 2L, 3L))
    assert(ds.snapshot(Some(2)).countRows(ds.storage) == 15)
    val m = ds.snapshot().manifest
    assert(m.getWriterVersion.getLibrary == "sparklance")
    assert(m.getDataFormat.getVersion == "2.0")
    // The transaction is persisted both as a file and inline.
    val txn = Transaction.parseFrom(LocalStorage.readAll(Storage.join(ds.path, s"_transactions/${m.getTransactionFile}")))
    assert(txn.hasOverwrite && txn.getReadVersion == 2)
    val hint = new String(LocalStorage.readAll(Storage.join(ds.path, "_versions/latest_version_hint.json")), "UTF-8")
    assert(hint == """{"version":3}""")
  }

  test("where the store works in the background, the transaction file is written while versions are listed, the hint while the landed version is checked") {
    import java.util.concurrent.{CountDownLatch, TimeUnit}
    val dir = Files.createTempDirectory("commit").resolve("t.lance").toString
    val local = new Dataset(LocalStorage, dir)
    new Committer(local).commit(None, Operation.Overwrite(Nil, schema))
    val (listedBefore, hintStarted) = (new CountDownLatch(1), new CountDownLatch(1))
    @volatile var manifestPut = false
    @volatile var transactionFileWhenPut = false
    @volatile var checkedWithoutHint = false
    // Each side waits for the other: done one after the other, they wait 10 s (and fail).
    val storage = new ForwardingStorage() {
      override def inBackground[T](path: String)(work: () => T): Background[T] = ForwardingStorage.onOwnThread(work)
      override def list(dir: String): Seq[FileEntry] = {
        if (!manifestPut) listedBefore.countDown()
        else if (!hintStarted.await(10, TimeUnit.SECONDS)) checkedWithoutHint = true
        super.list(dir)
      }
      override def create(path: String): java.io.OutputStream = {
        if (path.contains("/_transactions/") && !listedBefore.await(10, TimeUnit.SECONDS))
          throw new java.io.IOException(s"$path was written before the versions were listed")
        super.create(path)
      }
      override def putIfAbsent(path: String, bytes: Array[Byte]): Boolean = {
        transactionFileWhenPut = LocalStorage.list(Storage.join(dir, "_transactions")).size == 2
        val put = super.putIfAbsent(path, bytes)
        manifestPut = true
        put
      }
      override def overwrite(path: String, bytes: Array[Byte]): Unit = {
        if (path.endsWith("latest_version_hint.json")) hintStarted.countDown()
        super.overwrite(path, bytes)
      }
    }
    val v2 = new Committer(new Dataset(storage, dir)).commit(Some(local.snapshot()), Operation.Append(Seq(fragment(10, "a.lance"))))
    assert(v2.version == 2 && transactionFileWhenPut && !checkedWithoutHint)
    assert(new String(LocalStorage.readAll(Storage.join(dir, "_versions/latest_version_hint.json")), "UTF-8") == """{"version":2}""")
    val m = local.snapshot().manifest
    assert(m.getVersion == 2 && Transaction.parseFrom(LocalStorage.readAll(Storage.join(dir, s"_transactions/${m.getTransactionFile}"))).hasAppend)
  }

  test("an append that loses the race to another append is rebased, keeping both") {
    val ds = newTable()
    val read = ds.snapshot()
    new Committer(ds).commit(Some(read), Operation.Append(Seq(fragment(10, "a.lance"))))
    val second = new Committer(ds).commit(Some(read), Operation.Append(Seq(fragment(7, "b.lance"))))
    assert(second.version == 3)
    assert(second.snapshot.fragments.map(f => f.getId -> f.getPhysicalRows) == Seq(0L -> 10L, 1L -> 7L))
  }

  test("a blind overwrite lands over a concurrent append, as in Lance; one that read the table does not") {
    val ds = newTable()
    val read = ds.snapshot()
    new Committer(ds).commit(Some(read), Operation.Append(Seq(fragment(10, "a.lance"))))
    // Read-dependent (INSERT OVERWRITE t SELECT ... FROM t): the appended rows might have been selected.
    val e = intercept[CommitConflictException](new Committer(ds).commit(Some(read),
      Operation.Overwrite(Seq(fragment(1, "c.lance")), schema), reads = Some(ReadSet.Everything)))
    assert(e.getMessage.contains("Append") && e.getMessage.contains("version 2") && e.getMessage.contains("serializable"))
    assert(ds.versions == Seq(1L, 2L) && ds.snapshot().countRows(ds.storage) == 10)
    // The same under snapshot isolation, or a blind overwrite: serial order append, then overwrite.
    new Committer(ds, isolation = Isolation.Snapshot).commit(Some(read),
      Operation.Overwrite(Seq(fragment(1, "c.lance")), schema), reads = Some(ReadSet.Everything))
    assert(ds.versions == Seq(1L, 2L, 3L) && ds.snapshot().countRows(ds.storage) == 1)
    val read3 = ds.snapshot()
    new Committer(ds).commit(Some(read3), Operation.Append(Seq(fragment(10, "e.lance"))))
    new Committer(ds).commit(Some(read3), Operation.Overwrite(Seq(fragment(2, "d.lance")), schema))
    assert(ds.versions == Seq(1L, 2L, 3L, 4L, 5L) && ds.snapshot().countRows(ds.storage) == 2)
  }

  test("two overwrites from one version: the second is a retryable conflict") {
    val ds = newTable()
    val read = ds.snapshot()
    new Committer(ds).commit(Some(read), Operation.Overwrite(Seq(fragment(1, "c.lance")), schema))
    val e = intercept[CommitConflictException](
      new Committer(ds).commit(Some(read), Operation.Overwrite(Seq(fragment(2, "d.lance")), schema)))
    assert(e.retryable && e.getMessage.contains("Overwrite") && e.version == 2L)
    assert(ds.versions == Seq(1L, 2L) && ds.snapshot().countRows(ds.storage) == 1)
  }

  test("an append after a concurrent overwrite fails") {
    val ds = newTable()
    val read = ds.snapshot()
    new Committer(ds).commit(Some(read), Operation.Overwrite(Seq(fragment(1, "c.lance")), schema))
    intercept[CommitConflictException](new Committer(ds).commit(Some(read), Operation.Append(Seq(fragment(2, "d.lance")))))
    assert(ds.versions == Seq(1L, 2L))
  }

  test("the index section is carried forward by appends and dropped by overwrite") {
    val ds = newTable()
    val snap = ds.snapshot()
    // Simulate a table that pylance indexed: rewrite version 1 with an index section.
    val path = Storage.join(ds.path, s"_versions/${VersionNaming.V2.fileName(1)}")
    LocalStorage.delete(path)
    LocalStorage.putIfAbsent(path, ManifestFile.encode(snap.manifest, Some(Array[Byte](9, 8, 7)), None))
    val appended = new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(fragment(1, "a.lance"))))
    assert(ds.snapshot().file.indexSection.map(_.toSeq).contains(Seq[Byte](9, 8, 7)))
    assert(appended.version == 2)
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Overwrite(Nil, schema))
    assert(ds.snapshot().file.indexSection.isEmpty)
  }

  test("missing tables and versions are typed errors") {
    val missing = new Dataset(LocalStorage, Files.createTempDirectory("none").resolve("x.lance").toString)
    intercept[TableNotFoundException](missing.snapshot())
    intercept[VersionNotFoundException](newTable().snapshot(Some(42)))
  }

  test("flag 256 (mixed data file versions): set by files of another version, kept as pylance keeps it, cleared by a new version") {
    import sparklance.format.table.FeatureFlags.MixedFileVersions
    def flags(ds: Dataset) = (ds.snapshot().manifest.getReaderFeatureFlags, ds.snapshot().manifest.getWriterFeatureFlags)
    val ds = newTable() // data format 2.0
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(fragment(3, "a.lance"))))
    assert(flags(ds) == ((0L, 0L)))
    val other = fragment(4, "b.lance").toBuilder
    other.getFilesBuilder(0).setFileMinorVersion(1)
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(other.build())))
    assert(flags(ds) == ((MixedFileVersions, MixedFileVersions)))
    // Once every 2.1 file is gone the flag stays, as in pylance 14 (and a restore keeps it too).
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Delete(Nil, Seq(1L), "id > 2"))
    assert(ds.snapshot().fragments.map(_.getId) == Seq(0L) && flags(ds) == ((MixedFileVersions, MixedFileVersions)))
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Overwrite(Seq(fragment(1, "c.lance")), schema))
    assert(flags(ds) == ((MixedFileVersions, MixedFileVersions)))
    // A new table in another version starts without it.
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Overwrite(Nil, schema,
      Map(Committer.StorageVersionKey -> "2.1"), Some(false)))
    assert(ds.snapshot().dataStorageVersion == "2.1" && flags(ds) == ((8L, 8L)))
  }
}
