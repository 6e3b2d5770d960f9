package sparklance.spark

import java.nio.file.Files
import org.apache.spark.sql.{AnalysisException, Row}
import org.apache.spark.sql.catalyst.analysis.TableAlreadyExistsException
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.io.LocalStorage
import sparklance.format.table.Dataset

class LanceCatalogSuite extends AnyFunSuite with LocalSpark {
  private def rows(q: String): Seq[Row] = sql(q).collect().toSeq

  test("namespaces: create, list, drop") {
    sql("CREATE NAMESPACE lance.ns1")
    sql("CREATE NAMESPACE IF NOT EXISTS lance.ns1")
    assert(rows("SHOW NAMESPACES IN lance").map(_.getString(0)).contains("ns1"))
    assert(Files.isDirectory(warehouse.resolve("ns1")))
    sql("CREATE TABLE lance.ns1.t (a INT)")
    intercept[AnalysisException](sql("DROP NAMESPACE lance.ns1"))
    sql("DROP NAMESPACE lance.ns1 CASCADE")
    assert(!Files.exists(warehouse.resolve("ns1")))
  }

  test("create, insert, select every issue-2 type with nulls") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    sql("""CREATE TABLE lance.db.types (b BOOLEAN, i8 TINYINT, i16 SMALLINT, i32 INT, i64 BIGINT NOT NULL,
          f FLOAT, d DOUBLE, s STRING, bin BINARY, dt DATE, ts TIMESTAMP, tsn TIMESTAMP_NTZ, dec DECIMAL(12, 3))""")
    sql("""INSERT INTO lance.db.types VALUES
          (true, 1, 2, 3, 4, 1.5, 2.5, 'x', X'0102', DATE'2020-01-02', TIMESTAMP'2020-01-02 03:04:05.123456',
           TIMESTAMP_NTZ'2021-05-06 07:08:09', 123456789.123),
          (NULL, NULL, NULL, NULL, 5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
          (false, -128, -32768, -2147483648, -9223372036854775808, -0.0, 1e300, '', X'', DATE'1969-12-31',
           TIMESTAMP'1960-01-01 00:00:00', TIMESTAMP_NTZ'1900-01-01 00:00:00', -0.001)""")
    val got = rows("SELECT * FROM lance.db.types ORDER BY i64")
    val expected = rows("""SELECT * FROM VALUES
          (false, CAST(-128 AS TINYINT), CAST(-32768 AS SMALLINT), -2147483648, -9223372036854775808L, CAST(-0.0 AS FLOAT),
           1e300D, '', X'', DATE'1969-12-31', TIMESTAMP'1960-01-01 00:00:00', TIMESTAMP_NTZ'1900-01-01 00:00:00', CAST(-0.001 AS DECIMAL(12,3))),
          (true, CAST(1 AS TINYINT), CAST(2 AS SMALLINT), 3, 4L, CAST(1.5 AS FLOAT), 2.5D, 'x', X'0102', DATE'2020-01-02',
           TIMESTAMP'2020-01-02 03:04:05.123456', TIMESTAMP_NTZ'2021-05-06 07:08:09', CAST(123456789.123 AS DECIMAL(12,3))),
          (CAST(NULL AS BOOLEAN), CAST(NULL AS TINYINT), CAST(NULL AS SMALLINT), CAST(NULL AS INT), 5L, CAST(NULL AS FLOAT),
           CAST(NULL AS DOUBLE), CAST(NULL AS STRING), CAST(NULL AS BINARY), CAST(NULL AS DATE), CAST(NULL AS TIMESTAMP),
           CAST(NULL AS TIMESTAMP_NTZ), CAST(NULL AS DECIMAL(12,3)))
          ORDER BY 5""")
    assert(got.map(_.toSeq.map(normalize)) == expected.map(_.toSeq.map(normalize)))
    assert(rows("SELECT count(*) FROM lance.db.types").head.getLong(0) == 3)
  }

  test("booleans read back bit for bit: every pattern of 8, a ragged tail, nulls, and after deletes") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    // Each run of 8 rows holds the bits of (id DIV 8) % 256, so every byte pattern occurs;
    // 20,003 rows leave a partial byte at the end.
    val values = "SELECT id, CASE WHEN id % 7 = 3 THEN NULL " +
      "ELSE (shiftright((id DIV 8) % 256, CAST(id % 8 AS INT)) & 1) = 1 END AS b FROM range(20003)"
    sql(s"CREATE TABLE lance.db.bools TBLPROPERTIES ('max_rows_per_file' = '6000') AS $values")
    def check(kept: String): Unit = {
      assert(rows("SELECT id, b FROM lance.db.bools ORDER BY id") == rows(s"SELECT * FROM ($values) WHERE $kept ORDER BY id"))
      assert(rows("SELECT count(*) FROM lance.db.bools WHERE b") == rows(s"SELECT count(*) FROM ($values) WHERE b AND $kept"))
    }
    check("true")
    sql("DELETE FROM lance.db.bools WHERE id % 13 = 5")
    check("id % 13 <> 5")
  }

  test("decimals read back exactly, in and beyond the range of a long, and sum like Spark's") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    val big = "9" * 38
    val values = Seq("0", "-1", "1", "9223372036854775807", "-9223372036854775808", "9223372036854775808",
      "-9223372036854775809", "1" + "0" * 18, "-" + "1" + "0" * 18, big, "-" + big, "12345678901234567890123456789", "NULL")
    val rowsSql = values.zipWithIndex.map { case (v, i) => s"($i, CAST($v AS DECIMAL(38, 0)))" }.mkString(", ")
    val source = s"SELECT id, d AS d38, CAST(CASE WHEN length(ltrim('-', CAST(d AS STRING))) <= 35 THEN d / 100 END AS DECIMAL(38, 2)) AS d38s, " +
      "CAST(CASE WHEN length(ltrim('-', CAST(d AS STRING))) <= 20 THEN d / 100 END AS DECIMAL(23, 2)) AS d23, " +
      "CAST(CASE WHEN length(ltrim('-', CAST(d AS STRING))) <= 16 THEN d END AS DECIMAL(18, 0)) AS d18 " +
      s"FROM VALUES $rowsSql AS v(id, d)"
    sql(s"CREATE TABLE lance.db.decimals AS $source")
    assert(rows("SELECT * FROM lance.db.decimals ORDER BY id") == rows(s"$source ORDER BY id"))
    val sums = "SELECT sum(d23), sum(d18), max(d38), min(d38), max(d38s), min(d38s) FROM "
    assert(rows(sums + "lance.db.decimals") == rows(sums + s"($source)"))
  }

  private def normalize(v: Any): Any = v match {
    case b: Array[Byte] => b.toSeq
    case other => other
  }

  test("append, overwrite, CTAS, RTAS, DataFrameWriterV2 and time-ordered versions") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    sql("CREATE TABLE lance.db.w USING lance AS SELECT id, CAST(id AS STRING) AS s FROM range(10)")
    assert(rows("SELECT count(*) FROM lance.db.w").head.getLong(0) == 10)
    sql("INSERT INTO lance.db.w SELECT id, 'more' FROM range(10, 15)")
    assert(rows("SELECT count(*), sum(id) FROM lance.db.w").head == Row(15L, 105L))
    sql("INSERT OVERWRITE lance.db.w SELECT id, 'new' FROM range(3)")
    assert(rows("SELECT * FROM lance.db.w ORDER BY id") == Seq(Row(0L, "new"), Row(1L, "new"), Row(2L, "new")))
    spark.range(100).selectExpr("id", "'df' AS s").writeTo("lance.db.w").append()
    assert(rows("SELECT count(*) FROM lance.db.w").head.getLong(0) == 103)
    spark.range(7).selectExpr("id", "'ow' AS s").writeTo("lance.db.w").overwrite(org.apache.spark.sql.functions.lit(true))
    assert(rows("SELECT count(*) FROM lance.db.w").head.getLong(0) == 7)
    sql("REPLACE TABLE lance.db.w AS SELECT 'x' AS other")
    assert(rows("SELECT * FROM lance.db.w") == Seq(Row("x")))
    spark.range(4).selectExpr("id * 2 AS v").writeTo("lance.db.w2").create()
    assert(rows("SELECT sum(v) FROM lance.db.w2").head.getLong(0) == 12)
    val ds = new Dataset(LocalStorage, warehouse.resolve("db/w.lance").toString)
    assert(ds.versions == (1L to 6L))
    // Fragment ids keep growing across overwrites.
    val ids = ds.snapshot().fragments.map(_.getId)
    assert(ids.forall(_ >= 3))
  }

  test("a replaced table has the properties it was given, not the old table's; INSERT OVERWRITE keeps them") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    sql("CREATE TABLE lance.db.props (id BIGINT) TBLPROPERTIES ('max_rows_per_file' = '10', 'isolation_level' = 'snapshot')")
    def props = rows("SHOW TBLPROPERTIES lance.db.props").map(r => r.getString(0) -> r.getString(1)).toMap
    sql("INSERT OVERWRITE lance.db.props SELECT id FROM range(3)")
    assert(props.get("max_rows_per_file").contains("10") && props.get("isolation_level").contains("snapshot"))
    sql("CREATE OR REPLACE TABLE lance.db.props (id BIGINT, s STRING) TBLPROPERTIES ('data_storage_version' = '2.1')")
    assert(!props.contains("max_rows_per_file") && props.get("isolation_level").contains("serializable"), props)
    assert(props.get("data_storage_version").contains("2.1"))
    sql("REPLACE TABLE lance.db.props TBLPROPERTIES ('max_rows_per_file' = '5') AS SELECT /*+ COALESCE(1) */ id FROM range(12)")
    assert(props.get("max_rows_per_file").contains("5") && props.get("data_storage_version").contains("2.2"), props)
    assert(rows("SELECT count(DISTINCT _fragid) FROM lance.db.props").head.getLong(0) == 3)
  }

  test("a failed CTAS leaves no table and a failed insert leaves the version unchanged") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    intercept[Exception](sql("CREATE TABLE lance.db.bad AS SELECT id, raise_error('boom') AS x FROM range(5)").collect())
    assert(!rows("SHOW TABLES IN lance.db").map(_.getString(1)).contains("bad"))
    sql("CREATE TABLE lance.db.keep (id BIGINT)")
    sql("INSERT INTO lance.db.keep VALUES (1)")
    val ds = new Dataset(LocalStorage, warehouse.resolve("db/keep.lance").toString)
    val before = ds.latestVersion
    intercept[Exception](sql("INSERT INTO lance.db.keep SELECT IF(id = 3, CAST(raise_error('boom') AS BIGINT), id) FROM range(5)").collect())
    assert(ds.latestVersion == before)
    assert(rows("SELECT * FROM lance.db.keep") == Seq(Row(1L)))
  }

  test("metadata columns, column pruning, count pushdown, DESCRIBE and SHOW TABLES") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    sql("CREATE TABLE lance.db.m (id BIGINT, s STRING) TBLPROPERTIES ('max_rows_per_file' = '4', 'optimize_write' = 'false')")
    sql("INSERT INTO lance.db.m SELECT /*+ COALESCE(1) */ id, CAST(id AS STRING) FROM range(10)")
    val addrs = rows("SELECT id, _fragid, _rowaddr FROM lance.db.m ORDER BY id")
    assert(addrs.map(_.getInt(1)).distinct.size == 3)
    addrs.foreach(r => assert(r.getLong(2) == (r.getInt(1).toLong << 32 | (r.getLong(0) % 4))))
    val plan = sql("SELECT count(*) FROM lance.db.m").queryExecution.executedPlan.toString
    assert(plan.contains("LocalTableScan") || plan.contains("LanceCountScan"), plan)
    assert(rows("SELECT s FROM lance.db.m WHERE id = 7") == Seq(Row("7")))
    val props = rows("SHOW TBLPROPERTIES lance.db.m").map(r => r.getString(0) -> r.getString(1)).toMap
    assert(props("data_storage_version") == "2.2" && props("max_rows_per_file") == "4")
    assert(rows("DESCRIBE TABLE lance.db.m").map(_.getString(0)).take(2) == Seq("id", "s"))
    assert(rows("SHOW TABLES IN lance.db").map(_.getString(1)).contains("m"))
  }

  test("user errors are clear and write nothing") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    sql("CREATE TABLE lance.db.e (id INT)")
    intercept[TableAlreadyExistsException](sql("CREATE TABLE lance.db.e (id INT)"))
    val missing = intercept[AnalysisException](sql("SELECT * FROM lance.db.nope"))
    assert(missing.getMessage.contains("nope"))
    val version = intercept[Exception](sql("CREATE TABLE lance.db.v (id INT) TBLPROPERTIES ('data_storage_version' = '9.9')"))
    assert(version.getMessage.contains("9.9"))
    // Free keys are table metadata; sparklance's own namespace takes only its settings.
    val prop = intercept[Exception](sql("CREATE TABLE lance.db.v (id INT) TBLPROPERTIES ('sparklance.colour' = 'red')"))
    assert(prop.getMessage.contains("sparklance.colour"))
    val tpe = intercept[Exception](sql("CREATE TABLE lance.db.v (m VARIANT)"))
    assert(tpe.getMessage.contains("'m'") && tpe.getMessage.contains("VARIANT"), tpe.getMessage)
    val escape = intercept[Exception](sql("CREATE TABLE lance.db.`..` (id INT)"))
    assert(escape.getMessage.contains(".."))
    intercept[Exception](sql("CREATE TABLE lance.db.`a/b` (id INT)"))
    intercept[Exception](sql("CREATE NAMESPACE lance.`../up`"))
    assert(!rows("SHOW TABLES IN lance.db").map(_.getString(1)).contains("v"))
    assert(!Files.exists(warehouse.getParent.resolve("up")))
  }

  test("max_rows_per_file up to Lance's limit writes; above it CREATE fails and writes nothing") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    sql("CREATE TABLE lance.db.big (id BIGINT) TBLPROPERTIES ('max_rows_per_file' = '4294967295')")
    sql("INSERT INTO lance.db.big SELECT /*+ COALESCE(1) */ id FROM range(10)")
    assert(rows("SELECT count(DISTINCT _fragid), count(*) FROM lance.db.big") == Seq(Row(1L, 10L)))
    val e = intercept[InvalidTablePropertyException](
      sql("CREATE TABLE lance.db.huge (id BIGINT) TBLPROPERTIES ('max_rows_per_file' = '4294967296')"))
    Seq("max_rows_per_file", "4294967296", "4294967295").foreach(s => assert(e.getMessage.contains(s), e.getMessage))
    assert(!Files.exists(warehouse.resolve("db/huge.lance")))
  }

  test("a top-level column named like a metadata column is refused at CREATE, CTAS and REPLACE") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    def refused(statement: => Unit, column: String): Unit = {
      val e = intercept[AnalysisException](statement)
      assert(e.getCondition == "LANCE_RESERVED_COLUMN_NAME" && e.getCause.isInstanceOf[ReservedColumnException], e)
      assert(e.getMessage.contains(s"'$column'") && e.getMessage.contains("metadata column"), e.getMessage)
    }
    refused(sql("CREATE TABLE lance.db.r (id BIGINT, _rowid BIGINT)"), "_rowid")
    refused(sql("CREATE TABLE lance.db.r (id BIGINT, _ROWADDR BIGINT)"), "_ROWADDR")
    refused(sql("CREATE TABLE lance.db.r AS SELECT id, CAST(id AS INT) AS _fragid FROM range(3)"), "_fragid")
    refused(spark.range(3).selectExpr("id", "id AS _row_created_at_version").writeTo("lance.db.r").create(),
      "_row_created_at_version")
    assert(!Files.exists(warehouse.resolve("db/r.lance")))
    sql("CREATE TABLE lance.db.r (id BIGINT, s STRUCT<_rowid: BIGINT>)")
    refused(sql("REPLACE TABLE lance.db.r (id BIGINT, _row_last_updated_at_version BIGINT)"), "_row_last_updated_at_version")
    refused(sql("CREATE OR REPLACE TABLE lance.db.r AS SELECT id AS _rowaddr FROM range(3)"), "_rowaddr")
    // A nested field does not hide anything: it is reached through its parent.
    sql("INSERT INTO lance.db.r VALUES (1, named_struct('_rowid', 7))")
    assert(rows("SELECT s._rowid, _rowid FROM lance.db.r") == Seq(Row(7L, 0L)))
  }

  test("DROP TABLE moves the table to the trash, PURGE deletes it") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    sql("CREATE TABLE lance.db.d1 (id INT)")
    sql("CREATE TABLE lance.db.d2 (id INT)")
    sql("DROP TABLE lance.db.d1")
    sql("DROP TABLE lance.db.d2 PURGE")
    assert(!Files.exists(warehouse.resolve("db/d1.lance")) && !Files.exists(warehouse.resolve("db/d2.lance")))
    assert(Files.list(warehouse.resolve(".trash/db")).iterator().hasNext)
    intercept[AnalysisException](sql("DROP TABLE lance.db.d1"))
    sql("DROP TABLE IF EXISTS lance.db.d1")
    assert(sql("CALL lance.system.undrop_table(table => 'db.d1')").collect().head.getLong(1) == 1)
    assert(spark.catalog.tableExists("lance.db.d1") && !Files.list(warehouse.resolve(".trash/db")).iterator().hasNext)
    sql("DROP TABLE lance.db.d1")
    assert(sql("CALL lance.system.empty_trash(older_than => '0 seconds')").collect().head.getSeq[String](0).size == 1)
    assert(!Files.list(warehouse.resolve(".trash/db")).iterator().hasNext)
  }

  test("tables by location: every save mode of format(\"lance\"), reads with versionAsOf and tag, SQL and DML on lance.`path`") {
    val path = warehouse.resolve("by-location/t.lance").toString
    val session = spark
    import session.implicits._
    def saved(mode: String, rows: Seq[Long]): Unit = rows.toDF("id").write.format("lance").mode(mode).save(path)
    def read(options: (String, String)*): Seq[Long] =
      spark.read.format("lance").options(options.toMap).load(path).as[Long].collect().toSeq.sorted
    val missing = intercept[AnalysisException](spark.read.format("lance").load(path))
    assert(missing.getCondition == "PATH_NOT_FOUND", missing.getMessage)
    saved("errorifexists", Seq(1, 2))
    assert(intercept[AnalysisException](saved("errorifexists", Seq(9))).getCondition == "PATH_ALREADY_EXISTS")
    saved("ignore", Seq(9))
    saved("append", Seq(3))
    sql(s"CALL lance.system.create_tag(table => '`$path`', tag => 'two', version => 2)")
    saved("overwrite", Seq(7, 8))
    assert(read() == Seq(7, 8) && read("versionAsOf" -> "1") == Seq(1, 2) && read("tag" -> "two") == Seq(1, 2, 3))
    assert(new Dataset(LocalStorage, path).versions == Seq(1L, 2L, 3L))
    sql(s"DELETE FROM lance.`$path` WHERE id = 7")
    sql(s"UPDATE lance.`$path` SET id = id + 1")
    Seq(9L, 10L).toDF("id").createOrReplaceTempView("by_location_src")
    sql(s"MERGE INTO lance.`$path` t USING by_location_src s ON t.id = s.id WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT *")
    assert(rows(s"SELECT id FROM lance.`$path`").map(_.getLong(0)).sorted == Seq(10L))
    assert(rows(s"SELECT count(*) FROM lance.`$path`.history").head.getLong(0) == 6)
  }

  test("CREATE TABLE USING another format is refused in a Lance catalog; saveAsTable without a format makes a Lance table") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.db")
    for (provider <- Seq("delta", "csv")) {
      val e = intercept[Exception](sql(s"CREATE TABLE lance.db.using_other (id INT) USING $provider"))
      assert(e.getMessage.contains(s"USING $provider: catalog lance makes Lance tables only"), e.getMessage)
      assert(!spark.catalog.tableExists("lance.db.using_other"))
    }
    sql("CREATE TABLE lance.db.using_lance (id INT) USING lance")
    assert(spark.catalog.tableExists("lance.db.using_lance"))
    // Spark's writers name the session's default source (parquet) when given no format: the user
    // asked for none, so the table is Lance's.
    spark.range(5).write.saveAsTable("lance.db.saved")
    assert(rows("SELECT sum(id) FROM lance.db.saved").head.getLong(0) == 10)
    assert(new Dataset(LocalStorage, warehouse.resolve("db/saved.lance").toString).snapshot().countRows(LocalStorage) == 5)
  }

  test("SHOW CREATE TABLE replays: NOT NULL, comments and properties kept, the version not printed; LOCATION elsewhere refused") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.sct")
    sql("""CREATE TABLE lance.sct.t (id BIGINT NOT NULL, s STRING COMMENT 'a note', d DECIMAL(10, 2))
          TBLPROPERTIES ('enable_stable_row_ids' = 'true', 'max_rows_per_file' = '1000', 'owner.team' = 'x')""")
    sql("INSERT INTO lance.sct.t VALUES (1, 'a', 1.50)")
    val ddl = sql("SHOW CREATE TABLE lance.sct.t").collect().head.getString(0)
    assert(!ddl.contains("'version'"), ddl)
    val before = spark.table("lance.sct.t").schema
    val props = sql("SHOW TBLPROPERTIES lance.sct.t").collect().map(r => r.getString(0) -> r.getString(1)).toMap
    sql("DROP TABLE lance.sct.t PURGE")
    sql(ddl)
    assert(spark.table("lance.sct.t").schema == before && !before("id").nullable)
    assert(sql("SHOW TBLPROPERTIES lance.sct.t").collect().map(r => r.getString(0) -> r.getString(1)).toMap == props)
    val elsewhere = intercept[Exception](sql(s"CREATE TABLE lance.sct.u (id INT) LOCATION '${warehouse.resolve("elsewhere")}'"))
    assert(elsewhere.getMessage.contains("Create the table by its location instead"), elsewhere.getMessage)
  }
}
