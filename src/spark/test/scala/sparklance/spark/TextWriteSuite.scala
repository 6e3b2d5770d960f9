package sparklance.spark

import org.apache.spark.sql.DataFrame
import org.scalatest.funsuite.AnyFunSuite

/**
 * Text that Spark appends reads back byte for byte, in every file version: NULLs, empty strings,
 * 2- to 4-byte UTF-8, and values long enough that a column's pages are cut between them. The rows
 * come from a shuffle (text inside Spark's rows) and from a Parquet scan (text inside column
 * vectors), the two places a writer copies text from.
 */
class TextWriteSuite extends AnyFunSuite with LocalSpark {
  private def source(rows: Int): DataFrame = spark.range(rows).selectExpr("id",
    """CASE pmod(hash(id, 1), 7)
         WHEN 0 THEN NULL
         WHEN 1 THEN ''
         WHEN 2 THEN concat(repeat('é', pmod(hash(id, 2), 5)), '😀', CAST(id AS STRING))
         WHEN 3 THEN repeat('漢字', pmod(hash(id, 3), 50))
         ELSE concat('s', CAST(id AS STRING)) END AS s""",
    // Every 500th row about 300 KB: 8 MB pages end between them.
    "IF(id % 500 = 7, repeat(concat('ü', CAST(id AS STRING)), 40000), IF(id % 3 = 0, NULL, CAST(id * 7 AS STRING))) AS big",
    "CAST(id AS STRING) AS plain")

  private def same(got: DataFrame, expected: DataFrame): Unit = {
    assert(got.count() == expected.count())
    assert(got.exceptAll(expected).isEmpty && expected.exceptAll(got).isEmpty)
  }

  for (version <- Seq("2.0", "2.1", "2.2")) test(s"text appended from shuffled rows and from a Parquet scan reads back, $version files") {
    val v = version.replace('.', '_')
    sql("CREATE NAMESPACE IF NOT EXISTS lance.text")
    val src = source(20000)
    val fromShuffle = s"lance.text.shuffled_$v"
    sql(s"CREATE TABLE $fromShuffle (id BIGINT, s STRING, big STRING, plain STRING) TBLPROPERTIES ('data_storage_version' = '$version')")
    src.repartition(2).writeTo(fromShuffle).append()
    same(spark.table(fromShuffle), src)

    val parquet = warehouse.resolve(s"text-$v.parquet").toString
    src.write.parquet(parquet)
    val fromParquet = s"lance.text.parquet_$v"
    sql(s"CREATE TABLE $fromParquet (id BIGINT, s STRING, big STRING, plain STRING) TBLPROPERTIES ('data_storage_version' = '$version')")
    spark.read.parquet(parquet).writeTo(fromParquet).append()
    same(spark.table(fromParquet), src)
  }
}
