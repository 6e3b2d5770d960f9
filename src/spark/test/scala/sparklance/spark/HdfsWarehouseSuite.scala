package sparklance.spark

import java.nio.file.Files
import org.apache.hadoop.hdfs.MiniDFSCluster
import org.apache.spark.sql.{Row, SparkSession}
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.io.LocalStorage
import sparklance.format.table.Dataset
import sparklance.hadoop.{HadoopStorage, MiniHdfs}

/** The catalog over a warehouse on a real (in-process) HDFS: DDL, writes, DML and reads. */
class HdfsWarehouseSuite extends AnyFunSuite with BeforeAndAfterAll {
  private var cluster: MiniDFSCluster = _
  private var spark: SparkSession = _
  private val baseDir = Files.createTempDirectory("sparklance-hdfs-wh")
  private var warehouse: String = _

  override def beforeAll(): Unit = {
    super.beforeAll()
    cluster = MiniHdfs.start(baseDir)
    warehouse = s"${cluster.getURI}/warehouse"
    spark = SparkSession.builder().master("local[2]").appName("hdfs-warehouse")
      .config("spark.sql.shuffle.partitions", "2")
      .config("spark.hadoop.dfs.replication", "1")
      .config("spark.sql.catalog.hl", classOf[LanceCatalog].getName)
      .config("spark.sql.catalog.hl.warehouse", warehouse)
      .getOrCreate()
  }

  override def afterAll(): Unit = {
    try { if (spark != null) spark.stop() } finally {
      try if (cluster != null) cluster.shutdown(true) finally LocalStorage.deleteRecursively(baseDir.toString)
      super.afterAll()
    }
  }

  test("create, insert, update, merge, delete and read a table stored on HDFS") {
    spark.sql("CREATE NAMESPACE hl.db")
    spark.sql("CREATE TABLE hl.db.t (id BIGINT NOT NULL, s STRING) TBLPROPERTIES ('max_rows_per_file' = '30')")
    spark.sql("INSERT INTO hl.db.t SELECT id, CAST(id AS STRING) FROM range(100)")
    spark.sql("UPDATE hl.db.t SET s = 'updated' WHERE id % 10 = 0")
    spark.createDataFrame(Seq((5L, "merged"), (500L, "new"))).toDF("id", "s").createOrReplaceTempView("src")
    spark.sql("MERGE INTO hl.db.t t USING src s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    spark.sql("DELETE FROM hl.db.t WHERE id BETWEEN 90 AND 99")
    val rows = spark.sql("SELECT * FROM hl.db.t ORDER BY id").collect().toSeq
    assert(rows.size == 91)
    assert(rows.head == Row(0L, "updated") && rows(5) == Row(5L, "merged") && rows.last == Row(500L, "new"))
    assert(spark.sql("SELECT count(*) FROM hl.db.t WHERE s = 'updated'").head().getLong(0) == 9)
    val ds = new Dataset(HadoopStorage.fromConf(Map("dfs.replication" -> "1")), s"$warehouse/db/t.lance")
    assert(ds.versions == (1L to 5L))
    assert(ds.snapshot().countRows(ds.storage) == 91)
    assert(spark.sql("SHOW TABLES IN hl.db").collect().map(_.getString(1)).toSeq == Seq("t"))
    spark.sql("DROP TABLE hl.db.t PURGE")
    assert(!ds.exists)
  }
}
