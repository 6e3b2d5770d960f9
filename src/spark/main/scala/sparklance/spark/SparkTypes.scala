package sparklance.spark

import org.apache.arrow.vector.types.{DateUnit, FloatingPointPrecision, TimeUnit}
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType}
import org.apache.spark.sql.types._
import scala.jdk.CollectionConverters._
import sparklance.format.json.Jsonb
import sparklance.format.table.{BlobEncoding, LanceField, LanceSchema}

/** The type mapping between Spark and Lance (Arrow), in both directions; see docs/types.md. */
object SparkTypes {
  /** Spark's timestamps are UTC instants; Lance stores them as microseconds with zone "UTC". */
  val TimestampZone = "UTC"

  /**
   * Column metadata that makes an ARRAY column a Lance fixed-size list (a vector) of that many
   * items. Set by sparklance when it reads a vector column, so CTAS and writes keep vectors vectors.
   */
  val VectorDimension = "lance.vector_dim"

  /** The Spark column metadata naming a column's Arrow extension type; `lance.json` marks JSON columns. */
  val JsonExtensionKey: String = BlobEncoding.ExtensionKey

  /** A column's comment: Spark's metadata key, kept under the same key in the Lance field's metadata. */
  private val CommentKey = sparklance.format.table.SchemaChange.CommentKey

  def toLance(schema: StructType, tableName: String): LanceSchema =
    LanceSchema.fromArrow(new org.apache.arrow.vector.types.pojo.Schema(schema.fields.toSeq.map(toArrow(_, tableName)).asJava))

  /** One column as an Arrow field (ids come when it joins a Lance schema); its comment goes into the field metadata. */
  def toArrow(f: StructField, tableName: String): Field = toArrowField(f.name, f.dataType, f.nullable, f.metadata, tableName, f.name)

  private def toArrowField(name: String, dataType: DataType, nullable: Boolean, metadata: Metadata,
      table: String, path: String): Field = {
    // The comment, a DEFAULT (see ColumnDefaults) and a generation expression (GeneratedColumns) are kept in the Lance field's metadata.
    val keptKeys = (if (metadata.contains(CommentKey)) Map(CommentKey -> metadata.getString(CommentKey)) else Map.empty[String, String]) ++
      ColumnDefaults.toLance(metadata) ++ GeneratedColumns.toLance(metadata) ++ IdentityColumns.toLance(metadata)
    val kept = if (keptKeys.isEmpty) null else keptKeys.asJava
    def fieldType(t: ArrowType) = new FieldType(nullable, t, null, kept)
    def leaf(t: ArrowType) = new Field(name, fieldType(t), java.util.List.of[Field]())
    dataType match {
      case BooleanType => leaf(ArrowType.Bool.INSTANCE)
      case ByteType => leaf(new ArrowType.Int(8, true))
      case ShortType => leaf(new ArrowType.Int(16, true))
      case IntegerType => leaf(new ArrowType.Int(32, true))
      case LongType => leaf(new ArrowType.Int(64, true))
      case FloatType => leaf(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE))
      case DoubleType => leaf(new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE))
      // A JSON column (column metadata ARROW:extension:name = lance.json, which reading one sets): pylance's JSONB.
      case _: StringType if metadata.contains(JsonExtensionKey) && metadata.getString(JsonExtensionKey) == Jsonb.ExtensionName =>
        new Field(name, new FieldType(nullable, ArrowType.LargeBinary.INSTANCE, null,
          Jsonb.fieldMetadata(Option(kept).map(_.asScala.toMap).getOrElse(Map.empty)).asJava), java.util.List.of[Field]())
      case _: StringType | _: CharType | _: VarcharType => leaf(ArrowType.Utf8.INSTANCE)
      // A blob column (column metadata lance-encoding:blob = true): pylance's blob v2.
      case BinaryType if metadata.contains(BlobEncoding.MetadataKey) && metadata.getString(BlobEncoding.MetadataKey).equalsIgnoreCase("true") =>
        BlobEncoding.v2Field(name, nullable, Option(kept).map(_.asScala.toMap).getOrElse(Map.empty))
      case BinaryType => leaf(ArrowType.Binary.INSTANCE)
      case DateType => leaf(new ArrowType.Date(DateUnit.DAY))
      case TimestampType => leaf(new ArrowType.Timestamp(TimeUnit.MICROSECOND, TimestampZone))
      case TimestampNTZType => leaf(new ArrowType.Timestamp(TimeUnit.MICROSECOND, null))
      case d: DecimalType => leaf(new ArrowType.Decimal(d.precision, d.scale, 128))
      // Spark keeps both as microseconds (TIME: nanoseconds, of which pyarrow's default keeps microseconds).
      case _: DayTimeIntervalType => leaf(new ArrowType.Duration(TimeUnit.MICROSECOND))
      case _: TimeType => leaf(new ArrowType.Time(TimeUnit.MICROSECOND, 64))
      case ArrayType(element, containsNull) =>
        val item = toArrowField("item", element, containsNull, Metadata.empty, table, s"$path.element")
        val listType =
          if (metadata.contains(VectorDimension)) {
            val dim = metadata.getLong(VectorDimension)
            if (dim <= 0 || dim > Int.MaxValue)
              throw new UnsupportedTypeException(table, path, s"a vector of $dim items", s"$VectorDimension must be positive")
            if (!item.getChildren.isEmpty)
              throw new UnsupportedTypeException(table, path, s"a vector of ${element.sql} (vector items must be a primitive type)")
            new ArrowType.FixedSizeList(dim.toInt)
          } else ArrowType.List.INSTANCE
        new Field(name, fieldType(listType), java.util.List.of(item))
      case StructType(fields) =>
        new Field(name, fieldType(ArrowType.Struct.INSTANCE),
          fields.toSeq.map(f => toArrowField(f.name, f.dataType, f.nullable, f.metadata, table, s"$path.${f.name}")).asJava)
      case MapType(keyType, valueType, valueContainsNull) =>
        // Arrow's (and pylance's) layout: a list of non-null `entries` structs of a non-null key and a value.
        val key = toArrowField("key", keyType, nullable = false, Metadata.empty, table, s"$path.key")
        val value = toArrowField("value", valueType, valueContainsNull, Metadata.empty, table, s"$path.value")
        val entries = new Field("entries", new FieldType(false, ArrowType.Struct.INSTANCE, null), java.util.List.of(key, value))
        new Field(name, fieldType(new ArrowType.Map(false)), java.util.List.of(entries))
      case other => throw new UnsupportedTypeException(table, path, other)
    }
  }

  /** Spark type of a Lance field as sparklance reads it (some types are widened, see `readType`). */
  def toSpark(schema: LanceSchema, tableName: String): StructType = StructType(schema.fields.map(toSparkField(_, tableName)))

  /**
   * Field metadata that marks a column of a Lance type sparklance cannot map (its value: the Lance
   * logical type). Such a column reads as VOID in the schema, and statements that read or write it
   * are refused ([[UnsupportedColumnException]]); the others, DELETE among them, work.
   */
  val UnsupportedTypeKey = "lance.unsupported_type"

  /** The Lance type of a top-level field sparklance cannot map to Spark, if it is one. */
  def unsupported(f: LanceField, table: String): Option[String] =
    try { readType(f, table); None } catch { case _: UnsupportedTypeException => Some(f.logicalType) }

  /** The columns of `schema` (top-level names) whose Lance type sparklance cannot map, with that type. */
  def unsupportedColumns(schema: LanceSchema, table: String): Map[String, String] =
    schema.fields.flatMap(f => unsupported(f, table).map(f.name -> _)).toMap

  /** Whether a Spark column stands for a Lance column of a type sparklance cannot map. */
  def isUnsupported(f: StructField): Boolean = f.metadata.contains(UnsupportedTypeKey)

  /** A top-level column; one of a type sparklance cannot map reads as VOID, marked with its Lance type. */
  def toSparkField(f: LanceField, table: String): StructField = unsupported(f, table) match {
    case Some(lanceType) =>
      val comment = f.metadata.get(CommentKey).fold("")(c => s"$c; ") +
        s"Lance type $lanceType, which sparklance cannot read or write"
      StructField(f.name, NullType, nullable = true,
        new MetadataBuilder().putString(UnsupportedTypeKey, lanceType).putString(CommentKey, comment).build())
    case None => sparkField(f, table)
  }

  private def sparkField(f: LanceField, table: String): StructField = {
    val plain = StructField(f.name, readType(f, table), f.nullable)
    val field = IdentityColumns.toSpark(GeneratedColumns.toSpark(
      ColumnDefaults.toSpark(f.metadata.get(CommentKey).fold(plain)(plain.withComment), f.metadata), f.metadata), f.metadata)
    f.arrowType match {
      case fsl: ArrowType.FixedSizeList =>
        field.copy(metadata = new MetadataBuilder().withMetadata(field.metadata).putLong(VectorDimension, fsl.getListSize).build())
      case _ if f.blobEncoding.isDefined =>
        field.copy(metadata = new MetadataBuilder().withMetadata(field.metadata).putString(BlobEncoding.MetadataKey, "true").build())
      case _ if f.json =>
        field.copy(metadata = new MetadataBuilder().withMetadata(field.metadata).putString(JsonExtensionKey, Jsonb.ExtensionName).build())
      case _ => field
    }
  }

  /**
   * Whether the session lets Spark's TIME type be used (`spark.sql.timeType.enabled`): only then
   * are Lance's time32 / time64 columns TIME columns; otherwise they are unsupported columns.
   */
  def timeTypeEnabled: Boolean =
    scala.util.Try(org.apache.spark.sql.internal.SQLConf.get.getConfString("spark.sql.timeType.enabled"))
      .toOption.exists(_.trim.equalsIgnoreCase("true"))

  def readType(f: LanceField, table: String): DataType = f.arrowType match {
    // A dictionary field (one LanceSchema maps) reads as its values.
    case _ if f.storedLogicalType.isDefined => throw new UnsupportedTypeException(table, f.name, f.logicalType)
    // pylance's blob columns read as their bytes (fetched only when the column is read).
    case _ if f.blobEncoding.isDefined => BinaryType
    // JSON columns read as their text (see docs/format-types.md for why not VARIANT).
    case _ if f.json => StringType
    case _: ArrowType.Bool => BooleanType
    case i: ArrowType.Int => (i.getBitWidth, i.getIsSigned) match {
      case (8, true) => ByteType
      case (16, true) | (8, false) => ShortType
      case (32, true) | (16, false) => IntegerType
      case (64, true) | (32, false) => LongType
      case (64, false) => DecimalType(20, 0)
      case _ => throw new UnsupportedTypeException(table, f.name, f.logicalType)
    }
    case fp: ArrowType.FloatingPoint => fp.getPrecision match {
      case FloatingPointPrecision.HALF | FloatingPointPrecision.SINGLE => FloatType
      case FloatingPointPrecision.DOUBLE => DoubleType
    }
    case _: ArrowType.Utf8 | _: ArrowType.LargeUtf8 => StringType
    case _: ArrowType.Binary | _: ArrowType.LargeBinary | _: ArrowType.FixedSizeBinary => BinaryType
    case _: ArrowType.Date => DateType
    case t: ArrowType.Timestamp => if (t.getTimezone == null) TimestampNTZType else TimestampType
    case d: ArrowType.Decimal if d.getBitWidth == 128 => DecimalType(d.getPrecision, d.getScale)
    // Written back as decimal256: the Lance field keeps its type.
    case d: ArrowType.Decimal if d.getBitWidth == 256 && d.getPrecision <= DecimalType.MAX_PRECISION =>
      DecimalType(d.getPrecision, d.getScale)
    // Durations of any unit as Spark's microseconds (nanoseconds truncated, as for timestamps).
    case _: ArrowType.Duration => DayTimeIntervalType()
    case t: ArrowType.Time if timeTypeEnabled => TimeType(t.getUnit match {
      case TimeUnit.SECOND => 0
      case TimeUnit.MILLISECOND => 3
      case _ => TimeType.MAX_PRECISION
    })
    case _: ArrowType.Null => NullType
    case _: ArrowType.FixedSizeList =>
      val item = LanceField(-1, "item", f.arrowItemType.get, nullable = true)
      ArrayType(readType(item, table), containsNull = true)
    case _: ArrowType.List | _: ArrowType.LargeList =>
      val item = f.children.head
      ArrayType(readType(item, table), item.nullable)
    case _: ArrowType.Struct => StructType(f.children.map(sparkField(_, table)))
    case _: ArrowType.Map =>
      val entries = f.children.headOption.map(_.children).getOrElse(Nil)
      if (entries.size != 2) throw new UnsupportedTypeException(table, f.name, f.logicalType, "a map whose entries are not a key and a value")
      MapType(readType(entries(0), table), readType(entries(1), table), entries(1).nullable)
    case _ => throw new UnsupportedTypeException(table, f.name, f.logicalType)
  }
}

/** A column type sparklance cannot store or read (yet). */
class UnsupportedTypeException(table: String, column: String, tpe: Any, hint: String = "")
  extends sparklance.format.LanceException(
    s"Column '$column' of table $table has type ${tpe match {
      case d: DataType => d.sql
      case other => other.toString
    }}, which sparklance does not support${if (hint.nonEmpty) s": $hint" else "; supported types are listed in docs/types.md"}")

/**
 * A statement reads or writes a column whose Lance type sparklance cannot map to Spark (see
 * `SparkTypes.UnsupportedTypeKey`); statements that leave it alone work.
 */
class UnsupportedColumnException(val table: String, val column: String, val lanceType: String, action: String)
  extends sparklance.format.LanceException(
    s"Column '$column' of table $table has Lance type $lanceType, which sparklance cannot read or write; " +
    s"this statement $action it. Statements that neither read nor write the column work (SELECT of other columns, " +
    "DELETE, and UPDATE or MERGE that do not assign it)")

object UnsupportedColumnException {
  /**
   * Refuses a read of `required` columns of a table of Spark schema `tableSchema` that takes in a
   * column of an unmappable Lance type, other than those in `nullFilled` (which a row-level
   * statement carries along without reading them).
   */
  def refuseReads(table: String, tableSchema: StructType, required: StructType, nullFilled: Set[String] = Set.empty): Unit =
    required.fieldNames.filterNot(nullFilled).foreach { name =>
      tableSchema.fields.find(f => f.name == name && SparkTypes.isUnsupported(f)).foreach { f =>
        throw new UnsupportedColumnException(table, name, f.metadata.getString(SparkTypes.UnsupportedTypeKey), "reads")
      }
    }
}
