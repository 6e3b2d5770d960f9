package sparklance.format.commit

import java.io.IOException
import java.nio.file.Files
import java.util.concurrent.{ConcurrentLinkedQueue, CountDownLatch, Executors, TimeUnit}
import java.util.concurrent.atomic.AtomicBoolean
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.BigIntVector
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.roaringbitmap.RoaringBitmap
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import scala.util.{Random, Using}
import sparklance.format.CommitConflictException
import sparklance.format.deletion.DeletionFiles
import sparklance.format.io.{LocalStorage, Storage}
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.table.{Dataset, FragmentScanner, FragmentWriter, LanceSchema, ManifestFile, Snapshot, StorageVersion}
import sparklance.format.table.BasePaths

class RowLevelRebaseSuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(List(
    new Field("v", FieldType.notNullable(new ArrowType.Int(64, true)), null)).asJava))

  /** Real data files: one fragment per size, values = offset. */
  private def writeFragments(ds: Dataset, sizes: Int*): Seq[DataFragment] = Using.resource(new RootAllocator()) { allocator =>
    sizes.flatMap { n =>
      Using.resource(new FragmentWriter(ds.storage, ds.path, schema, StorageVersion.V2_0, allocator)) { writer =>
        Using.resource(new BigIntVector("v", allocator)) { v =>
          v.allocateNew(n); (0 until n).foreach(i => v.set(i, i.toLong)); v.setValueCount(n)
          writer.write(Seq(v))
        }
        writer.finish()
      }
    }
  }

  /** A table at version 2 holding fragments 0.. of the given sizes. */
  private def newTable(sizes: Int*)(storage: Storage = LocalStorage): Dataset = {
    val ds = new Dataset(storage, Files.createTempDirectory("rebase").resolve("t.lance").toString)
    new Committer(ds).commit(None, Operation.Overwrite(Nil, schema))
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(writeFragments(ds, sizes: _*)))
    ds
  }

  private def bitmap(offsets: Int*): RoaringBitmap = RoaringBitmap.bitmapOf(offsets: _*)

  private def delete(ds: Dataset, read: Snapshot, deleted: Map[Long, RoaringBitmap], committer: Committer = null): CommitResult = {
    val op = RowLevelCommit.operation(ds, read, deleted, Nil, isDelete = true, predicate = "v = ?")
    Option(committer).getOrElse(new Committer(ds)).commit(Some(read), op)
  }

  private def deletedIn(ds: Dataset, snap: Snapshot, id: Long): RoaringBitmap =
    DeletionFiles.read(ds.storage, BasePaths.own(ds.path), snap.fragments.find(_.getId == id).get)

  /** The values a scan of the snapshot returns (values = offsets as written). */
  private def liveValues(ds: Dataset, snap: Snapshot): Map[Long, Seq[Long]] = Using.resource(new RootAllocator()) { allocator =>
    snap.fragments.map { f =>
      val scanner = new FragmentScanner(ds.storage, BasePaths.own(ds.path), f, schema.fields, allocator, 0, f.getPhysicalRows, batchRows = 1024)
      val values = scala.collection.mutable.ArrayBuffer.empty[Long]
      try scanner.foreach { b =>
        val v = b.vectors.head.asInstanceOf[BigIntVector]
        (0 until b.numRows).foreach(i => values += v.get(i))
        b.close()
      } finally scanner.close()
      f.getId -> values.toSeq
    }.toMap
  }

  private def transactionOf(ds: Dataset, snap: Snapshot): Transaction =
    Transaction.parseFrom(ds.storage.readAll(Storage.join(ds.path, s"_transactions/${snap.manifest.getTransactionFile}")))

  /** Publishes a version as another writer would: `txn` as its transaction, manifest edited by `edit`. */
  private def foreignCommit(ds: Dataset, txn: Option[Transaction], inline: Boolean)(
      edit: sparklance.format.proto.TableProtos.Manifest.Builder => Unit): Long = {
    val prev = ds.snapshot()
    val b = prev.manifest.toBuilder.setVersion(prev.version + 1).clearTransactionFile()
    txn.foreach { t =>
      val name = s"${prev.version}-${t.getUuid}.txn"
      Using.resource(ds.storage.create(Storage.join(ds.path, s"_transactions/$name")))(_.write(t.toByteArray))
      b.setTransactionFile(name)
    }
    edit(b)
    val bytes = ManifestFile.encode(b.build(), prev.file.indexSection, if (inline) txn else None)
    assert(ds.storage.putIfAbsent(Storage.join(ds.path, s"_versions/${prev.naming.fileName(prev.version + 1)}"), bytes))
    prev.version + 1
  }

  for (seed <- 1 to 3) test(s"deletions spread over many fragments, some already holding deletions, land per fragment (seed $seed)") {
    // The commit reads and writes the fragments' deletion files on several threads: each fragment
    // must get the union of its own old and new offsets, whatever order the threads run in.
    val rnd = new Random(seed)
    val sizes = Seq.fill(40)(1 + rnd.nextInt(60))
    val ds = newTable(sizes: _*)()
    val expected = sizes.indices.map(i => i.toLong -> scala.collection.mutable.SortedSet((0L until sizes(i).toLong): _*)).toMap
    def randomDeletes(): Map[Long, RoaringBitmap] = sizes.indices.filter(_ => rnd.nextInt(4) != 0).map { i =>
      val live = expected(i.toLong).toSeq
      i.toLong -> bitmap(rnd.shuffle(live).take(if (rnd.nextInt(8) == 0) live.size else rnd.nextInt(live.size + 1)).map(_.toInt): _*)
    }.filter(!_._2.isEmpty).toMap
    for (_ <- 0 until 3) {
      val deletes = randomDeletes()
      delete(ds, ds.snapshot(), deletes)
      for ((id, offsets) <- deletes) expected(id) --= offsets.toArray.map(_.toLong)
      val snap = ds.snapshot()
      val live = liveValues(ds, snap)
      // A fragment whose rows are all deleted is dropped.
      assert(live.keySet == expected.collect { case (id, left) if left.nonEmpty => id }.toSet)
      for ((id, values) <- live) assert(values == expected(id).toSeq, s"fragment $id")
      for (f <- snap.fragments if f.hasDeletionFile)
        assert(f.getDeletionFile.getNumDeletedRows == sizes(f.getId.toInt) - expected(f.getId).size, s"fragment ${f.getId}")
    }
  }

  test("two concurrent deletes of different rows in one fragment both land; the deletion vector is the union") {
    val ds = newTable(100, 50)()
    val read = ds.snapshot()
    val first = delete(ds, read, Map(0L -> bitmap(1, 2, 3), 1L -> bitmap(7)))
    assert(first.version == 3)
    val second = delete(ds, read, Map(0L -> bitmap(10, 11)))
    assert(second.version == 4)
    val latest = ds.snapshot()
    assert(latest.version == 4)
    assert(deletedIn(ds, latest, 0) == bitmap(1, 2, 3, 10, 11))
    assert(deletedIn(ds, latest, 1) == bitmap(7))
    val frag0 = latest.fragments.find(_.getId == 0).get
    assert(frag0.getDeletionFile.getNumDeletedRows == 5)
    // The rebased deletion file is a fresh one, written against the version it committed on.
    assert(frag0.getDeletionFile.getReadVersion == 3)
    assert(frag0.getDeletionFile != first.snapshot.fragments.find(_.getId == 0).get.getDeletionFile)
    // The committed transaction describes what landed: read version 3 and the rebased file.
    val txn = transactionOf(ds, latest)
    assert(txn.getReadVersion == 3 && txn.hasDelete)
    assert(txn.getDelete.getUpdatedFragmentsList.asScala.map(_.getDeletionFile) == Seq(frag0.getDeletionFile))
    assert(liveValues(ds, latest)(0L) == (0L until 100L).filterNot(Set(1L, 2L, 3L, 10L, 11L)))
    assert(latest.countRows(ds.storage) == 150 - 6)
  }

  test("two deletes of the same row: the second fails and the table stays at the first's version") {
    val ds = newTable(100)()
    val read = ds.snapshot()
    delete(ds, read, Map(0L -> bitmap(5, 6)))
    val e = intercept[CommitConflictException](delete(ds, read, Map(0L -> bitmap(6, 9))))
    assert(e.version == 3)
    assert(e.getMessage.contains("Delete") && e.getMessage.contains("version 3") && e.getMessage.contains("fragment 0"))
    assert(ds.versions == Seq(1L, 2L, 3L))
    assert(deletedIn(ds, ds.snapshot(), 0) == bitmap(5, 6))
    // Only the winner's deletion file and the loser's original one exist; the loser left no rebased file behind.
    val files = ds.storage.list(Storage.join(ds.path, "_deletions")).map(_.name)
    assert(files.size == 2, files)
  }

  test("under snapshot isolation an update rebases over a concurrent append; its new fragment gets a fresh id") {
    val ds = newTable(100)()
    val read = ds.snapshot()
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(writeFragments(ds, 20)))
    // Serializable (the default): the appended rows might have matched, so this is a conflict.
    val refused = RowLevelCommit.operation(ds, read, Map(0L -> bitmap(3, 4)), writeFragments(ds, 2), isDelete = false, predicate = "")
    val e = intercept[CommitConflictException](new Committer(ds).commit(Some(read), refused))
    assert(e.getMessage.contains("Append") && e.getMessage.contains("serializable"), e.getMessage)
    assert(ds.versions == Seq(1L, 2L, 3L))
    val rewritten = writeFragments(ds, 2)
    val op = RowLevelCommit.operation(ds, read, Map(0L -> bitmap(3, 4)), rewritten, isDelete = false, predicate = "")
    assert(op.isInstanceOf[Operation.Update])
    val result = new Committer(ds, isolation = Isolation.Snapshot).commit(Some(read), op)
    assert(result.version == 4)
    val latest = ds.snapshot()
    assert(latest.fragments.map(f => f.getId -> f.getPhysicalRows) == Seq(0L -> 100L, 1L -> 20L, 2L -> 2L))
    assert(latest.manifest.getMaxFragmentId == 2)
    assert(deletedIn(ds, latest, 0) == bitmap(3, 4))
    assert(latest.countRows(ds.storage) == 120)
  }

  test("an update rebases over a concurrent delete of other rows of the same fragment") {
    val ds = newTable(100)()
    val read = ds.snapshot()
    delete(ds, read, Map(0L -> bitmap(0, 99)))
    new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(writeFragments(ds, 5)))
    val op = RowLevelCommit.operation(ds, read, Map(0L -> bitmap(50)), writeFragments(ds, 1), isDelete = false, predicate = "")
    val result = new Committer(ds, isolation = Isolation.Snapshot).commit(Some(read), op)
    assert(result.version == 5)
    val latest = ds.snapshot()
    assert(deletedIn(ds, latest, 0) == bitmap(0, 50, 99))
    assert(latest.fragments.map(_.getId) == Seq(0L, 1L, 2L))
    assert(latest.countRows(ds.storage) == 97 + 5 + 1)
  }

  test("a delete that loses to a concurrent overwrite fails") {
    val ds = newTable(100)()
    val read = ds.snapshot()
    new Committer(ds).commit(Some(read), Operation.Overwrite(writeFragments(ds, 3), schema))
    val e = intercept[CommitConflictException](delete(ds, read, Map(0L -> bitmap(1))))
    assert(e.getMessage.contains("Overwrite") && e.getMessage.contains("version 3"))
    assert(ds.versions == Seq(1L, 2L, 3L))
    assert(ds.snapshot().countRows(ds.storage) == 3)
  }

  test("a fragment removed concurrently is a conflict") {
    val ds = newTable(10, 10)()
    val read = ds.snapshot()
    // The other writer deletes every row of fragment 0, which removes it.
    val removed = delete(ds, read, Map(0L -> bitmap(0 until 10: _*)))
    assert(removed.snapshot.fragments.map(_.getId) == Seq(1L))
    val e = intercept[CommitConflictException](delete(ds, read, Map(0L -> bitmap(3), 1L -> bitmap(3))))
    assert(e.getMessage.contains("removed fragment 0"))
    assert(ds.versions == Seq(1L, 2L, 3L))
    // Removing all fragments (a truncate) concurrently with a row delete is a conflict too.
    val ds2 = newTable(10)()
    val read2 = ds2.snapshot()
    new Committer(ds2).commit(Some(read2), Operation.Delete(Nil, Seq(0L), "true"))
    intercept[CommitConflictException](delete(ds2, read2, Map(0L -> bitmap(1))))
  }

  test("a delete without known offsets cannot be rebased onto a change of its fragment") {
    val ds = newTable(10)()
    val read = ds.snapshot()
    delete(ds, read, Map(0L -> bitmap(1)))
    val op = RowLevelCommit.operation(ds, read, Map(0L -> bitmap(2)), Nil, isDelete = true, predicate = "")
      .asInstanceOf[Operation.Delete].copy(deletedOffsets = Map.empty)
    intercept[CommitConflictException](new Committer(ds).commit(Some(read), op))
    assert(ds.versions == Seq(1L, 2L, 3L))
  }

  test("deletes of different fragments rebase without rewriting deletion files") {
    val ds = newTable(10, 10)()
    val read = ds.snapshot()
    val first = delete(ds, read, Map(0L -> bitmap(1)))
    val op = RowLevelCommit.operation(ds, read, Map(1L -> bitmap(2)), Nil, isDelete = true, predicate = "")
    val second = new Committer(ds).commit(Some(read), op)
    assert(second.version == 4)
    val latest = ds.snapshot()
    assert(latest.fragments.find(_.getId == 0).get == first.snapshot.fragments.find(_.getId == 0).get)
    assert(latest.fragments.find(_.getId == 1).get == op.asInstanceOf[Operation.Delete].updated.head)
    assert(transactionOf(ds, latest).getReadVersion == 2) // unchanged: nothing was rewritten
  }

  test("a delete follows its rows through a compaction of the fragment; a compaction elsewhere is no concern") {
    val ds = newTable(10, 10, 10)()
    val read = ds.snapshot()
    def rewrite(oldIds: Long*): Unit = {
      val snap = ds.snapshot()
      val olds = snap.fragments.filter(f => oldIds.contains(f.getId))
      val merged = olds.head.toBuilder.setId(snap.manifest.getMaxFragmentId + 1L).build()
      val txn = Transaction.newBuilder().setReadVersion(snap.version).setUuid(java.util.UUID.randomUUID().toString)
        .setRewrite(Transaction.Rewrite.newBuilder().addGroups(Transaction.Rewrite.RewriteGroup.newBuilder()
          .addAllOldFragments(olds.asJava).addNewFragments(merged))).build()
      foreignCommit(ds, Some(txn), inline = true) { b =>
        val kept = snap.fragments.filterNot(f => oldIds.contains(f.getId)) :+ merged
        b.clearFragments().addAllFragments(kept.asJava).setMaxFragmentId(merged.getId.toInt)
      }
    }
    rewrite(2)
    assert(delete(ds, read, Map(0L -> bitmap(4))).version == 4)
    rewrite(1)
    val third = delete(ds, read, Map(1L -> bitmap(4)))
    assert(third.version == 6)
    val moved = third.snapshot.fragments.last
    assert(!third.snapshot.fragments.exists(_.getId == 1) && moved.getId == 4)
    assert(DeletionFiles.read(ds.storage, BasePaths.own(ds.path), moved) == bitmap(4))
    assert(transactionOf(ds, third.snapshot).getReadVersion == 5) // carried onto the compaction's version
  }

  test("a version whose transaction cannot be read is a conflict; a missing file with an inline copy is not") {
    val ds = newTable(10, 10)()
    val read = ds.snapshot()
    // Another writer's delete whose transaction file is gone and that has no inline copy.
    val theirs = RowLevelCommit.operation(ds, read, Map(1L -> bitmap(0)), Nil, isDelete = true, predicate = "")
    val txn = Transactions.build(read.version, java.util.UUID.randomUUID().toString, theirs, Map.empty)
    val v = foreignCommit(ds, Some(txn), inline = false) { b =>
      b.clearFragments().addAllFragments(read.fragments.map(f => if (f.getId == 1) theirs.asInstanceOf[Operation.Delete].updated.head else f).asJava)
    }
    ds.storage.delete(Storage.join(ds.path, s"_transactions/${ds.snapshot().manifest.getTransactionFile}"))
    val e = intercept[CommitConflictException](delete(ds, read, Map(0L -> bitmap(1))))
    assert(e.version == v && e.getMessage.contains("its transaction cannot be read"))
    assert(ds.versions == Seq(1L, 2L, 3L))

    // The same, but the manifest carries the transaction inline: that is enough to rebase.
    val ds2 = newTable(10, 10)()
    val read2 = ds2.snapshot()
    delete(ds2, read2, Map(1L -> bitmap(0)))
    ds2.storage.delete(Storage.join(ds2.path, s"_transactions/${ds2.snapshot().manifest.getTransactionFile}"))
    assert(delete(ds2, read2, Map(0L -> bitmap(1))).version == 4)
  }

  test("operations of other writers are named; one newer than our protos is a conflict naming its field") {
    def foreign(ds: Dataset, field: Int): Long = {
      val unknown = com.google.protobuf.UnknownFieldSet.newBuilder().addField(field,
        com.google.protobuf.UnknownFieldSet.Field.newBuilder().addLengthDelimited(com.google.protobuf.ByteString.EMPTY).build()).build()
      val txn = Transaction.newBuilder().setReadVersion(ds.snapshot().version)
        .setUuid(java.util.UUID.randomUUID().toString).setUnknownFields(unknown).build()
      assert(Transactions.operationName(Transaction.parseFrom(txn.toByteArray)) ==
        Map(110 -> "UpdateConfig", 103 -> "CreateIndex").getOrElse(field, s"unknown operation (transaction field $field)"))
      foreignCommit(ds, Some(txn), inline = true)(_ => ())
    }
    val ds = newTable(10)()
    val read = ds.snapshot()
    foreign(ds, 110) // UpdateConfig
    foreign(ds, 103) // CreateIndex
    assert(delete(ds, read, Map(0L -> bitmap(1))).version == 5)
    val read2 = ds.snapshot()
    val v = foreign(ds, 199) // something newer than this library
    val e = intercept[CommitConflictException](delete(ds, read2, Map(0L -> bitmap(2))))
    assert(e.version == v && e.getMessage.contains("unknown operation (transaction field 199)"))
  }

  /** Local storage whose next manifest put-if-absent writes the file but then reports a failure. */
  private final class FlakyStorage(throwAfterWrite: Boolean) extends Storage {
    val armed = new AtomicBoolean(false)
    private val d = LocalStorage
    def openInput(path: String) = d.openInput(path)
    def create(path: String) = d.create(path)
    def putIfAbsent(path: String, bytes: Array[Byte]): Boolean = {
      val ok = d.putIfAbsent(path, bytes)
      if (ok && path.endsWith(".manifest") && armed.getAndSet(false)) {
        if (throwAfterWrite) throw new IOException("connection reset after the upload") else false
      } else ok
    }
    def overwrite(path: String, bytes: Array[Byte]): Unit = d.overwrite(path, bytes)
    def exists(path: String) = d.exists(path)
    def list(dir: String) = d.list(dir)
    def listDirectories(dir: String) = d.listDirectories(dir)
    def mkdirs(dir: String): Unit = d.mkdirs(dir)
    def delete(path: String): Unit = d.delete(path)
    def deleteRecursively(path: String): Unit = d.deleteRecursively(path)
    def rename(from: String, to: String): Unit = d.rename(from, to)
    def renamesAtomically(path: String): Boolean = d.renamesAtomically(path)
  }

  test("a retry after our own commit landed returns that version instead of committing twice") {
    for (throwAfterWrite <- Seq(true, false)) {
      val storage = new FlakyStorage(throwAfterWrite)
      val ds = newTable(10)(storage)
      val read = ds.snapshot()
      storage.armed.set(true)
      val result = delete(ds, read, Map(0L -> bitmap(2)))
      assert(!storage.armed.get)
      assert(result.version == 3)
      assert(ds.versions == Seq(1L, 2L, 3L))
      assert(deletedIn(ds, ds.snapshot(), 0) == bitmap(2))
      // Appends too: one landed attempt, one version.
      storage.armed.set(true)
      val appended = new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(writeFragments(ds, 4)))
      assert(appended.version == 4 && ds.versions == Seq(1L, 2L, 3L, 4L))
      assert(ds.snapshot().countRows(ds.storage) == 9 + 4)
      // And creating a table.
      val fresh = new Dataset(storage, Files.createTempDirectory("rebase").resolve("c.lance").toString)
      storage.armed.set(true)
      assert(new Committer(fresh).commit(None, Operation.Overwrite(Nil, schema)).version == 1)
      assert(!storage.armed.get && fresh.versions == Seq(1L))
    }
  }

  test("threads deleting disjoint rows of the same fragments from one read version all land by rebasing") {
    val sizes = Seq(400, 300, 200)
    val ds = newTable(sizes: _*)()
    val read = ds.snapshot()
    val threads = 6
    val rounds = 4
    val rnd = new Random(42)
    // Disjoint random offsets for every (thread, round), spread over all fragments.
    val all = rnd.shuffle(sizes.zipWithIndex.flatMap { case (n, id) => (0 until n).map(o => id.toLong -> o) })
    val perStatement = 7
    val plan = all.take(threads * rounds * perStatement).grouped(perStatement).toIndexedSeq
      .map(_.groupMap(_._1)(_._2).map { case (id, os) => id -> bitmap(os: _*) })
    val pool = Executors.newFixedThreadPool(threads)
    val start = new CountDownLatch(1)
    val errors = new ConcurrentLinkedQueue[Throwable]()
    val versions = new ConcurrentLinkedQueue[Long]()
    (0 until threads).foreach { t =>
      pool.submit(new Runnable {
        def run(): Unit = try {
          start.await()
          (0 until rounds).foreach { r =>
            versions.add(delete(ds, read, plan(t * rounds + r), new Committer(ds, CommitRetries(200))).version)
          }
        } catch { case e: Throwable => errors.add(e) }
      })
    }
    start.countDown()
    pool.shutdown()
    assert(pool.awaitTermination(2, TimeUnit.MINUTES))
    assert(errors.isEmpty, errors.asScala.headOption.map(_.toString))
    val n = threads * rounds
    assert(versions.asScala.toSeq.sorted == (3L until 3L + n))
    val latest = ds.snapshot()
    assert(latest.version == 2 + n)
    val expected = plan.flatMap(_.toSeq).groupMapReduce(_._1)(_._2)((a, b) => RoaringBitmap.or(a, b))
    sizes.indices.foreach { id =>
      val dv = deletedIn(ds, latest, id.toLong)
      assert(dv == expected.getOrElse(id.toLong, new RoaringBitmap()), s"fragment $id")
      assert(latest.fragments.find(_.getId == id).get.getDeletionFile.getNumDeletedRows == dv.getLongCardinality)
    }
    assert(latest.countRows(ds.storage) == sizes.sum - n * perStatement)
  }
}
