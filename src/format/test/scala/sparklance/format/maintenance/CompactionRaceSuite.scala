package sparklance.format.maintenance

import java.nio.file.{Files, Paths}
import java.util.concurrent.{ConcurrentLinkedQueue, Executors, TimeUnit}
import java.util.concurrent.atomic.{AtomicBoolean, AtomicInteger}
import org.apache.arrow.memory.RootAllocator
import org.apache.arrow.vector.BigIntVector
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType, Schema}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import scala.util.{Random, Using}
import sparklance.format.Pylance
import sparklance.format.CommitConflictException
import sparklance.format.commit.{CommitRetries, Committer, Operation, RowLevelCommit, Transactions}
import sparklance.format.skipping.ZoneMapFold
import sparklance.format.io.LocalStorage
import sparklance.format.rowids.RowLineage
import sparklance.format.table.{Dataset, LanceSchema, Snapshot}

/**
 * Compaction racing row-level statements, both ways: a DELETE planned before a compaction commits
 * after it and follows its rows to the new fragments; a compaction that loses to a DELETE on its
 * fragments drops those groups and plans them again. Nothing is lost, nothing comes back, and on
 * stable-row-id tables every surviving row keeps its `_rowid`, as pylance reads it.
 */
class CompactionRaceSuite extends AnyFunSuite {
  private val schema = LanceSchema.fromArrow(new Schema(java.util.List.of(
    new Field("id", FieldType.notNullable(new ArrowType.Int(64, true)), null))))

  /** `fragments` fragments of `rows` rows holding ids 0, 1, ... */
  private def table(stable: Boolean, fragments: Int, rows: Int): Dataset = {
    val ds = new Dataset(LocalStorage, Files.createTempDirectory("compaction-race").resolve("t.lance").toString)
    ds.create(schema, stableRowIds = stable, config = Map(Committer.MaxRowsPerFileKey -> rows.toString))
    Using.resources(new RootAllocator(), new BigIntVector("id", new RootAllocator())) { (allocator, _) =>
      val read = ds.snapshot()
      Using.resources(ds.newWriter(read, allocator), new BigIntVector("id", allocator)) { (writer, ids) =>
        (0 until fragments * rows).foreach(i => ids.setSafe(i, i.toLong)); ids.setValueCount(fragments * rows)
        writer.write(Seq(ids))
        new Committer(ds).commit(Some(read), Operation.Append(writer.finish()))
      }
    }
    ds
  }

  /** id -> (row address, row id) of every live row of `snapshot`. */
  private def rows(ds: Dataset, snapshot: Snapshot): Map[Long, (Long, Long)] = Using.resource(new RootAllocator()) { allocator =>
    snapshot.plan(Seq("id")).flatMap { read =>
      val rowIds = RowLineage.rowIds(ds.storage, ds.path, read.fragment)
      Using.resource(read.open(ds.storage, allocator)) { batches =>
        batches.flatMap { batch =>
          try (0 until batch.numRows).map { i =>
            val address = read.rowAddress(batch, i)
            batch.vectors.head.asInstanceOf[BigIntVector].get(i) -> (address -> rowIds.fold(address)(_(batch.offsets(i))))
          } finally batch.close()
        }.toList
      }
    }.toMap
  }

  private def deleteIds(ds: Dataset, read: Snapshot, ids: Seq[Long]): RowLevelCommit = {
    val at = rows(ds, read)
    ids.foldLeft(new RowLevelCommit(ds, read))((c, id) => c.delete(at(id)._1))
  }

  private def pylanceRows(ds: Dataset): Map[Long, Long] = {
    val script = Files.createTempFile("race", ".py")
    Files.writeString(script,
      """import sys, lance
        |t = lance.dataset(sys.argv[1]).to_table(columns=["id"], with_row_id=True)
        |print(" ".join(f"{i}:{r}" for i, r in zip(t.column("id").to_pylist(), t.column("_rowid").to_pylist())))
        |""".stripMargin)
    Pylance.run(script, ds.path).trim.linesIterator.toSeq.last.split(' ').filter(_.nonEmpty)
      .map { p => val Array(i, r) = p.split(':'); i.toLong -> r.toLong }.toMap
  }

  for (stable <- Seq(false, true)) test(s"a delete planned before a compaction commits after it (stable row ids: $stable)") {
    val ds = table(stable, fragments = 12, rows = 50)
    val before = rows(ds, ds.snapshot())
    val statement = deleteIds(ds, ds.snapshot(), Seq(3L, 77L, 140L, 401L, 599L))
    val compacted = new Compaction(ds).run(CompactionOptions(targetRowsPerFragment = 200))
    assert(compacted.fragmentsRemoved == 12 && compacted.fragmentsAdded == 3)
    val result = statement.commit(RowLevelCommit.Kind.Delete).get
    assert(result.version == compacted.version.get + 1)
    val after = rows(ds, ds.snapshot())
    assert(after.keySet == before.keySet -- Set(3L, 77L, 140L, 401L, 599L))
    if (stable) assert(after.forall { case (id, (_, rowId)) => before(id)._2 == rowId })
    assert(pylanceRows(ds) == after.map { case (id, (_, rowId)) => id -> rowId })
  }

  for (stable <- Seq(false, true)) test(s"a compaction that loses to a delete plans the touched fragments again (stable row ids: $stable)") {
    val ds = table(stable, fragments = 12, rows = 50)
    val before = rows(ds, ds.snapshot())
    // Between running its tasks and committing, a DELETE lands on fragment 0 (the first group).
    val racing: Compaction.TaskRunner = (dataset, snapshot, tasks, zoneColumns) => {
      val groups = Compaction.inProcess(dataset, snapshot, tasks, zoneColumns)
      if (snapshot.version == 2) deleteIds(ds, ds.snapshot(), Seq(10L)).commit(RowLevelCommit.Kind.Delete)
      groups
    }
    val result = new Compaction(ds, racing).run(CompactionOptions(targetRowsPerFragment = 200))
    assert(result.replanned == 1, result)
    val latest = ds.snapshot()
    assert(latest.fragments.forall(_.getPhysicalRows >= 150), latest.fragments.map(_.getPhysicalRows))
    val after = rows(ds, latest)
    assert(after.keySet == before.keySet - 10L)
    if (stable) assert(after.forall { case (id, (_, rowId)) => before(id)._2 == rowId })
    assert(pylanceRows(ds) == after.map { case (id, (_, rowId)) => id -> rowId })
  }

  test("racing threads: deletes from three writers and repeated compactions lose no row and revive none") {
    val ds = table(stable = true, fragments = 16, rows = 40)
    val before = rows(ds, ds.snapshot())
    val deleted = new ConcurrentLinkedQueue[Long]()
    val failures = new ConcurrentLinkedQueue[Throwable]()
    val stop = new AtomicBoolean(false)
    // Compaction runs ended (landed or not) and landed: writers wait for runs to end now and then,
    // so that compactions land during the race even on a loaded machine, where a run of rounds
    // that each lose to some delete could otherwise go on until the writers are done.
    val runs = new AtomicInteger(0)
    val landed = new AtomicInteger(0)
    val gaveUp = new ConcurrentLinkedQueue[CommitConflictException]()
    val pool = Executors.newFixedThreadPool(4)
    val writers = (0 until 3).map { w =>
      pool.submit(new Runnable {
        def run(): Unit = {
          val random = new Random(w)
          // Writer w owns the ids = w (mod 3): writers never delete the same row.
          val mine = random.shuffle(before.keys.filter(_ % 3 == w).toSeq).take(25)
          for ((id, n) <- mine.zipWithIndex) try {
            if (n % 5 == 4) {
              val seen = runs.get
              val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30)
              while (runs.get == seen && System.nanoTime() < deadline) Thread.sleep(5)
            }
            deleteIds(ds, ds.snapshot(), Seq(id)).commit(RowLevelCommit.Kind.Delete)
            deleted.add(id)
          } catch { case e: Throwable => failures.add(e) }
        }
      })
    }
    val compactor = pool.submit(new Runnable {
      def run(): Unit = while (!stop.get) {
        try { if (new Compaction(ds).run(CompactionOptions(targetRowsPerFragment = 100, materializeDeletionsThreshold = 0.0)).version.isDefined) landed.incrementAndGet() }
        catch {
          // A compaction may give up after losing every attempt to deletes; it must change nothing then.
          case e: CommitConflictException if e.retryable => gaveUp.add(e)
          case e: Throwable => failures.add(e)
        }
        runs.incrementAndGet()
      }
    })
    writers.foreach(_.get(300, TimeUnit.SECONDS))
    stop.set(true)
    compactor.get(300, TimeUnit.SECONDS)
    pool.shutdown()
    assert(failures.isEmpty, failures.asScala.map(_.toString).mkString("\n"))
    assert(landed.get > 0 && deleted.size == 75, s"${landed.get} compactions landed in ${runs.get} runs (${gaveUp.size} gave up); ${deleted.size} deletes")
    val after = rows(ds, ds.snapshot())
    assert(after.keySet == before.keySet -- deleted.asScala)
    assert(after.forall { case (id, (_, rowId)) => before(id)._2 == rowId })
    assert(pylanceRows(ds) == after.map { case (id, (_, rowId)) => id -> rowId })
  }

  private val racingIndex = Paths.get("src/format/test/resources/compaction/racing_index.py")

  private def operations(ds: Dataset): Seq[String] = ds.versions.flatMap(v => Transactions.committed(ds, v)).map(Transactions.operationName)

  /**
   * Compacts a pylance table of ten fragments (`build` arguments of racing_index.py) while
   * `meanwhile` changes its indices, between the compaction's tasks and its commit.
   */
  private def compactWhile(build: Seq[String], meanwhile: Dataset => Unit): (Dataset, CompactionResult) = {
    val path = Files.createTempDirectory("racing-index").resolve("t.lance").toString
    Pylance.run(racingIndex, ("build" +: path +: build): _*)
    val ds = new Dataset(LocalStorage, path)
    var first = true
    val racing: Compaction.TaskRunner = (dataset, snapshot, tasks, zoneColumns) => {
      val groups = Compaction.inProcess(dataset, snapshot, tasks, zoneColumns)
      if (first) { first = false; meanwhile(ds) }
      groups
    }
    ds -> new Compaction(ds, racing).run(CompactionOptions(targetRowsPerFragment = 500))
  }

  /** Compacts a pylance table of ten fragments while pylance builds `kinds` of index over all of them. */
  private def compactWhileIndexing(stable: Boolean, kinds: String): (Dataset, CompactionResult) =
    compactWhile(Seq(stable.toString), ds => Pylance.run(racingIndex, "index", ds.path, kinds))

  for (stable <- Seq(false, true)) test(s"a compaction commits over indices pylance built meanwhile that it can carry (stable row ids: $stable)") {
    val kinds = if (stable) "ZONEMAP,BITMAP" else "ZONEMAP"
    val (ds, result) = compactWhileIndexing(stable, kinds)
    assert(result.version.isDefined && result.fragmentsRemoved == 10 && result.fragmentsAdded == 2, result)
    val ops = operations(ds).drop(10)
    assert(ops == Seq.fill(kinds.split(',').length)("CreateIndex") ++ Seq("ReserveFragments", "Rewrite"), ops)
    val check = Pylance.run(racingIndex, "check", ds.path).trim.linesIterator.toSeq.last
    assert(!check.contains("\"equal\": false") && check.contains("\"count\": 1000"), check)
    if (stable) assert(check.contains("\"cat_idx\": [10, 11]"), check) // the bitmap follows its rows
  }

  test("a compaction leaves alone what an index built meanwhile covers and it cannot carry, and reserves nothing for it") {
    val (ds, result) = compactWhileIndexing(stable = false, "BTREE,ZONEMAP")
    assert(result.version.isEmpty && result.fragmentsRemoved == 0, result)
    assert(result.replanned == 2 && result.leftAlone.map(_.fragmentId) == (0L to 9L), result)
    assert(operations(ds).drop(10) == Seq("CreateIndex", "CreateIndex"))
    val check = Pylance.run(racingIndex, "check", ds.path).trim.linesIterator.toSeq.last
    assert(!check.contains("\"equal\": false") && check.contains("\"id_idx\": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]"), check)
  }

  test("a compaction commits over a zone map fold that landed meanwhile") {
    val (ds, result) = compactWhile(Seq("false", "segments"), ds =>
      assert(ZoneMapFold.fold(ds, ds.snapshot(forWrite = true), Seq("x_idx"), CommitRetries()).exists(_.segments == Map("x_idx" -> 2))))
    assert(result.version.isDefined && result.fragmentsRemoved == 10 && result.fragmentsAdded == 2, result)
    assert(operations(ds).drop(12) == Seq("CreateIndex", "ReserveFragments", "Rewrite"), operations(ds))
    val check = Pylance.run(racingIndex, "check", ds.path).trim.linesIterator.toSeq.last
    assert(!check.contains("\"equal\": false") && check.contains("\"count\": 1000"), check)
  }
}
