package sparklance.spark

import java.nio.file.Files
import org.apache.spark.sql.{AnalysisException, Row}
import org.apache.spark.sql.connector.catalog.Identifier
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.{Pylance, SchemaChangeException}
import sparklance.format.commit.Transactions
import sparklance.format.table.Dataset

/** ALTER TABLE: one commit per statement, as pylance records it, read back by pylance. */
class AlterTableSuite extends AnyFunSuite with LocalSpark {
  private def dataset(table: String): Dataset = {
    val catalog = spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog]
    new Dataset(catalog.storage, catalog.tablePath(Identifier.of(Array("alt"), table)))
  }
  private def rows(q: String) = sql(q).collect().toSeq
  private def txn(table: String) = Transactions.committed(dataset(table), dataset(table).latestVersion).get
  private def causes(e: Throwable) = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).toSeq

  /** What pylance reads of the table: its schema (name: type, nullable) and its rows, as printed by Python. */
  private def pylance(table: String, code: String): String = {
    val script = Files.createTempFile("alter", ".py")
    Files.writeString(script, "import sys, lance\nds = lance.dataset(sys.argv[1])\n" + code)
    Pylance.run(script, dataset(table).path).trim.linesIterator.toSeq.last
  }

  private def newTable(name: String, props: String = ""): Unit = {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.alt")
    sql(s"CREATE TABLE lance.alt.$name (id BIGINT NOT NULL, s STRUCT<x: INT, y: STRING>, v STRING) $props")
    sql(s"INSERT INTO lance.alt.$name VALUES (1, named_struct('x', 10, 'y', 'a'), 'one'), (2, NULL, NULL)")
  }

  test("ADD COLUMN: metadata only, NULL in existing rows, comments and positions, nested fields; pylance reads it") {
    newTable("add", "TBLPROPERTIES ('enable_stable_row_ids' = 'true')")
    val files = dataset("add").snapshot().fragments.map(_.getFilesList)
    val before = dataset("add").latestVersion
    sql("ALTER TABLE lance.alt.add ADD COLUMN score DOUBLE COMMENT 'model score'")
    assert(dataset("add").latestVersion == before + 1)
    val merge = txn("add")
    assert(merge.hasMerge && merge.getMerge.getPreservesNullability)
    assert(dataset("add").snapshot().fragments.map(_.getFilesList) == files, "no data written")
    sql("ALTER TABLE lance.alt.add ADD COLUMNS (first_col INT FIRST, tags ARRAY<STRING> AFTER id)")
    assert(rows("SELECT operation_parameters['columns_added'] FROM lance.alt.add.history ORDER BY version DESC LIMIT 1")
      .head.getString(0) == "first_col,tags,tags.item")
    sql("ALTER TABLE lance.alt.add ADD COLUMN s.z BIGINT")
    assert(spark.table("lance.alt.add").schema.fieldNames.toSeq == Seq("first_col", "id", "tags", "s", "v", "score"))
    assert(spark.table("lance.alt.add").schema("score").getComment().contains("model score"))
    assert(rows("SELECT id, first_col, tags, s.z, score FROM lance.alt.add ORDER BY id") ==
      Seq(Row(1L, null, null, null, null), Row(2L, null, null, null, null)))
    // The whole struct too: its files lack the new child, which reads NULL beside the stored ones.
    assert(rows("SELECT id, s FROM lance.alt.add ORDER BY id") == Seq(Row(1L, Row(10, "a", null)), Row(2L, null)))
    assert(rows("SELECT id FROM lance.alt.add WHERE s.x = 10 AND s.z IS NULL") == Seq(Row(1L)))
    // New rows carry the new columns; lineage of the old rows is untouched by a metadata-only add.
    sql("INSERT INTO lance.alt.add (id, s, v, score, first_col, tags) VALUES (3, named_struct('x', 30, 'y', 'c', 'z', 7L), 'three', 0.5, 9, array('t'))")
    assert(rows("SELECT id, _row_last_updated_at_version FROM lance.alt.add WHERE id < 3 ORDER BY id") == Seq(Row(1L, 2L), Row(2L, 2L)))
    assert(pylance("add",
      """t = ds.to_table().sort_by("id")
        |print([f"{f.name}:{f.type}" for f in t.schema], t.column("score").to_pylist(), t.column("s").to_pylist()[2],
        |      t.schema.field("score").metadata)""".stripMargin) ==
      "['first_col:int32', 'id:int64', 'tags:list<item: string>', 's:struct<x: int32, y: string, z: int64>', 'v:string', " +
        "'score:double'] [None, None, 0.5] {'x': 30, 'y': 'c', 'z': 7} {b'comment': b'model score'}")
  }

  test("DROP, RENAME (also nested), nullability and comments are Projects; pylance reads the result") {
    newTable("proj")
    sql("ALTER TABLE lance.alt.proj RENAME COLUMN s.y TO why")
    sql("ALTER TABLE lance.alt.proj RENAME COLUMN v TO label")
    assert(txn("proj").hasProject && txn("proj").getProject.getPreservesNullability)
    sql("ALTER TABLE lance.alt.proj ALTER COLUMN id DROP NOT NULL")
    sql("ALTER TABLE lance.alt.proj ALTER COLUMN label COMMENT 'a label'")
    sql("ALTER TABLE lance.alt.proj DROP COLUMN s.x")
    assert(rows("SELECT id, s, label FROM lance.alt.proj ORDER BY id") == Seq(Row(1L, Row("a"), "one"), Row(2L, null, null)))
    assert(spark.table("lance.alt.proj").schema("id").nullable)
    sql("ALTER TABLE lance.alt.proj DROP COLUMN IF EXISTS nothing_here")
    sql("ALTER TABLE lance.alt.proj DROP COLUMN s")
    val history = rows("SELECT operation, operation_parameters FROM lance.alt.proj.history ORDER BY version").map(r =>
      r.getString(0) -> r.getMap[String, String](1).filter(_._1.startsWith("columns_")).toMap)
    assert(history.exists(_ == ("Project" -> Map("columns_renamed" -> "s.y->s.why"))))
    assert(history.exists(_ == ("Project" -> Map("columns_renamed" -> "v->label"))))
    assert(history.last == ("Project" -> Map("columns_dropped" -> "s,s.why")))
    assert(pylance("proj", """t = ds.to_table().sort_by("id")
        |print(t.schema.names, t.schema.field("id").nullable, t.column("label").to_pylist())""".stripMargin) ==
      "['id', 'label'] True ['one', None]")
  }

  test("SET NOT NULL is checked against the data; the commit asks concurrent writers to retry") {
    // Through the catalog API, as a program or another engine would; ALTER COLUMN ... SET NOT NULL
    // (with the session extension) and CALL system.set_not_null come here too.
    newTable("nn")
    val catalog = spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog]
    val ident = Identifier.of(Array("alt"), "nn")
    def setNotNull() = catalog.alterTable(ident, org.apache.spark.sql.connector.catalog.TableChange.updateColumnNullability(Array("v"), false))
    val before = dataset("nn").latestVersion
    val e = intercept[AnalysisException](setNotNull())
    assert(e.getCondition == "LANCE_SCHEMA_CHANGE_REFUSED" && e.getCause.isInstanceOf[SchemaChangeException], e)
    assert(e.getMessage.contains("1 NULL value") && e.getMessage.contains("'v'"), e.getMessage)
    assert(dataset("nn").latestVersion == before)
    sql("UPDATE lance.alt.nn SET v = 'two' WHERE id = 2")
    setNotNull()
    assert(txn("nn").hasProject && !txn("nn").getProject.getPreservesNullability)
    assert(!spark.table("lance.alt.nn").schema("v").nullable)
    assert(pylance("nn", "print(ds.schema.field('v').nullable)") == "False")
  }

  test("ALTER COLUMN ... SET NOT NULL and CALL set_not_null in SQL: the session extension's rule, as this Spark plans it") {
    // The rule matches the plan Spark's parser and analyzer make of the statement, which can change
    // between Spark versions: this suite runs on each Spark sparklance supports.
    newTable("nnsql")
    val before = dataset("nnsql").latestVersion
    val e = intercept[AnalysisException](sql("ALTER TABLE lance.alt.nnsql ALTER COLUMN v SET NOT NULL"))
    assert(e.getCondition == "LANCE_SCHEMA_CHANGE_REFUSED" && e.getMessage.contains("'v'"), e.getMessage)
    val call = intercept[AnalysisException](sql("CALL lance.system.set_not_null(table => 'alt.nnsql', column => 's')"))
    assert(call.getCondition == "LANCE_SCHEMA_CHANGE_REFUSED" && call.getMessage.contains("'s'"), call.getMessage)
    assert(dataset("nnsql").latestVersion == before)
    sql("UPDATE lance.alt.nnsql SET v = 'two', s = named_struct('x', 20, 'y', 'b') WHERE id = 2")
    sql("ALTER TABLE lance.alt.nnsql ALTER COLUMN v SET NOT NULL")
    sql("CALL lance.system.set_not_null(table => 'alt.nnsql', column => 's')")
    assert(dataset("nnsql").latestVersion == before + 3)
    val schema = spark.table("lance.alt.nnsql").schema
    assert(!schema("v").nullable && !schema("s").nullable && schema("id").nullable == false)
    assert(pylance("nnsql", "print(ds.schema.field('v').nullable, ds.schema.field('s').nullable)") == "False False")
  }

  test("SET and UNSET TBLPROPERTIES: settings, Lance config and user metadata, one UpdateConfig each") {
    newTable("props")
    sql("ALTER TABLE lance.alt.props SET TBLPROPERTIES ('max_rows_per_file' = '2', 'lance.compaction.target_rows_per_fragment' = '50', " +
      "'owner.team' = 'search')")
    assert(txn("props").hasUpdateConfig)
    val snap = dataset("props").snapshot()
    assert(snap.config("sparklance.max_rows_per_file") == "2" && snap.config("lance.compaction.target_rows_per_fragment") == "50")
    assert(snap.tableMetadata == Map("owner.team" -> "search"))
    sql("INSERT INTO lance.alt.props SELECT id, NULL, 'x' FROM range(10, 15)")
    assert(dataset("props").snapshot().fragments.last.getPhysicalRows <= 2, "the new max_rows_per_file applies")
    val shown = rows("SHOW TBLPROPERTIES lance.alt.props").map(r => r.getString(0) -> r.getString(1)).toMap
    assert(shown("max_rows_per_file") == "2" && shown("owner.team") == "search")
    sql("ALTER TABLE lance.alt.props UNSET TBLPROPERTIES ('max_rows_per_file', 'owner.team')")
    assert(!dataset("props").snapshot().config.contains("sparklance.max_rows_per_file") && dataset("props").snapshot().tableMetadata.isEmpty)
    assert(pylance("props", "print(ds.config().get('lance.compaction.target_rows_per_fragment'), dict(ds.metadata))") == "50 {}")
    for (fixed <- Seq("data_storage_version", "enable_stable_row_ids")) {
      val e = intercept[Exception](sql(s"ALTER TABLE lance.alt.props SET TBLPROPERTIES ('$fixed' = '2.1')"))
      assert(causes(e).exists(_.getMessage.contains(fixed)), e.getMessage)
    }
    intercept[Exception](sql("ALTER TABLE lance.alt.props SET TBLPROPERTIES ('max_rows_per_file' = '-1')"))
  }

  test("ALTER COLUMN TYPE widens: each fragment gets a file with only the new column, under a new field id") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.alt")
    sql("CREATE TABLE lance.alt.wide (id INT, f FLOAT, d DECIMAL(10, 2), s STRING) " +
      "TBLPROPERTIES ('enable_stable_row_ids' = 'true', 'max_rows_per_file' = '4', 'optimize_write' = 'false')")
    sql("INSERT INTO lance.alt.wide VALUES (1, 1.5, 10.25, 'a'), (2, NULL, NULL, 'b'), (2147483647, 3.25, 99999999.99, 'c'), " +
      "(4, 4.5, -1.01, 'd'), (5, 5.5, 5.55, 'e')")
    sql("DELETE FROM lance.alt.wide WHERE id = 4")
    val before = dataset("wide").snapshot()
    val expected = rows("SELECT id, f, d, s FROM lance.alt.wide ORDER BY id").map(r =>
      Row(r.get(0).asInstanceOf[Integer].longValue, Option(r.get(1)).map(_.asInstanceOf[Float].toDouble).orNull,
        Option(r.getDecimal(2)).map(_.setScale(4)).orNull, r.get(3)))
    sql("ALTER TABLE lance.alt.wide ALTER COLUMN id TYPE BIGINT")
    sql("ALTER TABLE lance.alt.wide ALTER COLUMN f TYPE DOUBLE")
    sql("ALTER TABLE lance.alt.wide ALTER COLUMN d TYPE DECIMAL(14, 4)")
    val merge = txn("wide")
    assert(merge.hasMerge && !merge.getMerge.getPreservesNullability, "concurrent writers of old values must retry")
    assert(rows("SELECT operation_parameters['columns_retyped'] FROM lance.alt.wide.history ORDER BY version DESC LIMIT 1")
      .head.getString(0) == "d")
    val after = dataset("wide").snapshot()
    assert(after.schema.fields.map(_.name) == Seq("id", "f", "d", "s"))
    assert(after.schema.field("d").get.id > before.schema.maxFieldId + 1)
    assert(after.fragments.map(_.getFilesCount) == before.fragments.map(_.getFilesCount + 3))
    assert(spark.table("lance.alt.wide").schema.map(_.dataType.sql) == Seq("BIGINT", "DOUBLE", "DECIMAL(14,4)", "STRING"))
    assert(rows("SELECT id, f, d, s FROM lance.alt.wide ORDER BY id") == expected)
    assert(rows("SELECT DISTINCT _row_last_updated_at_version FROM lance.alt.wide").map(_.getLong(0)) == Seq(after.version))
    // New rows take the new types; compaction folds the files together.
    sql("INSERT INTO lance.alt.wide VALUES (9999999999, 0.1, 1.2345, 'z')")
    sql("CALL lance.system.compact(table => 'alt.wide')")
    assert(pylance("wide", """t = ds.to_table().sort_by("id")
        |print([str(f.type) for f in t.schema], t.column("id").to_pylist()[-1], str(t.column("d").to_pylist()[0]))""".stripMargin) ==
      "['int64', 'double', 'decimal128(14, 4)', 'string'] 9999999999 10.2500")
    // (Spark itself refuses narrowing changes before they reach the catalog.)
    for ((change, why) <- Seq("id TYPE DOUBLE" -> "change meaning", "id TYPE DECIMAL(20, 0)" -> "change meaning")) {
      val e = intercept[Exception](sql(s"ALTER TABLE lance.alt.wide ALTER COLUMN $change"))
      assert(causes(e).exists(_.getMessage.contains(why)), s"$change: ${causes(e).map(_.getMessage).mkString(" / ")}")
    }
  }

  test("SET TBLPROPERTIES makes a list column a vector; writes of data tagged as vectors of another dimension are refused") {
    import org.apache.spark.sql.types.{MetadataBuilder, StructType}
    sql("CREATE NAMESPACE IF NOT EXISTS lance.alt")
    sql("CREATE TABLE lance.alt.vec (id BIGINT, emb ARRAY<FLOAT>, tags ARRAY<DOUBLE>)")
    sql("INSERT INTO lance.alt.vec VALUES (1, array(1, 2), array(1)), (2, array(3, 4, 5), NULL), (3, NULL, NULL)")
    val setDim = "ALTER TABLE lance.alt.vec SET TBLPROPERTIES ('emb.arrow.fixed-size-list.size' = '2')"
    val before = dataset("vec").latestVersion
    val refused = intercept[Exception](sql(setDim))
    assert(causes(refused).exists(e => Seq("1 row(s)", "_rowaddr 1 ", "where id = 2", "an array of 3 items")
      .forall(e.getMessage.contains)), causes(refused).map(_.getMessage).mkString(" / "))
    assert(dataset("vec").latestVersion == before)
    sql("DELETE FROM lance.alt.vec WHERE id = 2")
    sql(setDim)
    assert(txn("vec").hasMerge && dataset("vec").latestVersion == before + 2)
    assert(spark.table("lance.alt.vec").schema("emb").metadata.getLong(SparkTypes.VectorDimension) == 2)
    assert(rows("SELECT id, emb FROM lance.alt.vec ORDER BY id") == Seq(Row(1L, Seq(1.0f, 2.0f)), Row(3L, null)))
    assert(pylance("vec", "print(ds.schema.field('emb').type, ds.validate())") == "fixed_size_list<item: float>[2] None")
    // Data tagged as vectors: its dimension must be the column's, and a list column takes none.
    def tagged(column: String, key: String, dim: Long) = {
      val schema = StructType.fromDDL("id BIGINT, emb ARRAY<FLOAT>, tags ARRAY<DOUBLE>")
      val df = spark.createDataFrame(java.util.List.of(Row(5L, Seq(1.0f, 2.0f), Seq(1.0))), schema)
      df.withMetadata(column, new MetadataBuilder().putLong(key, dim).build())
    }
    for ((write, says) <- Seq[(() => Unit, String)](
        (() => tagged("emb", SparkTypes.VectorDimension, 3).writeTo("lance.alt.vec").append(), "a vector of 2 items"),
        (() => tagged("emb", "arrow.fixed-size-list.size", 3).write.insertInto("lance.alt.vec"), "a vector of 2 items"),
        (() => tagged("tags", SparkTypes.VectorDimension, 1).writeTo("lance.alt.vec").overwrite(org.apache.spark.sql.functions.lit(true)),
          "a list (ARRAY<DOUBLE>), not a vector"))) {
      val e = intercept[Exception](write())
      assert(causes(e).exists(c => c.getMessage.contains("LANCE_INVALID_VALUE") && c.getMessage.contains(says)),
        causes(e).map(_.getMessage).mkString(" / "))
    }
    tagged("emb", SparkTypes.VectorDimension, 2).writeTo("lance.alt.vec").append()
    assert(rows("SELECT count(*) FROM lance.alt.vec").head.getLong(0) == 3)
  }

  test("MERGE WITH SCHEMA EVOLUTION and appends withSchemaEvolution add the source's new columns and widen types") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.alt")
    sql("CREATE TABLE lance.alt.evo (id BIGINT, n INT) TBLPROPERTIES ('enable_stable_row_ids' = 'true')")
    sql("INSERT INTO lance.alt.evo VALUES (1, 10), (2, 20)")
    spark.createDataFrame(java.util.List.of(Row(2L, 2000000000000L, "two"), Row(3L, 3L, "three")),
      org.apache.spark.sql.types.StructType.fromDDL("id BIGINT, n BIGINT, label STRING")).createOrReplaceTempView("evo_src")
    val merge = "MERGE WITH SCHEMA EVOLUTION INTO lance.alt.evo t USING evo_src s ON t.id = s.id " +
      "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    val before = dataset("evo").latestVersion
    // Planning alone (EXPLAIN) changes nothing: the schema change waits for the statement's write.
    sql(s"EXPLAIN $merge").collect()
    assert(dataset("evo").latestVersion == before && spark.table("lance.alt.evo").columns.toSeq == Seq("id", "n"))
    sql(merge)
    // One commit holds the widened and the added column and the rows: a Merge of every fragment.
    assert(dataset("evo").latestVersion == before + 1)
    assert(txn("evo").hasMerge && txn("evo").getMerge.getSchemaCount == 3)
    assert(spark.table("lance.alt.evo").schema.map(f => f.name -> f.dataType.sql) == Seq("id" -> "BIGINT", "n" -> "BIGINT", "label" -> "STRING"))
    assert(rows("SELECT id, n, label FROM lance.alt.evo ORDER BY id") ==
      Seq(Row(1L, 10L, null), Row(2L, 2000000000000L, "two"), Row(3L, 3L, "three")))
    // The updated row's new image and the inserted row carry the commit's version; row 1 kept its
    // (its fragment got the widened column's file, which Lance counts as an update of every row).
    assert(rows("SELECT id, _row_created_at_version FROM lance.alt.evo ORDER BY id") ==
      Seq(Row(1L, before), Row(2L, before), Row(3L, before + 1)))
    spark.createDataFrame(java.util.List.of(Row(4L, 4L, "four", true)),
      org.apache.spark.sql.types.StructType.fromDDL("id BIGINT, n BIGINT, label STRING, flag BOOLEAN"))
      .writeTo("lance.alt.evo").withSchemaEvolution().append()
    assert(dataset("evo").latestVersion == before + 2 && txn("evo").hasMerge)
    assert(rows("SELECT id, flag FROM lance.alt.evo ORDER BY id") == Seq(Row(1L, null), Row(2L, null), Row(3L, null), Row(4L, true)))
    def dataFiles = new java.io.File(dataset("evo").path, "data").list().toSet
    val committedFiles = dataFiles
    // A statement that fails changes neither the schema nor the rows: two source rows match one target row.
    spark.createDataFrame(java.util.List.of(Row(1L, "x", 1.5), Row(1L, "y", 2.5)),
      org.apache.spark.sql.types.StructType.fromDDL("id BIGINT, label STRING, score DOUBLE")).createOrReplaceTempView("evo_dup")
    val failed = intercept[Exception](sql("MERGE WITH SCHEMA EVOLUTION INTO lance.alt.evo t USING evo_dup s ON t.id = s.id " +
      "WHEN MATCHED THEN UPDATE SET *"))
    assert(causes(failed).exists(_.getMessage.contains("MERGE_CARDINALITY_VIOLATION")), failed)
    assert(dataset("evo").latestVersion == before + 2 && !spark.table("lance.alt.evo").columns.contains("score"))
    assert(dataFiles == committedFiles, "the failed statement's files are gone")
    // An append of no rows still makes the change it asks for.
    spark.createDataFrame(java.util.List.of[Row](), org.apache.spark.sql.types.StructType.fromDDL("id BIGINT, note STRING"))
      .writeTo("lance.alt.evo").withSchemaEvolution().append()
    assert(dataset("evo").latestVersion == before + 3 && spark.table("lance.alt.evo").columns.last == "note")
    assert(pylance("evo", "t = ds.to_table().sort_by('id'); print(t.schema.names, t.column('label').to_pylist())") ==
      "['id', 'n', 'label', 'flag', 'note'] [None, 'two', 'three', 'four']")
  }

  test("add_columns writes only the new columns: one file per fragment, for every row; pylance reads them") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.alt")
    sql("CREATE TABLE lance.alt.addv (id BIGINT, v STRING) " +
      "TBLPROPERTIES ('enable_stable_row_ids' = 'true', 'max_rows_per_file' = '4', 'optimize_write' = 'false')")
    sql("INSERT INTO lance.alt.addv SELECT /*+ COALESCE(1) */ id, concat('v', id) FROM range(10)")
    sql("DELETE FROM lance.alt.addv WHERE id IN (1, 5)")
    val before = dataset("addv").snapshot()
    val row = sql("CALL lance.system.add_columns(table => 'alt.addv', expressions => map('twice', 'id * 2', 'tag', 'upper(v)'))")
      .collect().head
    assert(row.getAs[scala.collection.Seq[String]]("columns") == Seq("twice", "tag") && row.getAs[Long]("files_written") == before.fragments.size)
    val after = dataset("addv").snapshot()
    assert(txn("addv").hasMerge && txn("addv").getMerge.getPreservesNullability)
    assert(after.fragments.map(_.getFilesCount) == before.fragments.map(_.getFilesCount + 1))
    val newIds = after.schema.fields.filter(f => Set("twice", "tag")(f.name)).map(_.id).toSet
    assert(after.fragments.forall(f => f.getFiles(f.getFilesCount - 1).getFieldsList.asScala.map(_.intValue).toSet == newIds))
    assert(rows("SELECT id, twice, tag FROM lance.alt.addv WHERE id IN (0, 9) ORDER BY id") == Seq(Row(0L, 0L, "V0"), Row(9L, 18L, "V9")))
    assert(rows("SELECT DISTINCT _row_last_updated_at_version FROM lance.alt.addv").map(_.getLong(0)) == Seq(after.version))

    spark.createDataFrame(java.util.List.of(Row(2L, "two"), Row(3L, "three"), Row(99L, "none")),
      org.apache.spark.sql.types.StructType.fromDDL("id BIGINT, word STRING")).createOrReplaceTempView("words")
    sql("CALL lance.system.add_columns(table => 'alt.addv', source => 'words', on => 'id')")
    assert(rows("SELECT id, word FROM lance.alt.addv WHERE id < 5 ORDER BY id") ==
      Seq(Row(0L, null), Row(2L, "two"), Row(3L, "three"), Row(4L, null)))
    assert(pylance("addv", """t = ds.to_table().sort_by("id")
        |print(t.schema.names, t.column("twice").to_pylist()[:3], t.column("word").to_pylist()[:3])""".stripMargin) ==
      "['id', 'v', 'twice', 'tag', 'word'] [0, 4, 6] [None, 'two', 'three']")

    spark.createDataFrame(java.util.List.of(Row(2L, 1), Row(2L, 2)),
      org.apache.spark.sql.types.StructType.fromDDL("id BIGINT, dup INT")).createOrReplaceTempView("dups")
    val version = dataset("addv").latestVersion
    val e = intercept[Exception](sql("CALL lance.system.add_columns(table => 'alt.addv', source => 'dups', on => 'id')").collect())
    assert(causes(e).exists(_.getMessage.contains("several rows")), e.getMessage)
    assert(dataset("addv").latestVersion == version)
  }

  test("update_columns rewrites existing columns in place: one file per fragment, rows keep addresses and ids") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.alt")
    sql("CREATE TABLE lance.alt.upc (id BIGINT NOT NULL, v STRING, n INT NOT NULL) " +
      "TBLPROPERTIES ('enable_stable_row_ids' = 'true', 'max_rows_per_file' = '4', 'optimize_write' = 'false')")
    sql("INSERT INTO lance.alt.upc SELECT /*+ COALESCE(1) */ id, concat('v', id), CAST(id AS INT) FROM range(10)")
    sql("DELETE FROM lance.alt.upc WHERE id IN (1, 6)")
    val lineage = "SELECT id, _rowaddr, _rowid, _row_created_at_version FROM lance.alt.upc ORDER BY id"
    val before = rows(lineage)
    val beforeSnap = dataset("upc").snapshot()
    sql("CALL lance.system.update_columns(table => 'alt.upc', expressions => map('v', \"concat(v, '!')\", 'n', 'n * 10'))").collect()
    val update = txn("upc").getUpdate
    assert(update.getUpdateMode.name == "REWRITE_COLUMNS" && update.getFieldsModifiedList.asScala.map(_.intValue).toSet == Set(1, 2))
    val after = dataset("upc").snapshot()
    assert(rows(lineage) == before, "addresses, ids and creation versions stay")
    assert(after.fragments.map(_.getFilesCount) == beforeSnap.fragments.map(_.getFilesCount + 1))
    assert(after.fragments.forall(f => f.getFiles(0).getFieldsList.asScala.map(_.intValue) == Seq(0, -2, -2)))
    assert(rows("SELECT id, v, n FROM lance.alt.upc WHERE id IN (0, 9) ORDER BY id") == Seq(Row(0L, "v0!", 0), Row(9L, "v9!", 90)))
    assert(rows("SELECT DISTINCT _row_last_updated_at_version FROM lance.alt.upc").map(_.getLong(0)) == Seq(after.version))
    val changes = rows(s"SELECT id, v, _change_type FROM lance.alt.upc CHANGES FROM VERSION ${after.version} TO VERSION ${after.version} " +
      "WITH (computeUpdates = 'true') ORDER BY id, _change_type")
    assert(changes.take(2) == Seq(Row(0L, "v0!", "update_postimage"), Row(0L, "v0", "update_preimage")) && changes.size == 16)
    sql("UPDATE lance.alt.upc SET n = n + 1 WHERE id = 9")
    sql("CALL lance.system.compact(table => 'alt.upc')")
    assert(pylance("upc", """t = ds.to_table().sort_by("id")
        |print(t.column("v").to_pylist()[:2], t.column("n").to_pylist()[-1], ds.count_rows())""".stripMargin) ==
      "['v0!', 'v2!'] 91 8")
  }

  test("errors name the column and leave the table as it was") {
    newTable("err")
    sql("ALTER TABLE lance.alt.err ADD COLUMN extra INT")
    val before = dataset("err").latestVersion
    // Spark checks some of these itself (its messages quote names in backticks); sparklance the rest.
    for ((statement, named) <- Seq(
      "ADD COLUMN v INT" -> Seq("v", "already exists"),
      "ADD COLUMN nn INT NOT NULL" -> Seq("nn", "must be nullable"),
      "DROP COLUMN missing" -> Seq("missing"),
      "RENAME COLUMN v TO id" -> Seq("id", "already exists"),
      "ALTER COLUMN id TYPE INT" -> Seq("id"),
      "ALTER COLUMN s.x TYPE BIGINT" -> Seq("s.x", "inside a struct"),
      "DROP COLUMNS (id, s, v)" -> Seq("last column with data"))) {
      val e = intercept[Exception](sql(s"ALTER TABLE lance.alt.err $statement"))
      val messages = causes(e).map(_.getMessage).mkString(" / ")
      assert(named.forall(messages.contains), s"$statement: $messages")
      assert(dataset("err").latestVersion == before, statement)
    }
  }
}
