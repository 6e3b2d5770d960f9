package sparklance.spark

import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite
import sparklance.format.proto.TableProtos.Manifest
import sparklance.format.table.{BlobEncoding, ManifestFile, Snapshot, VersionNaming}

class ColumnPropertiesSuite extends AnyFunSuite {
  private val schema = StructType.fromDDL("id BIGINT, emb ARRAY<FLOAT>, img BINARY, s STRUCT<a: INT, v: ARRAY<DOUBLE>>, note STRING")

  private def refused(props: (String, String)*): InvalidTablePropertyException =
    intercept[InvalidTablePropertyException](ColumnProperties("lance.db.t", schema, props.toMap))

  test("vector, blob and NOT NULL declarations shape the schema, top level and in structs, and are not kept as properties") {
    val (declared, rest) = ColumnProperties("lance.db.t", schema, Map(
      "emb.arrow.fixed-size-list.size" -> "4", "s.v.arrow.fixed-size-list.size" -> "2", "img.lance.encoding" -> "Blob",
      "not_null_columns" -> " id , s.a", "owner.team" -> "search"))
    assert(rest == Map("owner.team" -> "search"))
    assert(declared("emb").metadata.getLong(SparkTypes.VectorDimension) == 4)
    assert(declared("img").metadata.getString(BlobEncoding.MetadataKey) == "true")
    val s = declared("s").dataType.asInstanceOf[StructType]
    assert(s("v").metadata.getLong(SparkTypes.VectorDimension) == 2 && !s("a").nullable && declared("s").nullable)
    assert(!declared("id").nullable && declared("note").nullable)
    // What a table's properties show again (NOT NULL is in the column list), for SHOW CREATE TABLE.
    assert(ColumnProperties.describe(declared) == Map(
      "emb.arrow.fixed-size-list.size" -> "4", "s.v.arrow.fixed-size-list.size" -> "2", "img.lance.encoding" -> "blob"))
    // The Lance schema they make: fixed-size lists and a blob v2 field.
    val lance = SparkTypes.toLance(declared, "lance.db.t")
    assert(lance.fields.find(_.name == "emb").get.logicalType.startsWith("fixed_size_list"))
    assert(lance.fields.find(_.name == "img").get.blobEncoding.isDefined)
  }

  test("a declaration naming a missing column, a column of the wrong type or a bad value is refused by name") {
    def says(e: InvalidTablePropertyException, parts: String*) = parts.foreach(p => assert(e.getMessage.contains(p), e.getMessage))
    says(refused("nope.arrow.fixed-size-list.size" -> "4"), "'nope.arrow.fixed-size-list.size'", "'nope'", "id, emb, img, s, note")
    says(refused("not_null_columns" -> "s.zz"), "'s.zz'", "struct s's fields are a, v")
    says(refused("note.arrow.fixed-size-list.size" -> "4"), "'note'", "ARRAY of numbers", "STRING")
    says(refused("emb.arrow.fixed-size-list.size" -> "0"), "positive", "'0'")
    says(refused("note.lance.encoding" -> "blob"), "BINARY", "STRING")
    says(refused("img.lance.encoding" -> "zstd"), "'blob'", "'zstd'")
    says(refused("not_null_columns" -> " , "), "separated by commas")
    says(refused("id.x.arrow.fixed-size-list.size" -> "2"), "inside 'id'", "BIGINT")
  }

  test("ALTER TABLE cannot set or unset a declaration") {
    val snapshot = Snapshot("/t.lance", VersionNaming.V2, ManifestFile(Manifest.newBuilder().setVersion(1).build(), None))
    for ((set, unset) <- Seq(Map("emb.arrow.fixed-size-list.size" -> "4") -> Set.empty[String],
        Map("not_null_columns" -> "id") -> Set.empty[String], Map.empty[String, String] -> Set("img.lance.encoding"))) {
      val e = intercept[InvalidTablePropertyException](TableProperties.change("lance.db.t", snapshot, set, unset))
      assert(e.getMessage.contains("existing table"), e.getMessage)
      if (set.contains("not_null_columns")) assert(e.getMessage.contains("set_not_null"), e.getMessage)
    }
  }
}
