package sparklance.spark

import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.commit.Committer
import sparklance.format.proto.TableProtos.Manifest
import sparklance.format.table.{FragmentWriter, ManifestFile, Snapshot, VersionNaming}

class TablePropertiesSuite extends AnyFunSuite {
  private val limit = FragmentWriter.MaxRowsPerFile

  test("max_rows_per_file above Lance's limit is refused, naming the property, the value and the limit") {
    val e = intercept[IllegalArgumentException](
      TableProperties.validate("lance.db.t", Map("max_rows_per_file" -> (limit + 1).toString)))
    Seq("max_rows_per_file", (limit + 1).toString, limit.toString, "lance.db.t").foreach(s => assert(e.getMessage.contains(s), e.getMessage))
    val config = TableProperties.validate("lance.db.t", Map("max_rows_per_file" -> limit.toString)).config
    assert(config(Committer.MaxRowsPerFileKey) == limit.toString)
  }

  test("a table stored with a larger max_rows_per_file writes files of at most the limit") {
    def snapshot(value: String) = Snapshot("/t.lance", VersionNaming.V2, ManifestFile(
      Manifest.newBuilder().setVersion(1).putConfig(Committer.MaxRowsPerFileKey, value).build(), None))
    assert(TableProperties.maxRowsPerFile(snapshot("5000000000").config) == limit)
    assert(TableProperties.maxRowsPerFile(snapshot("4").config) == 4L)
  }
}
