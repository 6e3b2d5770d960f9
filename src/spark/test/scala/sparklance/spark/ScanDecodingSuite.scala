package sparklance.spark

import org.apache.spark.sql.DataFrame
import org.scalatest.funsuite.AnyFunSuite

/**
 * Every column type a scan hands Spark, read back from tables of each file version (several
 * batches and fragments, with deleted rows, which scans read as picked rows) against the
 * DataFrame written: whatever path decodes a column, Spark must see the values written.
 */
class ScanDecodingSuite extends AnyFunSuite with LocalSpark {
  private def source(rows: Int): DataFrame = {
    // Pseudo-random values and nulls, from hashes of the id with a seed per column.
    def nullOr(seed: Int, rate: Int, value: String) = s"CASE WHEN pmod(hash(id, ${seed + 100}), $rate) = 0 THEN NULL ELSE $value END"
    spark.range(rows).selectExpr("id",
      nullOr(1, 5, "pmod(hash(id, 1), 2) = 0") + " AS flag",
      nullOr(2, 4, "CAST(pmod(hash(id, 2), 256) - 128 AS TINYINT)") + " AS i8",
      nullOr(3, 3, "CAST(pmod(hash(id, 3), 65536) - 32768 AS SMALLINT)") + " AS i16",
      nullOr(4, 6, "hash(id, 4)") + " AS i32",
      "CAST(hash(id, 5) AS BIGINT) * 1000003 AS i64",
      nullOr(6, 7, "CAST(hash(id, 6) AS FLOAT) / 7") + " AS f32",
      nullOr(7, 2, "CAST(hash(id, 7) AS DOUBLE) / 3") + " AS f64",
      nullOr(8, 5, "date_add(DATE'2000-01-01', pmod(hash(id, 8), 20000))") + " AS d",
      nullOr(9, 5, "timestamp_micros(CAST(hash(id, 9) AS BIGINT) * 1000003)") + " AS ts",
      nullOr(10, 5, "CAST(timestamp_micros(CAST(hash(id, 10) AS BIGINT) * 999) AS TIMESTAMP_NTZ)") + " AS ntz",
      nullOr(11, 3, "CAST(id * 0.25 AS DECIMAL(23, 2))") + " AS dec_small",
      nullOr(12, 3, "CAST(concat(CAST(hash(id, 12) AS STRING), '1234567890123.456789') AS DECIMAL(38, 6))") + " AS dec_big",
      nullOr(13, 4, "concat(repeat('é', pmod(hash(id, 13), 4)), CAST(id AS STRING), repeat('x', pmod(hash(id, 14), 90)))") + " AS s",
      nullOr(15, 4, "unhex(repeat(hex(pmod(hash(id, 15), 256)), pmod(hash(id, 16), 9)))") + " AS bin",
      nullOr(17, 5, "transform(sequence(1, pmod(hash(id, 17), 4)), k -> IF(k = 2, NULL, hash(id, k)))") + " AS ints",
      nullOr(18, 5, "transform(sequence(1, pmod(hash(id, 18), 3)), k -> transform(sequence(1, k), j -> IF(j = 3, NULL, repeat('y', j))))") +
        " AS nested",
      "transform(sequence(0, 7), k -> CAST(hash(id, k) AS FLOAT) / 11) AS emb")
      .withMetadata("emb", new org.apache.spark.sql.types.MetadataBuilder().putLong("lance.vector_dim", 8).build())
  }

  private def same(got: DataFrame, expected: DataFrame): Unit = {
    assert(got.count() == expected.count())
    assert(got.exceptAll(expected).isEmpty && expected.exceptAll(got).isEmpty)
  }

  for (version <- Seq("2.0", "2.1", "2.2")) test(s"every type reads back as written, with deleted rows, from $version files") {
    val table = s"lance.decode.t${version.replace('.', '_')}"
    sql("CREATE NAMESPACE IF NOT EXISTS lance.decode")
    val src = source(30000)
    // Several fragments of several batches each.
    src.repartition(3).writeTo(table).tableProperty("data_storage_version", version).create()
    same(spark.table(table), src)
    sql(s"DELETE FROM $table WHERE pmod(hash(id, 99), 7) = 3 OR id BETWEEN 10000 AND 12000")
    same(spark.table(table), src.where("NOT (pmod(hash(id, 99), 7) = 3 OR id BETWEEN 10000 AND 12000)"))
    same(spark.table(table).select("s", "emb", "dec_small").where("i32 % 5 = 1"),
      src.where("NOT (pmod(hash(id, 99), 7) = 3 OR id BETWEEN 10000 AND 12000) AND i32 % 5 = 1").select("s", "emb", "dec_small"))
  }
}
