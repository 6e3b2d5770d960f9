package sparklance.spark

import java.nio.file.{Files, Paths}
import org.apache.spark.sql.Row
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import sparklance.format.io.{LocalStorage, Storage}
import sparklance.format.table.{Dataset, ManifestFile}

/** Deletion files whose row count the manifest leaves 0, as older Lance writers did. */
class UnknownDeletionCountSuite extends AnyFunSuite with LocalSpark {
  /** Rewrites the latest manifest of the table at `path` with every deletion count set to 0. */
  private def forgetDeletionCounts(path: String): Unit = {
    val ds = new Dataset(LocalStorage, path)
    val file = Paths.get(Storage.join(path, s"_versions/${ds.naming.fileName(ds.latestVersion)}"))
    val bytes = Files.readAllBytes(file)
    val decoded = ManifestFile.decode(file.toString, bytes)
    val fragments = decoded.manifest.getFragmentsList.asScala.map { f =>
      if (!f.hasDeletionFile) f else f.toBuilder.setDeletionFile(f.getDeletionFile.toBuilder.setNumDeletedRows(0)).build()
    }
    val manifest = decoded.manifest.toBuilder.clearFragments().addAllFragments(fragments.asJava).build()
    Files.write(file, ManifestFile.encode(manifest, decoded.indexSection, ManifestFile.inlineTransaction(file.toString, bytes)))
  }

  test("COUNT(*), LIMIT and history read a deletion file whose count is unknown") {
    sql("CREATE NAMESPACE IF NOT EXISTS lance.dc")
    sql("CREATE TABLE lance.dc.t (id BIGINT) TBLPROPERTIES ('max_rows_per_file' = '10')")
    sql("INSERT INTO lance.dc.t SELECT /*+ COALESCE(1) */ id FROM range(30)")   // version 2: 3 fragments
    sql("DELETE FROM lance.dc.t WHERE id < 8")                                   // version 3: 2 left in fragment 0
    forgetDeletionCounts(warehouse.resolve("dc/t.lance").toString)

    assert(sql("SELECT count(*) FROM lance.dc.t").head() == Row(22L))
    // The first fragment holds 2 live rows, not 10: a LIMIT of 5 must plan the next one too.
    assert(sql("SELECT id FROM lance.dc.t LIMIT 5").collect().length == 5)
    assert(sql("SELECT rows_deleted, rows FROM lance.dc.t.history WHERE version = 3").head() == Row(8L, 22L))
    assert(sql("SELECT count(*) FROM (SELECT id FROM lance.dc.t WHERE id >= 0)").head() == Row(22L))
  }
}
