package sparklance.spark

import java.nio.file.Files
import org.apache.spark.sql.{AnalysisException, Row}
import org.apache.spark.sql.connector.catalog.Identifier
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.Pylance
import sparklance.format.table.Dataset

/** Column DEFAULT values: kept in the Lance field metadata, applied by Spark's analyzer, written into existing rows by ADD COLUMN. */
class ColumnDefaultsSuite extends AnyFunSuite with LocalSpark {
  private def dataset(table: String): Dataset = {
    val catalog = spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog]
    new Dataset(catalog.storage, catalog.tablePath(Identifier.of(Array("dflt"), table)))
  }
  private def rows(q: String) = sql(q).collect().toSeq
  private def metadata(table: String, column: String) = dataset(table).snapshot().schema.fields.find(_.name == column).get.metadata

  private def pylance(table: String, code: String): String = {
    val script = Files.createTempFile("defaults", ".py")
    Files.writeString(script, "import sys, lance\nds = lance.dataset(sys.argv[1])\n" + code)
    Pylance.run(script, dataset(table).path).trim.linesIterator.toSeq.last
  }

  private def create(name: String, columns: String): Unit = {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.dflt")
    sql(s"CREATE TABLE lance.dflt.$name ($columns)")
  }

  test("CREATE TABLE keeps defaults in the field metadata; INSERT with a column list, DEFAULT in VALUES, UPDATE and MERGE apply them") {
    create("t", "id BIGINT NOT NULL, qty INT DEFAULT 5, tag STRING DEFAULT 'new', day DATE DEFAULT DATE'2026-01-02', note STRING")
    assert(metadata("t", "qty") == Map(ColumnDefaults.CurrentKey -> "5", ColumnDefaults.ExistsKey -> "5"))
    assert(metadata("t", "tag") == Map(ColumnDefaults.CurrentKey -> "'new'", ColumnDefaults.ExistsKey -> "'new'"))
    assert(!metadata("t", "note").contains(ColumnDefaults.CurrentKey))
    sql("INSERT INTO lance.dflt.t (id) VALUES (1)")
    sql("INSERT INTO lance.dflt.t VALUES (2, DEFAULT, 'x', DEFAULT, 'n')")
    sql("INSERT INTO lance.dflt.t (id, qty, note) VALUES (3, 30, 'm')")
    assert(rows("SELECT id, qty, tag, CAST(day AS STRING), note FROM lance.dflt.t ORDER BY id") == Seq(
      Row(1L, 5, "new", "2026-01-02", null), Row(2L, 5, "x", "2026-01-02", "n"), Row(3L, 30, "new", "2026-01-02", "m")))
    sql("UPDATE lance.dflt.t SET qty = DEFAULT, tag = DEFAULT WHERE id = 3")
    assert(rows("SELECT qty, tag FROM lance.dflt.t WHERE id = 3") == Seq(Row(5, "new")))
    sql("CREATE OR REPLACE TEMPORARY VIEW src AS SELECT * FROM VALUES (2L, 'upd'), (4L, 'ins') AS s(id, note)")
    sql("""MERGE INTO lance.dflt.t t USING src s ON t.id = s.id
          |WHEN MATCHED THEN UPDATE SET note = s.note, qty = DEFAULT
          |WHEN NOT MATCHED THEN INSERT (id, note) VALUES (s.id, s.note)""".stripMargin)
    assert(rows("SELECT id, qty, tag, note FROM lance.dflt.t WHERE id IN (2, 4) ORDER BY id") ==
      Seq(Row(2L, 5, "x", "upd"), Row(4L, 5, "new", "ins")))
    assert(rows("SHOW CREATE TABLE lance.dflt.t").head.getString(0).contains("qty INT DEFAULT 5"))
    assert(pylance("t", """t = ds.to_table().sort_by("id")
      |print(t.column("qty").to_pylist(), ds.schema.field("qty").metadata[b"spark.default.current"].decode())""".stripMargin) ==
      "[5, 5, 5, 5] 5")
  }

  test("ADD COLUMN ... DEFAULT writes the value into existing rows as column-only files; pylance reads it") {
    create("add", "id BIGINT NOT NULL, v STRING")
    sql("INSERT INTO lance.dflt.add VALUES (1, 'a'), (2, 'b')")
    sql("INSERT INTO lance.dflt.add VALUES (3, 'c')")
    sql("DELETE FROM lance.dflt.add WHERE id = 2")
    val before = dataset("add").snapshot().fragments.map(f => f.getId -> f.getFilesList.size).toMap
    sql("ALTER TABLE lance.dflt.add ADD COLUMN qty INT DEFAULT 7")
    // Rows a concurrent writer adds without the column would read NULL: the Merge makes them retry.
    val merge = sparklance.format.commit.Transactions.committed(dataset("add"), dataset("add").latestVersion).get
    assert(merge.hasMerge && !merge.getMerge.getPreservesNullability)
    sql("ALTER TABLE lance.dflt.add ADD COLUMNS (day DATE DEFAULT current_date(), none STRING DEFAULT NULL)")
    val today = rows("SELECT CAST(current_date() AS STRING)").head.getString(0)
    assert(metadata("add", "day") == Map(ColumnDefaults.CurrentKey -> "current_date()", ColumnDefaults.ExistsKey -> s"DATE '$today'"))
    // Each fragment got one file per statement that wrote values (none for DEFAULT NULL alone); old files stay.
    val after = dataset("add").snapshot().fragments.map(f => f.getId -> f.getFilesList.size).toMap
    assert(after == before.map { case (id, n) => id -> (n + 2) })
    assert(rows("SELECT id, qty, CAST(day AS STRING), none FROM lance.dflt.add ORDER BY id") ==
      Seq(Row(1L, 7, today, null), Row(3L, 7, today, null)))
    sql("INSERT INTO lance.dflt.add (id, v) VALUES (4, 'd')")
    assert(rows("SELECT qty, CAST(day AS STRING) FROM lance.dflt.add WHERE id = 4") == Seq(Row(7, today)))
    assert(pylance("add", """t = ds.to_table().sort_by("id")
      |print(t.column("qty").to_pylist(), [str(d) for d in t.column("day").to_pylist()])""".stripMargin) ==
      s"[7, 7, 7] ['$today', '$today', '$today']")
  }

  test("ADD COLUMN ... NOT NULL DEFAULT: every existing row gets the value, so the column may be NOT NULL") {
    create("nn", "id BIGINT NOT NULL")
    sql("INSERT INTO lance.dflt.nn VALUES (1), (2)")
    sql("ALTER TABLE lance.dflt.nn ADD COLUMN qty INT NOT NULL DEFAULT 3")
    assert(!spark.table("lance.dflt.nn").schema("qty").nullable)
    sql("INSERT INTO lance.dflt.nn (id) VALUES (3)")
    assert(rows("SELECT id, qty FROM lance.dflt.nn ORDER BY id") == Seq(Row(1L, 3), Row(2L, 3), Row(3L, 3)))
    assert(pylance("nn", """print(ds.schema.field("qty").nullable, sorted(ds.to_table().column("qty").to_pylist()))""") ==
      "False [3, 3, 3]")
    // Without a value for the existing rows NOT NULL stays refused, naming why.
    val version = dataset("nn").latestVersion
    val e = intercept[Exception](sql("ALTER TABLE lance.dflt.nn ADD COLUMN z INT NOT NULL"))
    assert(e.getMessage.contains("must be nullable") && e.getMessage.contains("DEFAULT"), e.getMessage)
    assert(dataset("nn").latestVersion == version)
  }

  test("an INSERT planned before ADD COLUMN ... DEFAULT fails with a retryable conflict instead of adding rows reading NULL") {
    spark.udf.register("gate", org.apache.spark.sql.functions.udf((_: Long) => { Gate.pass(); true }))
    create("race", "id BIGINT NOT NULL")
    sql("INSERT INTO lance.dflt.race VALUES (1)")
    val insert = "INSERT INTO lance.dflt.race (id) SELECT /*+ COALESCE(1) */ id FROM range(100, 101) WHERE gate(id)"
    val conflict = Interleaving.run(spark, insert, "ALTER TABLE lance.dflt.race ADD COLUMN qty INT DEFAULT 7")
    assert(conflict.exists(m => m.contains("Merge") && m.contains("nullability")), conflict)
    assert(rows("SELECT id, qty FROM lance.dflt.race") == Seq(Row(1L, 7)))
    // Run again, it is planned on the new schema and gets the default.
    Gate.open()
    sql(insert)
    assert(rows("SELECT id, qty FROM lance.dflt.race ORDER BY id") == Seq(Row(1L, 7), Row(100L, 7)))
  }

  test("ALTER COLUMN SET / DROP DEFAULT change the metadata only; existing rows keep their values") {
    create("alt", "id BIGINT NOT NULL, qty INT")
    sql("INSERT INTO lance.dflt.alt VALUES (1, NULL)")
    val files = dataset("alt").snapshot().fragments.map(_.getFilesList)
    sql("ALTER TABLE lance.dflt.alt ALTER COLUMN qty SET DEFAULT 40 + 2")
    assert(metadata("alt", "qty") == Map(ColumnDefaults.CurrentKey -> "40 + 2", ColumnDefaults.ExistsKey -> "NULL"))
    assert(dataset("alt").snapshot().fragments.map(_.getFilesList) == files)
    sql("INSERT INTO lance.dflt.alt (id) VALUES (2)")
    sql("ALTER TABLE lance.dflt.alt ALTER COLUMN qty SET DEFAULT 9")
    sql("INSERT INTO lance.dflt.alt (id) VALUES (3)")
    sql("ALTER TABLE lance.dflt.alt ALTER COLUMN qty DROP DEFAULT")
    assert(!metadata("alt", "qty").contains(ColumnDefaults.CurrentKey))
    sql("INSERT INTO lance.dflt.alt (id) VALUES (4)")
    assert(rows("SELECT id, qty FROM lance.dflt.alt ORDER BY id") == Seq(Row(1L, null), Row(2L, 42), Row(3L, 9), Row(4L, null)))
    // A column added with a default keeps the value its existing rows got after SET and DROP.
    sql("ALTER TABLE lance.dflt.alt ADD COLUMN k INT DEFAULT 1")
    sql("ALTER TABLE lance.dflt.alt ALTER COLUMN k SET DEFAULT 2")
    assert(metadata("alt", "k") == Map(ColumnDefaults.CurrentKey -> "2", ColumnDefaults.ExistsKey -> "1"))
  }

  test("a default that is not constant or not of the column's type is refused, writing nothing") {
    create("bad", "id BIGINT NOT NULL, s STRUCT<a: INT>")
    sql("INSERT INTO lance.dflt.bad VALUES (1, NULL)")
    val version = dataset("bad").latestVersion
    def refused(statement: String): String = intercept[Exception](sql(statement)).getMessage
    val bad = Seq(
      "CREATE TABLE lance.dflt.bad2 (id BIGINT, r DOUBLE DEFAULT rand())",
      "CREATE TABLE lance.dflt.bad2 (id BIGINT, d DATE DEFAULT 'not a date')",
      "ALTER TABLE lance.dflt.bad ADD COLUMN r DOUBLE DEFAULT rand()",
      "ALTER TABLE lance.dflt.bad ADD COLUMN n INT DEFAULT 'abc'",
      "ALTER TABLE lance.dflt.bad ALTER COLUMN id SET DEFAULT uuid()",
      "ALTER TABLE lance.dflt.bad ALTER COLUMN id SET DEFAULT CAST(rand() * 10 AS BIGINT)",
      "ALTER TABLE lance.dflt.bad ADD COLUMN s.b INT DEFAULT 1")
    val messages = bad.map(refused)
    messages.foreach(m => info(m.linesIterator.next()))
    assert(messages.init.forall(_.contains("DEFAULT")), messages)
    assert(messages.last.contains("top-level columns only"))
    assert(dataset("bad").latestVersion == version)
    assert(!dataset("bad2").exists)
  }
}
