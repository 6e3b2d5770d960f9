package sparklance.spark

import java.nio.file.Files
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.connector.catalog.Identifier
import org.apache.spark.sql.streaming.{StreamingQuery, Trigger}
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable.ArrayBuffer
import sparklance.format.VersionRemovedException
import sparklance.format.table.Dataset
import sparklance.spark.errors.LanceThrowable
import sparklance.spark.streaming.{ChangeCommitException, InitialOffsetStore, LanceSourceOffset, StreamSchemaException}

/** `spark.readStream.table(...)` of a Lance table: the append source, its offsets, limits and errors. */
class AppendSourceSuite extends AnyFunSuite with LocalSpark {
  private def dataset(table: String): Dataset = {
    val catalog = spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog]
    new Dataset(catalog.storage, catalog.tablePath(Identifier.of(Array("st"), table)))
  }
  private def rootOf[T <: Throwable](e: Throwable)(implicit m: scala.reflect.ClassTag[T]): T =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).collectFirst { case t: T => t }
      .getOrElse(fail(s"no ${m.runtimeClass.getSimpleName} in the causes of $e", e))

  /** The condition of the first sparklance error in the cause chain. */
  private def condition(e: Throwable): String =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).collectFirst { case t: LanceThrowable => t.getCondition }
      .getOrElse(fail(s"no sparklance error in the causes of $e", e))

  private def newTable(name: String): Unit = {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.st")
    sql(s"CREATE TABLE lance.st.$name (id BIGINT, s STRING)")
  }
  private def insert(name: String, from: Long, until: Long): Unit =
    sql(s"INSERT INTO lance.st.$name SELECT id, CAST(id AS STRING) FROM range($from, $until, 1, 1)")

  /** What one run of a query delivered: ids per batch id, and rows per batch as its progress reports them. */
  final case class Run(batches: Seq[(Long, Seq[Long])], progressRows: Seq[Long]) {
    def ids: Seq[Long] = batches.flatMap(_._2)
  }

  private def newCheckpoint(): String = Files.createTempDirectory(warehouse, "ckpt").toString

  /** Runs a query over `source` from `checkpoint` until it stops (AvailableNow, Once), collecting what each batch got. */
  private def run(checkpoint: String, trigger: Trigger = Trigger.AvailableNow(), options: Map[String, String] = Map.empty,
      source: Option[() => DataFrame] = None, table: String = "t"): Run = {
    val got = ArrayBuffer.empty[(Long, Seq[Long])]
    val collect: (DataFrame, Long) => Unit = (df, id) => got.synchronized { got += id -> df.collect().map(_.getLong(0)).toSeq }
    val df = source.fold(spark.readStream.options(options).table(s"lance.st.$table"))(_())
    val q: StreamingQuery = df.writeStream.option("checkpointLocation", checkpoint).trigger(trigger).foreachBatch(collect).start()
    try q.awaitTermination() finally q.stop()
    Run(got.toSeq, q.recentProgress.toSeq.map(_.numInputRows))
  }

  test("the initial snapshot, then each version's appends; a restart goes on from the checkpoint without duplicates") {
    newTable("t")
    insert("t", 0, 10)
    insert("t", 10, 20)
    val ckpt = newCheckpoint()
    val first = run(ckpt)
    assert(first.ids.sorted == (0L until 20L))
    insert("t", 20, 25)
    insert("t", 25, 30)
    val second = run(ckpt)
    assert(second.ids.sorted == (20L until 30L), second)
    assert(second.batches.head._1 > first.batches.last._1)
    assert(run(ckpt).ids.isEmpty)
    // The offset json as the offset log keeps it.
    val log = new String(Files.readAllBytes(java.nio.file.Paths.get(ckpt, "offsets", second.batches.last._1.toString)), "UTF-8")
    val latest = dataset("t").latestVersion
    assert(log.contains(s"""{"v":1,"tableVersion":${latest + 1},"index":0,"initialSnapshot":false}"""), log)
  }

  test("maxFilesPerTrigger and maxRowsPerTrigger cut a backlog into several batches under AvailableNow; Once takes it whole") {
    newTable("m")
    (0 until 4).foreach(i => insert("m", i * 10, i * 10 + 10))
    val files = run(newCheckpoint(), options = Map("maxFilesPerTrigger" -> "1"), table = "m")
    assert(files.ids.sorted == (0L until 40L) && files.batches.size == 4 && files.progressRows.filter(_ > 0) == Seq(10L, 10L, 10L, 10L), files)
    // At least one fragment per batch, even when it holds more rows than the limit.
    val rows = run(newCheckpoint(), options = Map("maxRowsPerTrigger" -> "15"), table = "m")
    assert(rows.ids.sorted == (0L until 40L) && rows.batches.size == 4, rows)
    val once = run(newCheckpoint(), trigger = Trigger.Once(), options = Map("maxFilesPerTrigger" -> "1"), table = "m")
    assert(once.ids.sorted == (0L until 40L) && once.batches.size == 1, once)
  }

  test("startingVersion (a number or latest) and startingTimestamp; the resolved start is kept in the checkpoint") {
    newTable("s")
    insert("s", 0, 10)                                  // v2
    insert("s", 10, 20)                                 // v3
    assert(run(newCheckpoint(), options = Map("startingVersion" -> "3"), table = "s").ids.sorted == (10L until 20L))
    val time = new java.sql.Timestamp(dataset("s").snapshot(Some(3L)).commitMicros / 1000).toString
    assert(run(newCheckpoint(), options = Map("startingTimestamp" -> time), table = "s").ids.sorted == (10L until 20L))
    // `latest` starts after version 3; a restart (no batch ran) keeps that start, so version 4's rows come.
    val ckpt = newCheckpoint()
    assert(run(ckpt, options = Map("startingVersion" -> "latest"), table = "s").ids.isEmpty)
    insert("s", 20, 25)                                 // v4
    assert(run(ckpt, options = Map("startingVersion" -> "latest"), table = "s").ids.sorted == (20L until 25L))
    val stored = new String(Files.readAllBytes(java.nio.file.Paths.get(ckpt, "sources", "0", InitialOffsetStore.FileName)), "UTF-8")
    assert(LanceSourceOffset.fromJson(stored) == LanceSourceOffset.startOf(4))
    // By path, as format("lance").load(path) reads the table.
    val path = dataset("s").path
    assert(run(newCheckpoint(), source = Some(() => spark.readStream.format("lance").option("startingVersion", "4").load(path))).ids.sorted ==
      (20L until 25L))
  }

  test("compactions are skipped; a DELETE fails the query naming the version and skipChangeCommits, which skips it") {
    newTable("d")
    sql("ALTER TABLE lance.st.d SET TBLPROPERTIES ('optimize_write' = 'false')")
    insert("d", 0, 10)
    insert("d", 10, 20)
    val ckpt = newCheckpoint()
    assert(run(ckpt, table = "d").ids.sorted == (0L until 20L))
    sql("CALL lance.system.compact(table => 'st.d')")
    insert("d", 20, 30)
    assert(run(ckpt, table = "d").ids.sorted == (20L until 30L))
    sql("DELETE FROM lance.st.d WHERE id < 5")
    val deleted = dataset("d").latestVersion
    insert("d", 30, 35)
    val e = intercept[Exception](run(ckpt, table = "d"))
    val cause = rootOf[ChangeCommitException](e)
    assert(cause.version == deleted && e.getMessage.contains(s"Version $deleted of lance.st.d deleted rows") &&
      e.getMessage.contains("skipChangeCommits"), e.getMessage)
    assert(condition(e) == "LANCE_STREAM_CHANGE_COMMIT")
    assert(run(ckpt, options = Map("skipChangeCommits" -> "true"), table = "d").ids.sorted == (30L until 35L))
    // A new query's initial snapshot holds the live rows only.
    assert(run(newCheckpoint(), table = "d").ids.sorted == (5L until 35L))
  }

  test("a schema change fails a running query with restart advice; the restarted query reads on in the new schema") {
    newTable("e")
    insert("e", 0, 5)
    val ckpt = newCheckpoint()
    assert(run(ckpt, table = "e").ids.sorted == (0L until 5L))
    sql("ALTER TABLE lance.st.e ADD COLUMN x INT")
    sql("INSERT INTO lance.st.e SELECT id, CAST(id AS STRING), 1 FROM range(5, 8)")
    // The query restarted analyses the table in its new schema and reads on.
    assert(run(ckpt, table = "e").ids.sorted == (5L until 8L))
    // A query analysed before a change (its schema fixed then) stops at it.
    val analysed = dataset("e").latestVersion
    val old = spark.readStream.option("startingVersion", (analysed + 1).toString).table("lance.st.e")
    sql("ALTER TABLE lance.st.e ADD COLUMN y INT")
    val e = intercept[Exception](run(newCheckpoint(), source = Some(() => old)))
    assert(rootOf[StreamSchemaException](e).version == analysed + 1)
    assert(e.getMessage.contains("Restart the query") && condition(e) == "LANCE_STREAM_SCHEMA_CHANGE", e.getMessage)
    // Versions before the start that lack only columns added since are read with NULLs in them.
    val older = spark.readStream.option("startingVersion", "2").table("lance.st.e")
    val nulls = ArrayBuffer.empty[Row]
    val collectAll: (DataFrame, Long) => Unit = (df, _) => nulls.synchronized { nulls ++= df.collect() }
    val q = older.writeStream.option("checkpointLocation", newCheckpoint()).trigger(Trigger.AvailableNow()).foreachBatch(collectAll).start()
    try q.awaitTermination() finally q.stop()
    assert(nulls.map(r => (r.getLong(0), Option(r.get(2)), Option(r.get(3)))).sortBy(_._1) ==
      (0L until 5L).map(i => (i, None, None)) ++ (5L until 8L).map(i => (i, Some(1), None)))
    // A MERGE that evolved the schema and updated a row is a change commit, though Lance records it as a Merge.
    val merged = newCheckpoint()
    assert(run(merged, options = Map("startingVersion" -> "latest"), table = "e").ids.isEmpty)
    sql("MERGE WITH SCHEMA EVOLUTION INTO lance.st.e t USING (SELECT 1L AS id, 'z' AS s, 2 AS x, 3 AS y, 4 AS w) src " +
      "ON t.id = src.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    val update = intercept[Exception](run(merged, table = "e"))
    assert(condition(update) == "LANCE_STREAM_CHANGE_COMMIT" && update.getMessage.contains("changed the schema"), update.getMessage)
    // A dropped column leaves the rows of versions before it without a place in the schema.
    sql("ALTER TABLE lance.st.e DROP COLUMN s")
    val before = intercept[Exception](run(newCheckpoint(), options = Map("startingVersion" -> "2"), table = "e"))
    assert(rootOf[StreamSchemaException](before).version == 2 && before.getMessage.contains("startingVersion at or after"), before.getMessage)
  }

  test("a version cleanup removed before the stream read it fails the query, naming the oldest version left") {
    newTable("v")
    insert("v", 0, 5)
    val ckpt = newCheckpoint()
    assert(run(ckpt, table = "v").ids.sorted == (0L until 5L))
    val next = dataset("v").latestVersion + 1
    insert("v", 5, 10)
    insert("v", 10, 15)
    sql("CALL lance.system.vacuum(table => 'st.v', retain_versions => 1)")
    val oldest = dataset("v").latestVersion
    val e = intercept[Exception](run(ckpt, table = "v"))
    val gone = rootOf[VersionRemovedException](e)
    assert(gone.version == next && gone.oldest == oldest, e.getMessage)
    assert(e.getMessage.contains(s"startingVersion $oldest or later") && e.getMessage.contains("new checkpoint location"), e.getMessage)
  }

  test("a replayed batch reads the rows its offsets named, after a delete and a compaction") {
    newTable("r")
    sql("ALTER TABLE lance.st.r SET TBLPROPERTIES ('optimize_write' = 'false')")
    insert("r", 0, 10)
    insert("r", 10, 20)
    val ckpt = newCheckpoint()
    val first = run(ckpt, table = "r")
    assert(first.ids.sorted == (0L until 20L))
    // As if the query died after planning its last batch and before committing it.
    val last = first.batches.last._1
    Files.delete(java.nio.file.Paths.get(ckpt, "commits", last.toString))
    Files.deleteIfExists(java.nio.file.Paths.get(ckpt, "commits", s".$last.crc"))
    sql("DELETE FROM lance.st.r WHERE id % 2 = 0")
    sql("CALL lance.system.compact(table => 'st.r')")
    val replay = run(ckpt, table = "r", options = Map("skipChangeCommits" -> "true"))
    assert(replay.batches.head == first.batches.last, replay)
  }

  test("a table dropped under a running query ends it with LANCE_TABLE_NOT_FOUND; progress reports the latest version") {
    newTable("x")
    insert("x", 0, 5)
    val got = ArrayBuffer.empty[Long]
    val collect: (DataFrame, Long) => Unit = (df, _) => got.synchronized { got ++= df.collect().map(_.getLong(0)) }
    val q = spark.readStream.table("lance.st.x").writeStream.option("checkpointLocation", newCheckpoint()).foreachBatch(collect).start()
    try {
      q.processAllAvailable()
      assert(got.sorted == (0L until 5L))
      val latest = dataset("x").latestVersion
      assert(q.lastProgress.sources.head.latestOffset.contains(s""""tableVersion":${latest + 1}"""), q.lastProgress.json)
      sql("DROP TABLE lance.st.x")
      val e = intercept[Exception](q.awaitTermination(60000))
      assert(condition(e) == "LANCE_TABLE_NOT_FOUND", e)
    } finally q.stop()
  }

  test("bad options are refused naming the option") {
    newTable("o")
    def refused(options: (String, String)*): String = {
      val e = intercept[Exception](run(newCheckpoint(), options = options.toMap, table = "o"))
      assert(condition(e) == "LANCE_INVALID_OPTION", e)
      e.getMessage
    }
    assert(refused("maxFilesPerTrigger" -> "0").contains("Option maxFilesPerTrigger: '0' is not a positive whole number"))
    assert(refused("maxRowsPerTrigger" -> "many").contains("Option maxRowsPerTrigger"))
    assert(refused("startingVersion" -> "first").contains("Option startingVersion: 'first' is neither"))
    assert(refused("skipChangeCommits" -> "yes").contains("Option skipChangeCommits"))
    assert(refused("startingVersion" -> "1", "startingTimestamp" -> "2020-01-01").contains("give one of them only"))
    assert(refused("startingTimestamp" -> "soon").contains("Option startingTimestamp: 'soon' is not a timestamp"))
    // By path (Spark itself refuses time travel options on a catalog table's stream).
    val byVersion = intercept[Exception](run(newCheckpoint(),
      source = Some(() => spark.readStream.format("lance").option("versionAsOf", "1").load(dataset("o").path))))
    assert(condition(byVersion) == "LANCE_INVALID_OPTION" && byVersion.getMessage.contains("Option versionAsOf"), byVersion)
    val missing = intercept[Exception](run(newCheckpoint(), options = Map("startingVersion" -> "99"), table = "o"))
    assert(condition(missing) == "LANCE_VERSION_NOT_FOUND", missing)
  }

  test("offsets: json round trip, a newer layout refused") {
    val o = LanceSourceOffset(7, 3, initialSnapshot = true)
    assert(o.json() == """{"v":1,"tableVersion":7,"index":3,"initialSnapshot":true}""")
    assert(LanceSourceOffset.fromJson(o.json()) == o)
    val e = intercept[IllegalStateException](LanceSourceOffset.fromJson("""{"v":2,"tableVersion":7,"index":3,"initialSnapshot":true}"""))
    assert(e.getMessage.contains("layout version 2"))
  }
}
