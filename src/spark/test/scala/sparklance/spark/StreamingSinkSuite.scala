package sparklance.spark

import java.nio.file.{Files, Path}
import org.apache.spark.sql.Row
import org.apache.spark.sql.connector.catalog.Identifier
import org.apache.spark.sql.streaming.{OutputMode, StreamingQuery, Trigger}
import org.apache.spark.sql.types.{LongType, StringType, StructType}
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.TxnAlreadyAppliedException
import sparklance.format.commit.{CommitRecord, Committer, Operation, Transactions, TxnMarker}
import sparklance.format.table.Dataset

/**
 * `writeStream ... toTable` into Lance tables: append and complete mode, one version per
 * non-empty micro-batch carrying the query id and batch id, a replayed batch skipped, concurrent
 * writers and compaction between batches; and idempotent batch writes (txnAppId / txnVersion).
 * The input is a directory of JSON files read one file per batch with Trigger.AvailableNow, so
 * that every run is bounded and its batches known.
 */
class StreamingSinkSuite extends AnyFunSuite with LocalSpark {
  private val inputSchema = new StructType().add("id", LongType).add("k", StringType)

  private def dataset(table: String): Dataset = {
    val catalog = spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog]
    new Dataset(catalog.storage, catalog.tablePath(Identifier.of(Array("st"), table)))
  }

  private def props(table: String, version: Long): Map[String, String] =
    Transactions.committed(dataset(table), version).get.getTransactionPropertiesMap.asScala.toMap

  /** A new input directory; `addFile` puts the rows with ids `ids` (key "k<id % 3>") in its next file. */
  private final class Input {
    val dir: Path = Files.createTempDirectory(warehouse, "input")
    private var n = 0
    def addFile(ids: Range): Unit = {
      n += 1
      val tmp = Files.createTempFile(warehouse, "part", ".tmp")
      Files.write(tmp, ids.map(i => s"""{"id":$i,"k":"k${i % 3}"}""").asJava)
      Files.move(tmp, dir.resolve(f"part-$n%04d.json"))
    }
  }

  private def run(input: Input, checkpoint: Path, table: String, mode: OutputMode = OutputMode.Append(),
      aggregate: Boolean = false): StreamingQuery = {
    val stream = spark.readStream.schema(inputSchema).option("maxFilesPerTrigger", "1").json(input.dir.toString)
    val rows = if (aggregate) stream.groupBy("k").count() else stream
    val query = rows.writeStream.format("lance").outputMode(mode).option("checkpointLocation", checkpoint.toString)
      .trigger(Trigger.AvailableNow()).toTable(s"lance.st.$table")
    query.awaitTermination()
    query
  }

  /** Removes batch `n` from the checkpoint's commit log (and its checksum file), as a crash right after the sink's commit leaves it. */
  private def forget(checkpoint: Path, n: Int): Unit = {
    Files.delete(checkpoint.resolve(s"commits/$n"))
    Files.deleteIfExists(checkpoint.resolve(s"commits/.$n.crc"))
  }

  private def ids(table: String): Seq[Long] = sql(s"SELECT id FROM lance.st.$table ORDER BY id").collect().map(_.getLong(0)).toSeq

  private def dataFiles(table: String): Int = Files.list(java.nio.file.Paths.get(dataset(table).path, "data")).count().toInt

  test("append mode: one version per batch with the query id and batch id; a replayed batch is skipped") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.st")
    val input = new Input
    val checkpoint = Files.createTempDirectory(warehouse, "cp")
    (0 until 3).foreach(i => input.addFile(i * 10 until i * 10 + 10))
    // toTable creates the missing table with the stream's schema.
    val query = run(input, checkpoint, "events")
    assert(ids("events") == (0L until 30L))
    val ds = dataset("events")
    val appended = ds.versions.filter(v => props("events", v).contains(TxnMarker.AppIdKey))
    assert(appended.size == 3)
    assert(appended.map(v => props("events", v)(TxnMarker.VersionKey)) == Seq("0", "1", "2"))
    assert(appended.forall(v => props("events", v)(TxnMarker.AppIdKey) == query.id.toString))
    assert(appended.forall(v => props("events", v)(CommitRecord.StatementKey) == "STREAMING APPEND"))
    assert(TxnMarker.watermarkIn(ds.snapshot().manifest, query.id.toString).contains(2L))

    // The last batch's commit landed but the checkpoint never recorded it: the restarted query
    // re-runs batch 2 with the same offsets, and the sink recognises it.
    val versions = ds.versions
    val files = dataFiles("events")
    forget(checkpoint, 2)
    run(input, checkpoint, "events")
    assert(ids("events") == (0L until 30L))
    assert(ds.versions == versions && dataFiles("events") == files)

    // New input continues with batch 3.
    input.addFile(30 until 35)
    run(input, checkpoint, "events")
    assert(ids("events") == (0L until 35L))
    assert(props("events", ds.latestVersion)(TxnMarker.VersionKey) == "3")
  }

  test("concurrent INSERT, DELETE and compaction between batches; a zombie commit of the same batch is refused") {
    val input = new Input
    val checkpoint = Files.createTempDirectory(warehouse, "cp")
    sql("CREATE TABLE lance.st.mixed (id BIGINT, k STRING)")
    input.addFile(0 until 10)
    val query = run(input, checkpoint, "mixed")
    sql("INSERT INTO lance.st.mixed VALUES (1000, 'x'), (1001, 'x')")
    sql("DELETE FROM lance.st.mixed WHERE id < 5")
    input.addFile(10 until 20)
    run(input, checkpoint, "mixed")
    sql("CALL lance.system.compact(table => 'st.mixed')")
    input.addFile(20 until 30)
    run(input, checkpoint, "mixed")
    assert(ids("mixed") == (5L until 30L) ++ Seq(1000L, 1001L))
    assert(sql("SELECT count(*) FROM lance.st.mixed").head().getLong(0) == 27)

    // A second driver of the same query committing batch 2 from a stale base: refused as a duplicate.
    val ds = dataset("mixed")
    val stale = ds.snapshot(Some(ds.versions.head))
    val e = intercept[TxnAlreadyAppliedException](new Committer(ds).commit(Some(stale), Operation.Append(Nil),
      appTxn = Some(TxnMarker(query.id.toString, 2, TxnMarker.Kind.Stream))))
    assert(e.appId == query.id.toString && e.committedTxnVersion == 2)
    val next = new Committer(ds).commit(Some(stale), Operation.Append(Nil), appTxn = Some(TxnMarker(query.id.toString, 3, TxnMarker.Kind.Stream)))
    assert(next.version == ds.latestVersion)
  }

  test("complete mode replaces the table with each batch's result; update mode is refused before any batch") {
    val input = new Input
    val checkpoint = Files.createTempDirectory(warehouse, "cp")
    input.addFile(0 until 6)
    input.addFile(6 until 9)
    run(input, checkpoint, "counts", OutputMode.Complete(), aggregate = true)
    assert(sql("SELECT k, count FROM lance.st.counts ORDER BY k").collect().map(r => r.getString(0) -> r.getLong(1)).toSeq ==
      Seq("k0" -> 3L, "k1" -> 3L, "k2" -> 3L))
    val ds = dataset("counts")
    assert(props("counts", ds.latestVersion)(CommitRecord.StatementKey) == "STREAMING COMPLETE")
    assert(Transactions.operationName(Transactions.committed(ds, ds.latestVersion).get) == "Overwrite")

    val updates = new Input
    updates.addFile(0 until 3)
    val versions = ds.versions
    val e = intercept[Exception](run(updates, Files.createTempDirectory(warehouse, "cp"), "counts", OutputMode.Update(), aggregate = true))
    assert(Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).exists(_.getMessage.contains("does not support Update mode")), e)
    assert(ds.versions == versions)
  }

  test("a query's columns go to the table's by name: another order, a missing nullable column, an up-cast; others refused") {
    sql("CREATE TABLE lance.st.named (id BIGINT, k STRING, note STRING, n BIGINT NOT NULL)")
    val input = new Input
    input.addFile(0 until 4)
    def write(select: String*): StreamingQuery = {
      val query = spark.readStream.schema(inputSchema).option("maxFilesPerTrigger", "1").json(input.dir.toString)
        .selectExpr(select: _*).writeStream.option("checkpointLocation", Files.createTempDirectory(warehouse, "cp").toString)
        .trigger(Trigger.AvailableNow()).toTable("lance.st.named")
      query.awaitTermination()
      query
    }
    // Another order than the table's, `note` missing, `n` an INT into BIGINT, names in another case.
    write("CAST(id * 10 AS INT) AS N", "k", "id")
    assert(sql("SELECT id, k, note, n FROM lance.st.named ORDER BY id").collect().toSeq ==
      (0 until 4).map(i => Row(i.toLong, s"k${i % 3}", null, i * 10L)))
    val versions = dataset("named").versions
    for ((select, message) <- Seq(
      Seq("id", "k", "id AS n", "'x' AS extra") -> "the query's column 'extra' is not in the table",
      Seq("id", "k") -> "NOT NULL column 'n' is not among the query's columns",
      Seq("CAST(id AS STRING) AS id", "id AS n") -> "column 'id' is BIGINT and the query gives STRING")) {
      val e = intercept[Exception](write(select: _*))
      val causes = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).toSeq
      assert(causes.exists(c => c.getMessage.contains(message) && c.getMessage.contains("LANCE_STREAM_SINK_SCHEMA_MISMATCH")), e)
    }
    assert(dataset("named").versions == versions)
  }

  test("a stream of small batches compacts its fragments unless the table sets auto_compact = false") {
    sql("CREATE TABLE lance.st.small (id BIGINT, k STRING) TBLPROPERTIES ('auto_compact.min_fragments' = '4')")
    sql("CREATE TABLE lance.st.many (id BIGINT, k STRING) TBLPROPERTIES ('auto_compact' = 'false')")
    val input = new Input
    (0 until 8).foreach(i => input.addFile(i * 5 until i * 5 + 5))
    for (t <- Seq("small", "many")) run(input, Files.createTempDirectory(warehouse, "cp"), t)
    assert(ids("small") == (0L until 40L) && ids("many") == (0L until 40L))
    assert(dataset("many").snapshot().fragments.size == 8)
    assert(dataset("small").snapshot().fragments.size < 4)
    val ops = dataset("small").versions.flatMap(v => Transactions.committed(dataset("small"), v)).map(Transactions.operationName)
    assert(ops.count(_ == "Rewrite") == 2 && ops.count(_ == "Append") == 8, ops)
  }

  test("txnAppId / txnVersion: a write the table already holds is skipped; MERGE through the session settings") {
    sql("CREATE TABLE lance.st.idem (id BIGINT, k STRING)")
    def append(version: Long, from: Long): Unit = spark.range(from, from + 5).selectExpr("id", "'a' AS k")
      .writeTo("lance.st.idem").option("txnAppId", "app1").option("txnVersion", version.toString).append()
    append(1, 0)
    append(1, 100) // the same transaction again: skipped
    append(0, 200) // an older one: skipped
    assert(ids("idem") == (0L until 5L))
    append(2, 300)
    assert(ids("idem") == (0L until 5L) ++ (300L until 305L))
    val ds = dataset("idem")
    assert(props("idem", ds.latestVersion)(TxnMarker.VersionKey) == "2" && props("idem", ds.latestVersion)(TxnMarker.KindKey) == "write")
    // Another application is another sequence; df.write (V1 API) takes the same options.
    spark.range(500, 502).selectExpr("id", "'b' AS k").write.format("lance").mode("append")
      .option("txnAppId", "app2").option("txnVersion", "1").insertInto("lance.st.idem")
    assert(ids("idem").size == 12)
    val overwrite = intercept[Exception](spark.range(1).selectExpr("id", "'c' AS k").writeTo("lance.st.idem")
      .option("txnAppId", "app1").overwrite(org.apache.spark.sql.functions.lit(true)))
    assert(overwrite.getMessage.contains("txnVersion") && overwrite.getMessage.contains("txnAppId"), overwrite)
    spark.range(1).selectExpr("id", "'c' AS k").writeTo("lance.st.idem").option("txnAppId", "app1").option("txnVersion", "2")
      .overwrite(org.apache.spark.sql.functions.lit(true))
    assert(ids("idem").size == 12)

    val merge = "MERGE INTO lance.st.idem t USING (SELECT 0L AS id, 'm' AS k) s ON t.id = s.id " +
      "WHEN MATCHED THEN UPDATE SET t.id = t.id + 1000 WHEN NOT MATCHED THEN INSERT *"
    val before = ds.latestVersion
    withSQLConf("spark.sparklance.txnAppId" -> "merger", "spark.sparklance.txnVersion" -> "7") {
      sql(merge)
      sql(merge) // replayed: skipped, or the row would move again
    }
    assert(ids("idem").contains(1000L) && !ids("idem").contains(2000L) && ds.latestVersion == before + 1)
    assert(props("idem", ds.latestVersion)(TxnMarker.AppIdKey) == "merger")
    // A metadata-only DELETE (whole fragments) and TRUNCATE take the settings too.
    withSQLConf("spark.sparklance.txnAppId" -> "cleaner", "spark.sparklance.txnVersion" -> "1") {
      sql("TRUNCATE TABLE lance.st.idem")
      assert(ids("idem").isEmpty)
      sql("INSERT INTO lance.st.idem VALUES (1, 'z')") // the same transaction: skipped as well
      sql("DELETE FROM lance.st.idem WHERE true")
    }
    assert(ids("idem").isEmpty)
    sql("INSERT INTO lance.st.idem VALUES (1, 'z')")
    withSQLConf("spark.sparklance.txnAppId" -> "cleaner", "spark.sparklance.txnVersion" -> "1")(sql("DELETE FROM lance.st.idem WHERE true"))
    assert(ids("idem") == Seq(1L))
    val missing = intercept[Exception](withSQLConf("spark.sparklance.txnAppId" -> "merger")(sql(merge)))
    assert(missing.getMessage.contains("spark.sparklance.txnVersion"), missing)
  }
}
