package sparklance.spark

import java.nio.file.{Files, Path, Paths}
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.commit.Committer
import sparklance.format.proto.TableProtos.Manifest
import sparklance.format.table.{FragmentWriter, ManifestFile, Snapshot, VersionNaming}

class TablePropertiesSuite extends AnyFunSuite {
  private val limit = FragmentWriter.MaxRowsPerFile

  private def refused(props: (String, String)*): InvalidTablePropertyException =
    intercept[InvalidTablePropertyException](TableProperties.validate("lance.db.t", props.toMap))

  test("max_rows_per_file above Lance's limit is refused, naming the property, the value and the limit") {
    val e = refused("max_rows_per_file" -> (limit + 1).toString)
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

  test("an unknown name in sparklance's namespace is refused with the nearest known one") {
    for ((typo, meant) <- Seq("enable_stable_rowids" -> "enable_stable_row_ids", "optimise_write" -> "optimize_write",
        "Max_Rows_Per_File" -> "max_rows_per_file", "sparklance.rewrite_mode" -> "rewrite_mode",
        "auto_compact.min_fragment" -> "auto_compact.min_fragments", "zonemap_column" -> "zonemap_columns")) {
      val e = refused(typo -> "true")
      assert(e.property == typo && e.getMessage.contains(s"did you mean '$meant'?"), e.getMessage)
    }
    assert(refused("version" -> "3").getMessage.contains("cannot be set"))
    val far = refused("team" -> "search")
    assert(!far.getMessage.contains("did you mean") && far.getMessage.contains("owner.team"), far.getMessage)
  }

  test("values are checked by kind and stored normalized") {
    for ((k, v, says) <- Seq(("optimize_write", "yes", "true or false"), ("enable_stable_row_ids", "1", "true or false"),
        ("max_rows_per_file", "10k", "an integer from 1"), ("max_rows_per_file", "0", "an integer from 1"),
        ("auto_compact.min_fragments", "1", "an integer from 2"), ("rewrite_mode", "cells", "one of auto, rows, columns"),
        ("isolation_level", "read_committed", "serializable, snapshot"), ("data_storage_version", "9.9", "2.2"),
        ("zonemap_columns", "a,,b", "column names"))) {
      val e = refused(k -> v)
      assert(e.property == k && e.getMessage.contains(s"'$v'") && e.getMessage.contains(says), e.getMessage)
    }
    val stored = TableProperties.validate("lance.db.t", Map("optimize_write" -> "FALSE", "rewrite_mode" -> " Rows",
      "isolation_level" -> "SNAPSHOT", "zonemap_columns" -> "a, b, a", "data_storage_version" -> "stable"))
    assert(stored.config == Map("sparklance.optimize_write" -> "false", "sparklance.rewrite_mode" -> "rows",
      "sparklance.isolation_level" -> "snapshot", "sparklance.zonemap_columns" -> "a,b", Committer.StorageVersionKey -> "2.2"))
  }

  test("dotted keys, Lance's config and Spark's reserved properties keep their places") {
    val stored = TableProperties.validate("lance.db.t", Map("owner.team" -> "search", "lance.custom" -> "x", "comment" -> "hi",
      "lance.compaction.target_rows_per_fragment" -> "10", "owner" -> "ada", "provider" -> "lance", "location" -> "/x",
      "option.path" -> "/y", "is_managed_location" -> "true", "external" -> "false"))
    assert(stored.metadata == Map("owner.team" -> "search", "comment" -> "hi"))
    assert(stored.config - Committer.StorageVersionKey == Map("lance.custom" -> "x", "lance.compaction.target_rows_per_fragment" -> "10"))
  }

  test("docs/configuration.md lists every property the registry holds") {
    val docs = Iterator.iterate(Paths.get(sys.props("user.dir")).toAbsolutePath)(_.getParent).takeWhile(_ != null)
      .map(_.resolve("docs/configuration.md")).find(Files.exists(_)).getOrElse(fail("docs/configuration.md not found"))
    val text = new String(Files.readAllBytes(docs), "UTF-8")
    for (p <- TableProperties.all) assert(text.contains(s"| `${p.name}` |"), s"${p.name} is not in the table of $docs")
  }
}
