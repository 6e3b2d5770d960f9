package sparklance.spark

import org.apache.spark.sql.catalyst.util.GeneratedColumn
import org.apache.spark.sql.connector.catalog.constraints.{Check, Constraint}
import org.apache.spark.sql.types.{MetadataBuilder, StructField, StructType}

/**
 * Generated columns (`d DATE GENERATED ALWAYS AS (CAST(ts AS DATE))`): the expression, which Spark
 * analyses at CREATE TABLE (deterministic, of the table's own columns, of the column's type), is
 * kept in the Lance field's metadata under `spark.generation_expression`, and travels in Spark's
 * column metadata under Spark's key. Writes compute the column where it is absent or NULL
 * ([[GeneratedColumnsRule]]), and the table reports one CHECK constraint per generated column,
 * `generated_<column>`: `<column> <=> (<expression>)`, which Spark checks on every write like the
 * table's own constraints, so a row that gives the column another value is refused.
 */
object GeneratedColumns {
  val LanceKey = "spark.generation_expression"
  private val SparkKey = GeneratedColumn.GENERATION_EXPRESSION_METADATA_KEY

  /** The Lance field metadata that keeps a Spark column's generation expression. */
  def toLance(metadata: org.apache.spark.sql.types.Metadata): Map[String, String] =
    if (metadata.contains(SparkKey)) Map(LanceKey -> metadata.getString(SparkKey)) else Map.empty

  /** `field` with the generation expression of a Lance field's `metadata` in its Spark metadata. */
  def toSpark(field: StructField, metadata: Map[String, String]): StructField = metadata.get(LanceKey).fold(field)(e =>
    field.copy(metadata = new MetadataBuilder().withMetadata(field.metadata).putString(SparkKey, e).build()))

  /** A column's generation expression, if it is generated. */
  def expression(field: StructField): Option[String] = Some(SparkKey).filter(field.metadata.contains).map(field.metadata.getString)

  /** The generated top-level columns of `schema` and their expressions. */
  def of(schema: StructType): Seq[(StructField, String)] = schema.fields.toSeq.flatMap(f => expression(f).map(f -> _))

  private def quoted(name: String) = s"`${name.replace("`", "``")}`"

  /** The CHECK constraints that hold each generated column to its expression. */
  def checks(schema: StructType): Seq[Check] = of(schema).map { case (f, e) =>
    Constraint.check(s"generated_${f.name}").predicateSql(s"${quoted(f.name)} <=> CAST(($e) AS ${f.dataType.sql})")
      .enforced(true).build()
  }
}
