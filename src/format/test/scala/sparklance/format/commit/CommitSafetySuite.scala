package sparklance.format.commit

import java.nio.file.Files
import java.time.Duration
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.{CommitConflictException, Pylance, VersionRemovedException}
import sparklance.format.io.{ForwardingStorage, LocalStorage, Storage}
import sparklance.format.maintenance.{Cleanup, CleanupPolicy, Restore}
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.table.{Dataset, LanceSchema, PendingSchema, SchemaChange, SchemaEvolution}

/**
 * What a commit publishes is visible and complete: a manifest put into a hole a cleanup left
 * below a newer version is found and taken back; a restore racing a cleanup never leaves a
 * version whose files are gone; a write that lands with a schema change counts as new rows.
 */
class CommitSafetySuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(List(
    new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null)).asJava))

  /** Local storage that runs `beforeManifestPut` (once armed) before the next manifest put, and `beforeDelete` before deletes. */
  private final class HookedStorage extends ForwardingStorage {
    @volatile var beforeManifestPut: Option[() => Unit] = None
    @volatile var beforeDelete: String => Unit = _ => ()
    override def putIfAbsent(path: String, bytes: Array[Byte]): Boolean = {
      if (path.endsWith(".manifest")) beforeManifestPut.foreach { hook => beforeManifestPut = None; hook() }
      super.putIfAbsent(path, bytes)
    }
    override def delete(path: String): Unit = { beforeDelete(path); super.delete(path) }
  }

  /** A fragment of `rows` rows of ids from `start` (other columns NULL), in a real data file (pylance reads it). */
  private def rows(ds: Dataset, start: Long, rows: Int): DataFragment = {
    val allocator = new org.apache.arrow.memory.RootAllocator()
    try {
      val read = ds.snapshot()
      val vectors = read.schema.fields.map(_.toArrow.createVector(allocator))
      try {
        vectors.foreach(_.allocateNew())
        val ids = vectors.head.asInstanceOf[org.apache.arrow.vector.BigIntVector]
        (0 until rows).foreach(i => ids.setSafe(i, start + i))
        vectors.tail.foreach(v => (0 until rows).foreach(v.setNull))
        vectors.foreach(_.setValueCount(rows))
        val writer = ds.newWriter(read, allocator)
        try { writer.write(vectors); writer.finish().head } finally writer.close()
      } finally vectors.foreach(_.close())
    } finally allocator.close()
  }

  private def table(storage: Storage = LocalStorage): Dataset = {
    val ds = new Dataset(storage, Files.createTempDirectory("commit-safety").resolve("t.lance").toString)
    ds.create(schema)
    ds
  }

  private def ids(ds: Dataset): Seq[Long] = {
    val script = Files.createTempFile("ids", ".py")
    Files.writeString(script, "import sys, lance\nprint(sorted(lance.dataset(sys.argv[1]).to_table(columns=['id']).column('id').to_pylist()))\n")
    Pylance.run(script, ds.path).trim.linesIterator.toSeq.last.stripPrefix("[").stripSuffix("]").split(", ").filter(_.nonEmpty).map(_.toLong).toSeq
  }

  private val everything = CleanupPolicy(olderThan = Some(Duration.ZERO))

  test("a put into the hole a cleanup left below the newest version is taken back, and the commit fails as a conflict") {
    val storage = new HookedStorage
    val ds = table(storage)
    val stale = ds.snapshot()
    val ours = rows(ds, 100, 3)
    // Between our look for newer versions and our put: version 2 and 3 land, and a cleanup keeps only 3.
    storage.beforeManifestPut = Some { () =>
      new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(rows(ds, 0, 2))))
      new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(rows(ds, 10, 2))))
      new Cleanup(ds).run(everything)
    }
    val e = intercept[CommitConflictException](new Committer(ds).commit(Some(stale), Operation.Append(Seq(ours))))
    assert(e.retryable && e.getMessage.contains("vanished"), e.getMessage)
    assert(ds.versions == Seq(3L), "our manifest in the hole is gone again")
    assert(ids(ds) == Seq(0L, 1L, 10L, 11L))
  }

  test("a write that lands with a schema change brings rows a serializable statement may have read; added columns do not") {
    val ds = table()
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(rows(ds, 0, 4))))
    val read = ds.snapshot()
    val ours = rows(ds, 60, 1)
    // Another writer appends with a new column (an evolving append, recorded as a Merge).
    val added = SchemaEvolution.plan("t", read, Seq(SchemaChange.AddField(Seq("extra"),
      new Field("extra", FieldType.nullable(ArrowType.Utf8.INSTANCE), null))))
    val pending = PendingSchema(read, added.schema, Map.empty, retypes = false, preservesNullability = true)
    new Committer(ds).commit(Some(read), Operation.Evolving(Operation.Append(Seq(rows(ds, 50, 1))), pending))
    // Our INSERT ... SELECT from the table read `read`; the appended row 50 might have been selected.
    val e = intercept[CommitConflictException](new Committer(ds).commit(Some(read), Operation.Append(Seq(ours)),
      reads = Some(ReadSet.Everything)))
    assert(e.getMessage.contains("serializable") && e.getMessage.contains("Merge"), e.getMessage)
    // Adding a column to the rows there were is no new row.
    val read2 = ds.snapshot()
    val ours2 = rows(ds, 61, 1)
    val more = SchemaEvolution.plan("t", read2, Seq(SchemaChange.AddField(Seq("more"),
      new Field("more", FieldType.nullable(ArrowType.Utf8.INSTANCE), null))))
    new Committer(ds).commit(Some(read2), more.operation)
    assert(new Committer(ds).commit(Some(read2), Operation.Append(Seq(ours2)), reads = Some(ReadSet.Everything)).version == 5)
  }

  test("a restore whose version a cleanup removes meanwhile is undone, and the table stays whole") {
    val storage = new HookedStorage
    val ds = table(storage)
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(rows(ds, 0, 3))))
    val old = ds.snapshot() // version 2, rows 0-2
    new Committer(ds).commit(Some(old), Operation.Overwrite(Seq(rows(ds, 7, 1)), schema)) // version 3: row 7 only
    // The cleanup runs while the restore commits: it removes version 2 and its data file.
    storage.beforeManifestPut = Some(() => new Cleanup(ds).run(everything))
    val e = intercept[VersionRemovedException](Restore.run(ds, old))
    assert(e.getMessage.contains("undone"), e.getMessage)
    assert(ids(ds) == Seq(7L))
    assert(ds.snapshot().fragments.flatMap(_.getFilesList.asScala).forall(f => LocalStorage.exists(Storage.join(ds.path, s"data/${f.getPath}"))))
  }

  test("a cleanup that planned before a restore committed keeps the files of the restored version") {
    val storage = new HookedStorage
    val ds = table(storage)
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(rows(ds, 0, 3))))
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(Seq(rows(ds, 3, 3))))
    val old = ds.snapshot() // version 3, rows 0-5
    new Committer(ds).commit(Some(old), Operation.Overwrite(Seq(rows(ds, 7, 1)), schema)) // version 4
    // The cleanup plans (version 4 is the newest), and as it deletes its first old manifest
    // (version 1) the restore of version 3 commits: version 3's manifest is still there then.
    var restored = Option.empty[Restore.Result]
    storage.beforeDelete = path => if (path.endsWith(".manifest") && restored.isEmpty) restored = Some(Restore.run(ds, old))
    new Cleanup(ds).run(everything)
    assert(restored.map(_.committed.version).contains(5L))
    assert(ids(ds) == (0L to 5L))
  }
}
