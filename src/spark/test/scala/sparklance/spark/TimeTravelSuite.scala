package sparklance.spark

import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.io.LocalStorage
import sparklance.format.table.Dataset

class TimeTravelSuite extends AnyFunSuite with LocalSpark {
  test("VERSION AS OF, TIMESTAMP AS OF and the versionAsOf reader option") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.tt")
    sql("CREATE TABLE lance.tt.t (id INT)")                     // version 1
    sql("INSERT INTO lance.tt.t VALUES (1), (2)")              // version 2
    val afterTwo = sql("SELECT current_timestamp()").head().getTimestamp(0)
    Thread.sleep(20)
    sql("DELETE FROM lance.tt.t WHERE id = 1")                 // version 3
    sql("INSERT INTO lance.tt.t VALUES (3)")                   // version 4
    def ids(q: String) = sql(q).collect().map(_.getInt(0)).sorted.toSeq
    assert(ids("SELECT * FROM lance.tt.t VERSION AS OF 1").isEmpty)
    assert(ids("SELECT * FROM lance.tt.t VERSION AS OF 2") == Seq(1, 2))
    assert(ids("SELECT * FROM lance.tt.t VERSION AS OF 3") == Seq(2))
    assert(ids("SELECT * FROM lance.tt.t") == Seq(2, 3))
    assert(ids(s"SELECT * FROM lance.tt.t TIMESTAMP AS OF '$afterTwo'") == Seq(1, 2))
    assert(spark.read.option("versionAsOf", "2").table("lance.tt.t").count() == 2)
    val missing = intercept[Exception](sql("SELECT * FROM lance.tt.t VERSION AS OF 42").collect())
    assert(missing.getMessage.contains("no version 42"), missing.getMessage)
    val early = intercept[Exception](sql("SELECT * FROM lance.tt.t TIMESTAMP AS OF '2001-01-01 00:00:00'").collect())
    assert(early.getMessage.contains("its first version was committed at"), early.getMessage)
    // The old version is still what pylance would see at that version: nothing was rewritten.
    assert(new Dataset(LocalStorage, warehouse.resolve("tt/t.lance").toString).snapshot(Some(2)).countRows(LocalStorage) == 2)
    assert(sql("SELECT count(*) FROM lance.tt.t VERSION AS OF 2").head() == Row(2L))
  }
}
