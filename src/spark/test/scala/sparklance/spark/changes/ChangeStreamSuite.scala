package sparklance.spark.changes

import java.nio.file.Files
import java.util.concurrent.ConcurrentLinkedQueue
import org.apache.spark.sql.{DataFrame, Row}
import org.apache.spark.sql.streaming.{StreamingQueryException, Trigger}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.spark.LocalSpark

/**
 * The change-data stream (`readStream.changes`, `STREAM t CHANGES`, `readChangeFeed`): each
 * micro-batch holds what batch CHANGES gives for its commits, restarts neither skip nor repeat,
 * limits split the backlog, and what it cannot read (vacuumed versions, schema changes) stops it
 * with an error saying how to go on.
 */
class ChangeStreamSuite extends AnyFunSuite with LocalSpark {
  private val Cols = Seq("id", "v", "_rowid", "_change_type", "_commit_version", "_commit_timestamp")

  private def checkpoint(): String = Files.createTempDirectory(warehouse, "cp").toString

  /** Runs `df` with Trigger.AvailableNow to its end; each batch's rows (of `cols`) by batch id. */
  private def batches(df: DataFrame, checkpointDir: String, cols: Seq[String] = Cols): Seq[(Long, Seq[Row])] = {
    val out = new ConcurrentLinkedQueue[(Long, Seq[Row])]()
    val collect: (DataFrame, Long) => Unit = (batch, id) => { out.add(id -> batch.select(cols.map(batch.col): _*).collect().toSeq); () }
    val query = df.writeStream.option("checkpointLocation", checkpointDir).trigger(Trigger.AvailableNow())
      .foreachBatch(collect).start()
    query.awaitTermination()
    out.asScala.toSeq.sortBy(_._1)
  }

  private def sorted(rows: Seq[Row]): Seq[String] = rows.map(_.toString).sorted
  private def changes(query: String, cols: Seq[String] = Cols): Seq[Row] = sql(query).select(cols.map(c => org.apache.spark.sql.functions.col(c)): _*).collect().toSeq
  private def latest(table: String): Long = sql(s"SELECT max(version) FROM $table.history").head().getLong(0)
  private def failure(df: DataFrame, checkpointDir: String): Throwable =
    intercept[StreamingQueryException](batches(df, checkpointDir)).getCause

  test("readStream.changes, STREAM ... CHANGES and readChangeFeed stream what batch CHANGES gives, commit by commit") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.cs")
    sql("CREATE TABLE lance.cs.t (id INT, v STRING) TBLPROPERTIES ('enable_stable_row_ids'='true', " +
      "'max_rows_per_file'='4', 'optimize_write'='false')")                                               // v1
    sql("INSERT INTO lance.cs.t SELECT id, concat('a', id) FROM range(0, 12) AS r(id)")                    // v2
    sql("UPDATE lance.cs.t SET v = concat(v, '+') WHERE id % 3 = 0")                                       // v3
    sql("DELETE FROM lance.cs.t WHERE id % 5 = 1")                                                         // v4
    sql("""MERGE INTO lance.cs.t t USING (SELECT id, concat('m', id) AS v FROM range(8, 16) AS r(id)) s ON t.id = s.id
           WHEN MATCHED AND s.id = 9 THEN DELETE WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""") // v5
    val beforeCompaction = latest("lance.cs.t")
    sql("CALL lance.system.compact(table => 'cs.t', target_rows_per_fragment => 100)")                      // compaction
    val compactions = (beforeCompaction + 1 to latest("lance.cs.t")).toSet
    assert(compactions.nonEmpty)
    sql("INSERT INTO lance.cs.t VALUES (100, 'x')")
    val last = latest("lance.cs.t")

    val plain = changes(s"SELECT * FROM lance.cs.t CHANGES FROM VERSION 2 TO VERSION $last")
    val images = changes(s"SELECT * FROM lance.cs.t CHANGES FROM VERSION 2 TO VERSION $last WITH (computeUpdates = 'true')")
    assert(plain.nonEmpty && !plain.exists(r => compactions(r.getLong(4))))
    // A batch read takes Delta's option too.
    val batchFeed = spark.read.option("readChangeFeed", "true").option("startingVersion", "2").table("lance.cs.t")
    assert(!batchFeed.isStreaming && sorted(batchFeed.select(Cols.map(batchFeed.col): _*).collect().toSeq) == sorted(images))
    val streams = Seq(
      "changes" -> (spark.readStream.option("startingVersion", "2").option("maxFilesPerTrigger", "1").changes("lance.cs.t"), plain),
      "STREAM" -> (sql("SELECT * FROM STREAM lance.cs.t CHANGES FROM VERSION 2 WITH (maxFilesPerTrigger = 1)"), plain),
      // Delta's option gives Delta's change types: update pre and post images.
      "readChangeFeed" -> (spark.readStream.option("readChangeFeed", "true").option("startingVersion", "2")
        .option("maxFilesPerTrigger", "1").table("lance.cs.t"), images))
    streams.foreach { case (how, (df, expected)) =>
      assert(df.isStreaming, how)
      val got = batches(df, checkpoint())
      assert(sorted(got.flatMap(_._2)) == sorted(expected), how)
      // One commit per batch (a compaction, which changes no rows, rides along with the next one),
      // each what the batch read of its versions gives.
      val withRows = got.filter(_._2.nonEmpty)
      assert(withRows.size == 5, s"$how: ${got.map(_._2.map(_.getLong(4)).distinct)}")
      withRows.foreach { case (_, rows) =>
        val versions = rows.map(_.getLong(4)).distinct
        assert(versions.size == 1, s"$how: $versions")
        assert(sorted(rows) == sorted(expected.filter(_.getLong(4) == versions.head)), how)
      }
    }
  }

  test("by default the stream starts with the table as it is (inserts at that version), then its changes; a restart " +
    "goes on from the checkpoint, and a replayed batch reads the same rows after later commits and a compaction") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.cs")
    sql("CREATE TABLE lance.cs.d (id INT, v STRING) TBLPROPERTIES ('enable_stable_row_ids'='true', " +
      "'max_rows_per_file'='3', 'optimize_write'='false')")
    sql("INSERT INTO lance.cs.d SELECT id, 'a' FROM range(0, 10) AS r(id)")
    sql("DELETE FROM lance.cs.d WHERE id = 4")
    val start = latest("lance.cs.d")
    val dir = checkpoint()
    def stream = spark.readStream.option("readChangeFeed", "true").option("maxFilesPerTrigger", "2").table("lance.cs.d")
    val first = batches(stream, dir)
    // Four fragments, two per batch; the deleted row is not there.
    assert(first.size == 2, first)
    val snapshot = sql(s"SELECT id, v, _rowid FROM lance.cs.d VERSION AS OF $start").collect().toSeq
      .map(r => Row(r.getInt(0), r.getString(1), r.getLong(2), "insert", start))
    assert(snapshot.size == 9)
    assert(sorted(first.flatMap(_._2).map(r => Row(r.getInt(0), r.getString(1), r.getLong(2), r.getString(3), r.getLong(4)))) ==
      sorted(snapshot))
    assert(new java.io.File(dir, "sources/0/lance-initial-offset.json").exists())

    sql("UPDATE lance.cs.d SET v = 'b' WHERE id < 2")
    sql("INSERT INTO lance.cs.d VALUES (20, 'n')")
    val second = batches(stream, dir)
    assert(sorted(second.flatMap(_._2)) == sorted(changes(s"SELECT * FROM lance.cs.d CHANGES FROM VERSION ${start + 1} " +
      "WITH (computeUpdates = 'true')")))
    assert(second.map(_._1) == Seq(2L, 3L), second.map(_._1))

    // Batch 3 landed in the sink but not in the commit log (a crash): the restart replays it with
    // the same offsets, after a compaction and more changes, and reads the same rows.
    val lastBatch = second.last
    assert(new java.io.File(dir, s"commits/${lastBatch._1}").delete())
    new java.io.File(dir, s"commits/.${lastBatch._1}.crc").delete()
    sql("CALL lance.system.compact(table => 'cs.d', target_rows_per_fragment => 100)")
    sql("DELETE FROM lance.cs.d WHERE id = 20")
    val third = batches(stream, dir)
    assert(third.head._1 == lastBatch._1 && sorted(third.head._2) == sorted(lastBatch._2))
    assert(sorted(third.tail.flatMap(_._2)).map(_.split(",")(3)) == Seq("delete"), third)
  }

  test("Trigger.AvailableNow keeps maxRowsPerTrigger: at least one commit per batch; startingTimestamp and latest") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.cs")
    sql("CREATE TABLE lance.cs.r (id INT, v STRING) TBLPROPERTIES ('enable_stable_row_ids'='true')")
    (0 until 4).foreach(i => sql(s"INSERT INTO lance.cs.r SELECT id, 'x' FROM range(${i * 10}, ${i * 10 + 10}) AS r(id)"))
    sql("UPDATE lance.cs.r SET v = 'y'") // 40 rows changed: more than the limit, alone in its batch
    val got = batches(spark.readStream.option("startingVersion", "1").option("maxRowsPerTrigger", "25").changes("lance.cs.r"),
      checkpoint())
    assert(got.map(_._2.size) == Seq(20, 20, 80), got.map(_._2.size))

    // startingTimestamp: from the first commit at or after the time; `latest`: only what comes after the start.
    val at4 = sql("SELECT timestamp FROM lance.cs.r.history WHERE version = 4").head().getTimestamp(0)
    val fromTime = batches(spark.readStream.option("startingTimestamp", at4.toString).changes("lance.cs.r"), checkpoint())
    assert(fromTime.flatMap(_._2).map(_.getLong(4)).distinct.sorted == Seq(4L, 5L, 6L))
    val dir = checkpoint()
    def latestOnly = spark.readStream.option("startingVersion", "latest").changes("lance.cs.r")
    assert(batches(latestOnly, dir).flatMap(_._2).isEmpty)
    sql("INSERT INTO lance.cs.r VALUES (99, 'z')")
    assert(batches(latestOnly, dir).flatMap(_._2).map(r => (r.getInt(0), r.getString(3))) == Seq((99, "insert")))
  }

  test("a version cleanup removed before the stream read it stops the query, naming the oldest version left and how to go on") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.cs")
    sql("CREATE TABLE lance.cs.g (id INT, v STRING) TBLPROPERTIES ('enable_stable_row_ids'='true')")
    sql("INSERT INTO lance.cs.g VALUES (1, 'a')")
    val dir = checkpoint()
    def stream = spark.readStream.option("startingVersion", "2").changes("lance.cs.g")
    assert(batches(stream, dir).flatMap(_._2).size == 1)
    (2 to 4).foreach(i => sql(s"INSERT INTO lance.cs.g VALUES ($i, 'a')"))
    sql("CALL lance.system.vacuum(table => 'cs.g', retain_versions => 2)")
    val e = failure(stream, dir)
    assert(e.getMessage.contains("no longer has version 2") && e.getMessage.contains("the oldest version left is 4") &&
      e.getMessage.contains("startingVersion 5"), e.getMessage)
    // As it says: a new query from there reads on.
    assert(batches(spark.readStream.option("startingVersion", "5").changes("lance.cs.g"), checkpoint()).flatMap(_._2)
      .map(_.getInt(0)) == Seq(4))
  }

  test("a schema change while the query runs stops it; the restart reads on in the new schema, and across a drop it " +
    "cannot") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.cs")
    sql("CREATE TABLE lance.cs.s (id INT, v STRING) TBLPROPERTIES ('enable_stable_row_ids'='true')")
    sql("INSERT INTO lance.cs.s VALUES (1, 'a')")
    val dir = checkpoint()
    def stream = spark.readStream.option("startingVersion", "2").option("maxFilesPerTrigger", "1").changes("lance.cs.s")
    val analysed = stream
    sql("ALTER TABLE lance.cs.s ADD COLUMN w INT")
    sql("INSERT INTO lance.cs.s VALUES (2, 'b', 20)")
    val e = failure(analysed, dir)
    assert(e.getMessage.contains("Version 3 of lance.cs.s has another schema") && e.getMessage.contains("Restart the query"),
      e.getMessage)
    val cols = Seq("id", "v", "w", "_change_type", "_commit_version")
    val resumed = batches(stream, dir, cols).flatMap(_._2)
    assert(sorted(resumed) == sorted(changes("SELECT * FROM lance.cs.s CHANGES FROM VERSION 3", cols)))
    assert(resumed.map(_.getInt(0)) == Seq(2))

    sql("ALTER TABLE lance.cs.s DROP COLUMN v")
    sql("INSERT INTO lance.cs.s VALUES (3, 30)")
    val dropped = failure(stream, dir)
    assert(dropped.getMessage.contains("version 5 dropped column 'v'") &&
      dropped.getMessage.contains("restart the query from a new checkpoint location with startingVersion 6"), dropped.getMessage)
  }

  test("errors: no stable row ids, net changes, an end bound, a start out of range") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.cs")
    sql("CREATE TABLE lance.cs.plain (id INT)")
    sql("INSERT INTO lance.cs.plain VALUES (1)")
    val plain = intercept[Exception](spark.readStream.option("readChangeFeed", "true").table("lance.cs.plain"))
    assert(plain.getMessage.contains("needs stable row ids"), plain.getMessage)
    sql("CREATE TABLE lance.cs.e (id INT, v STRING) TBLPROPERTIES ('enable_stable_row_ids'='true')")
    sql("INSERT INTO lance.cs.e VALUES (1, 'a')")
    def error(df: => DataFrame) = intercept[Exception](batches(df, checkpoint())) match {
      case s: StreamingQueryException => s.getCause.getMessage
      case other => other.getMessage
    }
    val net = error(spark.readStream.option("startingVersion", "1").option("deduplicationMode", "netChanges").changes("lance.cs.e"))
    assert(net.contains("net changes"), net)
    val ending = error(spark.readStream.option("startingVersion", "1").option("endingVersion", "2").changes("lance.cs.e"))
    assert(ending.contains("Option endingVersion") && ending.contains("without an end"), ending)
    val far = error(spark.readStream.option("startingVersion", "9").changes("lance.cs.e"))
    assert(far.contains("'9' is not a version of lance.cs.e: its versions go from 1 to 2"), far)
    val flag = error(spark.readStream.option("readChangeFeed", "yes").table("lance.cs.e"))
    assert(flag.contains("readChangeFeed") && flag.contains("neither true nor false"), flag)
    // A table dropped under the query ends it.
    val running = spark.readStream.option("startingVersion", "1").changes("lance.cs.e")
    sql("DROP TABLE lance.cs.e")
    val gone = error(running)
    assert(gone.contains("LANCE_TABLE_NOT_FOUND") && gone.contains("e.lance"), gone)
    sql("CREATE TABLE lance.cs.e (id INT, v STRING) TBLPROPERTIES ('enable_stable_row_ids'='true')")
    // Without the session extension the option reaches the table's scan, which refuses it rather than read the table.
    val table = spark.sessionState.catalogManager.catalog("lance").asInstanceOf[sparklance.spark.LanceCatalog]
      .loadTable(org.apache.spark.sql.connector.catalog.Identifier.of(Array("cs"), "e"))
      .asInstanceOf[sparklance.spark.LanceTable]
    val noExtension = intercept[Exception](table.newScanBuilder(
      new org.apache.spark.sql.util.CaseInsensitiveStringMap(Map("readChangeFeed" -> "true").asJava)).build())
    assert(noExtension.getMessage.contains("reads change data only by a table name") &&
      noExtension.getMessage.contains("spark.readStream.changes"), noExtension.getMessage)
    // By location: the name works, format("lance").load(path) is refused saying so.
    val path = warehouse.resolve("cs/e.lance").toString
    sql("INSERT INTO lance.cs.e VALUES (5, 'p')")
    assert(batches(spark.readStream.option("readChangeFeed", "true").option("startingVersion", "2")
      .table(s"lance.`$path`"), checkpoint()).flatMap(_._2).map(_.getInt(0)) == Seq(5))
    val byLoad = error(spark.readStream.format("lance").option("readChangeFeed", "true").load(path))
    assert(byLoad.contains("reads change data only by a table name"), byLoad)
  }
}
