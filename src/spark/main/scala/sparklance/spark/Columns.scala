package sparklance.spark

import org.apache.spark.sql.connector.catalog.Column
import org.apache.spark.sql.types.{Metadata, StructField, StructType}

/** Spark's V2 Column <-> StructType conversions (Spark's own helper is internal to Spark). */
object Columns {
  def toStruct(columns: Array[Column]): StructType = StructType(columns.map { c =>
    val metadata = Option(c.metadataInJSON()).map(Metadata.fromJson).getOrElse(Metadata.empty)
    val f = StructField(c.name(), c.dataType(), c.nullable(), metadata)
    Option(c.comment()).fold(f)(f.withComment)
  })

  def fromStruct(schema: StructType): Array[Column] = schema.fields.map { f =>
    val metadata = if (f.metadata == Metadata.empty) null else f.metadata.json
    Column.create(f.name, f.dataType, f.nullable, f.getComment().orNull, metadata)
  }
}
