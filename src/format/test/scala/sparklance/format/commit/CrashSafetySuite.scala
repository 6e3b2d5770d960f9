package sparklance.format.commit

import java.io.{IOException, OutputStream}
import java.nio.file.Files
import java.util.concurrent.atomic.AtomicInteger
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.BigIntVector
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.roaringbitmap.RoaringBitmap
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import scala.util.Using
import sparklance.format.io.{ForwardingStorage, LocalStorage, Storage}
import sparklance.format.table.{Dataset, FragmentScanner, FragmentWriter, LanceSchema, StorageVersion}
import sparklance.format.table.BasePaths

/**
 * A write that dies at any step (data file, deletion file, transaction file, manifest, hint)
 * leaves a table that opens at either the old or the new version and reads completely.
 */
class CrashSafetySuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(List(
    new Field("v", FieldType.notNullable(new ArrowType.Int(64, true)), null)).asJava))

  /** Local storage whose `failAt`-th mutation (counting from 0) throws instead of happening. */
  private final class CrashingStorage(failAt: Int) extends ForwardingStorage {
    val mutations = new AtomicInteger()
    private def step(what: String): Unit =
      if (mutations.getAndIncrement() == failAt) throw new IOException(s"simulated crash at $what")
    override def create(path: String): OutputStream = { step(s"create $path"); super.create(path) }
    override def putIfAbsent(path: String, bytes: Array[Byte]): Boolean = { step(s"put $path"); super.putIfAbsent(path, bytes) }
    override def overwrite(path: String, bytes: Array[Byte]): Unit = { step(s"overwrite $path"); super.overwrite(path, bytes) }
    override def delete(path: String): Unit = { step(s"delete $path"); super.delete(path) }
    override def rename(from: String, to: String): Unit = { step(s"rename $from"); super.rename(from, to) }
  }

  private def fragment(storage: Storage, path: String, values: Seq[Long], allocator: RootAllocator) = {
    val writer = new FragmentWriter(storage, path, schema, StorageVersion.V2_0, allocator)
    Using.resource(new BigIntVector("v", allocator)) { v =>
      v.allocateNew(values.size); values.zipWithIndex.foreach { case (x, i) => v.set(i, x) }; v.setValueCount(values.size)
      writer.write(Seq(v))
    }
    writer.finish()
  }

  private def contents(ds: Dataset, allocator: RootAllocator): Seq[Long] = {
    val snap = ds.snapshot()
    snap.fragments.flatMap { f =>
      val scanner = new FragmentScanner(LocalStorage, BasePaths.own(ds.path), f, snap.schema.fields, allocator, 0, f.getPhysicalRows)
      try scanner.flatMap { b =>
        val v = b.vectors.head.asInstanceOf[BigIntVector]
        try (0 until b.numRows).map(v.get(_).toLong) finally b.close()
      }.toVector finally scanner.close()
    }.sorted
  }

  /** Runs `change` with a crash at every possible step; checks the table is old or new each time. */
  private def crashEverywhere(change: (Storage, Dataset, RootAllocator) => Unit, before: Seq[Long], after: Seq[Long]): Unit =
    Using.resource(new RootAllocator()) { allocator =>
      var failAt = 0
      var completed = false
      while (!completed) {
        val path = Files.createTempDirectory("crash").resolve("t.lance").toString
        val setup = new Dataset(LocalStorage, path)
        new Committer(setup).commit(None, Operation.Overwrite(Nil, schema))
        new Committer(setup).commit(Some(setup.snapshot()), Operation.Append(fragment(LocalStorage, path, (0L until 100L), allocator)))
        val crashing = new CrashingStorage(failAt)
        val crashed = try { change(crashing, new Dataset(crashing, path), allocator); false } catch { case _: IOException => true }
        val ds = new Dataset(LocalStorage, path)
        assert(Set(2L, 3L).contains(ds.latestVersion), s"crash at step $failAt left version ${ds.latestVersion}")
        val rows = contents(ds, allocator)
        if (ds.latestVersion == 2L) assert(rows == before, s"crash at step $failAt")
        else assert(rows == after, s"crash at step $failAt")
        if (!crashed) { assert(ds.latestVersion == 3L); completed = true }
        failAt += 1
        assert(failAt < 50)
      }
      assert(failAt >= 3, "the change should have had several steps to crash in")
    }

  test("an append that crashes at any step") {
    crashEverywhere((storage, ds, allocator) => {
      val fragments = fragment(storage, ds.path, Seq(1000L, 1001L), allocator)
      new Committer(ds).commit(Some(ds.snapshot()), Operation.Append(fragments))
    }, before = 0L until 100L, after = (0L until 100L) ++ Seq(1000L, 1001L))
  }

  test("an update (deletion file + new fragment + commit) that crashes at any step") {
    crashEverywhere((storage, ds, allocator) => {
      val read = ds.snapshot()
      val newRows = fragment(storage, ds.path, Seq(-5L), allocator)
      val op = RowLevelCommit.operation(ds, read, Map(read.fragments.head.getId -> RoaringBitmap.bitmapOf(5)), newRows,
        isDelete = false, predicate = "")
      new Committer(ds).commit(Some(read), op)
    }, before = 0L until 100L, after = ((0L until 100L).filterNot(_ == 5L) :+ -5L).sorted)
  }
}
