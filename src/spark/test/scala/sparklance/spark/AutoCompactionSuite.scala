package sparklance.spark

import org.apache.spark.sql.connector.catalog.Identifier
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.commit.Transactions
import sparklance.format.table.Dataset

/** `auto_compact`: a write that leaves enough small fragments compacts them in the same job, as its own version. */
class AutoCompactionSuite extends AnyFunSuite with LocalSpark {
  private def dataset(table: String): Dataset = {
    val catalog = spark.sessionState.catalogManager.catalog("lance").asInstanceOf[LanceCatalog]
    new Dataset(catalog.storage, catalog.tablePath(Identifier.of(Array("ac"), table)))
  }
  private def operations(table: String): Seq[String] = {
    val ds = dataset(table)
    ds.versions.flatMap(v => Transactions.committed(ds, v)).map(Transactions.operationName)
  }

  test("the fourth small insert and a MERGE compact the table right after they commit; without the property nothing does") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.ac")
    val props = "'lance.compaction.target_rows_per_fragment' = '1000', 'auto_compact.min_fragments' = '4'"
    sql(s"CREATE TABLE lance.ac.t (id BIGINT, v STRING) TBLPROPERTIES ('auto_compact' = 'true', $props)")
    sql(s"CREATE TABLE lance.ac.off (id BIGINT, v STRING) TBLPROPERTIES ($props)")
    for (t <- Seq("t", "off"); i <- 0 until 4) sql(s"INSERT INTO lance.ac.$t SELECT id, CAST(id AS STRING) FROM range(${i * 10}, ${i * 10 + 10})")
    assert(operations("t") == Seq("Overwrite", "Append", "Append", "Append", "Append", "ReserveFragments", "Rewrite"))
    assert(dataset("t").snapshot().fragments.size == 1 && dataset("off").snapshot().fragments.size == 4)
    for (t <- Seq("t", "off")) {
      sql(s"MERGE INTO lance.ac.$t d USING (SELECT id, 'x' AS v FROM range(35, 45)) s ON d.id = s.id " +
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
      assert(sql(s"SELECT count(*), count_if(v = 'x') FROM lance.ac.$t").collect().head.toSeq == Seq(45L, 10L))
    }
    // The MERGE left the compacted fragment with deletions and a new one: below the threshold of 4.
    assert(operations("t").last == "Update" && operations("off").last == "Update")
    val props2 = dataset("t").snapshot().config
    assert(props2.get("sparklance.auto_compact").contains("true"), props2)
    assert(sql("SHOW TBLPROPERTIES lance.ac.t").collect().map(r => r.getString(0) -> r.getString(1)).toMap
      .get("auto_compact").contains("true"))
  }

  test("a MERGE that leaves two fragments to rewrite compacts them as the versions after its own") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.ac")
    sql("CREATE TABLE lance.ac.m (id BIGINT, v STRING) TBLPROPERTIES ('auto_compact' = 'true', " +
      "'lance.compaction.target_rows_per_fragment' = '1000', 'auto_compact.min_fragments' = '2')")
    sql("INSERT INTO lance.ac.m SELECT id, CAST(id AS STRING) FROM range(0, 40)")
    sql("MERGE INTO lance.ac.m d USING (SELECT id, 'x' AS v FROM range(35, 45)) s ON d.id = s.id " +
      "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *")
    assert(operations("m").takeRight(3) == Seq("Update", "ReserveFragments", "Rewrite"))
    assert(dataset("m").snapshot().fragments.map(_.getPhysicalRows) == Seq(45L))
    assert(sql("SELECT count(*), count_if(v = 'x'), sum(id) FROM lance.ac.m").collect().head.toSeq == Seq(45L, 10L, (0L until 45L).sum))
  }
}
