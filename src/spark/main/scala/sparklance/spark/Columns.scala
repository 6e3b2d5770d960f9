package sparklance.spark

import org.apache.spark.sql.catalyst.expressions.{Literal => CatalystLiteral}
import org.apache.spark.sql.catalyst.util.{GeneratedColumn, ResolveDefaultColumns}
import org.apache.spark.sql.connector.catalog.{Column, ColumnDefaultValue}
import org.apache.spark.sql.connector.expressions.Literal
import org.apache.spark.sql.types.{DataType, Metadata, MetadataBuilder, StructField, StructType}

/**
 * Spark's V2 Column <-> StructType conversions (Spark's own helper is internal to Spark). A
 * column's DEFAULT travels in a StructType as Spark's CURRENT_DEFAULT (the SQL text) and
 * EXISTS_DEFAULT (the SQL literal of the value existing rows get) column metadata, as Spark
 * encodes it for its own tables (see [[ColumnDefaults]]).
 */
object Columns {
  def toStruct(columns: Array[Column]): StructType = StructType(columns.map { c =>
    val metadata = Option(c.metadataInJSON()).map(Metadata.fromJson).getOrElse(Metadata.empty)
    // A generated column's expression travels in the metadata, under Spark's key (see GeneratedColumns).
    val generated = Option(c.generationExpression()).fold(metadata)(e =>
      new MetadataBuilder().withMetadata(metadata).putString(GeneratedColumn.GENERATION_EXPRESSION_METADATA_KEY, e).build())
    val f = StructField(c.name(), c.dataType(), c.nullable(), generated)
    val commented = Option(c.identityColumnSpec()).fold(Option(c.comment()).fold(f)(f.withComment)) { spec =>
      val g = Option(c.comment()).fold(f)(f.withComment)
      g.copy(metadata = IdentityColumns.toMetadata(g.metadata, spec))
    }
    Option(c.defaultValue()).fold(commented) { d =>
      // The value Spark evaluated when the default was declared (current_date(): that day).
      val exists = CatalystLiteral(d.getValue.value(), d.getValue.dataType()).sql
      commented.copy(metadata = new MetadataBuilder().withMetadata(commented.metadata)
        .putString(ResolveDefaultColumns.CURRENT_DEFAULT_COLUMN_METADATA_KEY, d.getSql)
        .putString(ResolveDefaultColumns.EXISTS_DEFAULT_COLUMN_METADATA_KEY, exists).build())
    }
  })

  def fromStruct(schema: StructType): Array[Column] = schema.fields.map { f =>
    val default = for (sql <- ColumnDefaults.current(f); _ <- ColumnDefaults.exists(f))
      yield new ColumnDefaultValue(sql, DefaultLiteral(ResolveDefaultColumns.getExistenceDefaultValue(f), f.dataType))
    val rest = IdentityColumns.withoutSpec(Seq(ResolveDefaultColumns.CURRENT_DEFAULT_COLUMN_METADATA_KEY,
        ResolveDefaultColumns.EXISTS_DEFAULT_COLUMN_METADATA_KEY, GeneratedColumn.GENERATION_EXPRESSION_METADATA_KEY)
      .foldLeft(new MetadataBuilder().withMetadata(f.metadata))(_.remove(_)).build())
    val metadata = if (rest == Metadata.empty) null else rest.json
    (IdentityColumns.spec(f), GeneratedColumns.expression(f)) match {
      case (Some(identity), _) => Column.create(f.name, f.dataType, f.nullable, f.getComment().orNull, identity, metadata)
      case (_, Some(e)) => Column.create(f.name, f.dataType, f.nullable, f.getComment().orNull, e, metadata)
      case _ => Column.create(f.name, f.dataType, f.nullable, f.getComment().orNull, default.orNull, metadata)
    }
  }

  /** A default's value (Spark's internal representation of it) as a connector literal. */
  private final case class DefaultLiteral(value: Any, dataType: DataType) extends Literal[Any] {
    override def describe(): String = CatalystLiteral(value, dataType).sql
    override def toString: String = describe()
  }
}
