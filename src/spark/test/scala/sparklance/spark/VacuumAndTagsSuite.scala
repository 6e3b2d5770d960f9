package sparklance.spark

import org.apache.spark.sql.Row
import org.apache.spark.sql.connector.catalog.Identifier
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.{InvalidOptionException, LanceException, TagAlreadyExistsException, TagNotFoundException,
  VersionNotFoundException, VersionRemovedException}
import sparklance.format.table.Dataset

/** `CALL lance.system.vacuum / create_tag / delete_tag`, `<table>.tags`, time travel by tag and after a vacuum. */
class VacuumAndTagsSuite extends AnyFunSuite with LocalSpark {
  private def dataset(table: String): Dataset = {
    val catalog = spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog]
    new Dataset(catalog.storage, catalog.tablePath(Identifier.of(Array("vt"), table)))
  }
  private def ids(q: String) = sql(q).collect().map(_.getLong(0)).toSeq.sorted
  /** The cause chain's first exception of type T: Spark wraps what a procedure or a table load throws. */
  private def rootOf[T <: Throwable](e: Throwable)(implicit m: scala.reflect.ClassTag[T]): T =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).collectFirst { case t: T => t }
      .getOrElse(fail(s"no ${m.runtimeClass.getSimpleName} in the causes of $e", e))

  private def newTable(name: String): Unit = {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.vt")
    sql(s"CREATE TABLE lance.vt.$name (id BIGINT) TBLPROPERTIES ('enable_stable_row_ids' = 'true')") // v1
    sql(s"INSERT INTO lance.vt.$name SELECT id FROM range(0, 10)")                                   // v2
    sql(s"DELETE FROM lance.vt.$name WHERE id < 3")                                                  // v3
    sql(s"INSERT INTO lance.vt.$name SELECT id FROM range(10, 15)")                                  // v4
  }

  test("vacuum: dry run lists, the real run removes; time travel and change data then name the oldest version left") {
    newTable("t")
    val dry = sql("CALL lance.system.vacuum(table => 'vt.t', retain_versions => 2, dry_run => true)").collect().head
    assert(dry.getAs[Long]("old_versions") == 2 && dry.getAs[Boolean]("dry_run") && dataset("t").versions == (1L to 4L))
    val listed = dry.getAs[Seq[String]]("files").toSet
    assert(listed.exists(_.startsWith("_versions/")) && listed.exists(_.startsWith("_transactions/")))
    val row = sql("CALL lance.system.vacuum(table => 'vt.t', retain_versions => 2)").collect().head
    assert(row.getAs[Long]("read_version") == 4 && row.getAs[Long]("oldest_version") == 3 && row.getAs[Long]("old_versions") == 2)
    assert(row.getAs[Seq[String]]("files").toSet == listed && row.getAs[Long]("failed_deletes") == 0)
    assert(dataset("t").versions == Seq(3L, 4L))
    assert(ids("SELECT id FROM lance.vt.t") == (3L until 15L))
    assert(ids("SELECT id FROM lance.vt.t VERSION AS OF 3") == (3L until 10L))
    val gone = rootOf[VersionRemovedException](intercept[Exception](sql("SELECT * FROM lance.vt.t VERSION AS OF 2").collect()))
    assert(gone.getMessage.contains("oldest version left is 3"), gone.getMessage)
    rootOf[VersionNotFoundException](intercept[Exception](sql("SELECT * FROM lance.vt.t VERSION AS OF 9").collect()))
    val early = intercept[Exception](sql("SELECT * FROM lance.vt.t TIMESTAMP AS OF '2001-01-01 00:00:00'").collect())
    assert(early.getMessage.contains("removed the versions before it"), early.getMessage)
    val changes = rootOf[VersionRemovedException](intercept[Exception](sql("SELECT * FROM lance.vt.t CHANGES FROM VERSION 3 TO VERSION 4").collect()))
    assert(changes.getMessage.contains("no longer has version 2") && changes.getMessage.contains("can be read from version 4 on"),
      changes.getMessage)
    assert(sql("SELECT * FROM lance.vt.t CHANGES FROM VERSION 4 TO VERSION 4").count() == 5)
    // History lists what is left; the oldest version has nothing to compare with.
    val history = sql("SELECT version, operation, rows_added, rows FROM lance.vt.t.history").collect().toSeq
    assert(history == Seq(Row(3L, "Delete", null, 7L), Row(4L, "Append", 5L, 12L)))
  }

  test("tags: create, list, time travel and restore by tag, protection from vacuum, delete") {
    newTable("g")
    assert(sql("CALL lance.system.create_tag(table => 'vt.g', tag => 'loaded', version => 2)").collect().head == Row("loaded", 2L))
    assert(sql("CALL lance.system.create_tag(table => 'lance.vt.g', tag => 'latest')").collect().head == Row("latest", 4L))
    assert(sql("SELECT tag, version, branch FROM lance.vt.g.tags ORDER BY tag").collect().toSeq ==
      Seq(Row("latest", 4L, null), Row("loaded", 2L, null)))
    assert(ids("SELECT id FROM lance.vt.g VERSION AS OF 'loaded'") == (0L until 10L))
    assert(sql("SELECT tags FROM lance.vt.g.history WHERE version = 2").collect().head.getSeq[String](0) == Seq("loaded"))
    rootOf[TagAlreadyExistsException](intercept[Exception](sql("CALL lance.system.create_tag(table => 'vt.g', tag => 'loaded')").collect()))
    rootOf[InvalidOptionException](intercept[Exception](sql("CALL lance.system.create_tag(table => 'vt.g', tag => 'a/b')").collect()))
    rootOf[TagNotFoundException](intercept[Exception](sql("SELECT * FROM lance.vt.g VERSION AS OF 'nope'").collect()))

    // A tagged version stands in the way of a vacuum that would remove it, unless told to keep it.
    val dry = sql("CALL lance.system.vacuum(table => 'vt.g', older_than => '0 seconds', dry_run => true)").collect().head
    assert(dry.getAs[collection.Seq[String]]("tags_in_the_way") == Seq("loaded (version 2)") && dry.getAs[Long]("old_versions") == 2)
    val refused = rootOf[LanceException](intercept[Exception](sql("CALL lance.system.vacuum(table => 'vt.g', older_than => '0 seconds')").collect()))
    assert(refused.getMessage.contains("loaded (version 2)"), refused.getMessage)
    assert(dataset("g").versions == (1L to 4L))
    sql("CALL lance.system.vacuum(table => 'vt.g', older_than => '0 seconds', error_if_tagged_old_versions => false)").collect()
    assert(dataset("g").versions == Seq(2L, 4L))
    assert(ids("SELECT id FROM lance.vt.g VERSION AS OF 'loaded'") == (0L until 10L))

    assert(sql("CALL lance.system.restore(table => 'vt.g', tag => 'loaded')").collect().head == Row(2L, 5L))
    assert(ids("SELECT id FROM lance.vt.g") == (0L until 10L))
    assert(sql("SELECT operation, operation_parameters['version'] FROM lance.vt.g.history WHERE version = 5").collect().head ==
      Row("Restore", "2"))
    assert(sql("CALL lance.system.delete_tag(table => 'vt.g', tag => 'loaded')").collect().head == Row("loaded", 2L))
    rootOf[TagNotFoundException](intercept[Exception](sql("CALL lance.system.delete_tag(table => 'vt.g', tag => 'loaded')").collect()))
    sql("CALL lance.system.vacuum(table => 'vt.g', older_than => '0 seconds', error_if_tagged_old_versions => false)").collect()
    assert(dataset("g").versions == Seq(4L, 5L), "the tag 'latest' keeps version 4")
  }

  test("bad arguments and missing tables are typed errors naming them, and change nothing") {
    newTable("e")
    val before = dataset("e").versions
    for ((call, named) <- Seq(
      "vacuum(table => 'vt.e', older_than => 'soon')" -> "older_than",
      "vacuum(table => 'vt.e', older_than => '3 fortnights')" -> "fortnights",
      "vacuum(table => 'vt.e', retain_versions => 0)" -> "retain_versions",
      "create_tag(table => 'vt.e', tag => 't', version => 99)" -> "version 99",
      "restore(table => 'vt.e', tag => 'missing')" -> "missing")) {
      val e = intercept[Exception](sql(s"CALL lance.system.$call").collect())
      assert(e.getMessage.contains(named) || Option(e.getCause).exists(_.getMessage.contains(named)), s"$call: ${e.getMessage}")
    }
    intercept[Exception](sql("CALL lance.system.vacuum(table => 'vt.missing')").collect())
    intercept[Exception](sql("CALL lance.system.vacuum(table => 'vt.e', typo => 1)").collect())
    assert(dataset("e").versions == before && !new java.io.File(dataset("e").path, "_refs").exists())
  }
}
