package sparklance.spark

import org.apache.arrow.vector.types.{DateUnit, FloatingPointPrecision, TimeUnit}
import org.apache.arrow.vector.types.pojo.{ArrowType, Field, FieldType}
import scala.jdk.CollectionConverters._
import org.apache.spark.sql.types._
import sparklance.format.table.{LanceField, LanceSchema}

/** The type mapping between Spark and Lance (Arrow), in both directions; see the README's table. */
object SparkTypes {
  /** Spark's timestamps are UTC instants; Lance stores them as microseconds with zone "UTC". */
  val TimestampZone = "UTC"

  def toLance(schema: StructType, tableName: String): LanceSchema = {
    val arrowSchema = new org.apache.arrow.vector.types.pojo.Schema(
      schema.fields.toSeq.map(f => toArrowField(f, tableName, f.name)).asJava)
    LanceSchema.fromArrow(arrowSchema)
  }

  private def toArrowField(f: StructField, table: String, path: String): Field = {
    val arrow: ArrowType = f.dataType match {
      case BooleanType => ArrowType.Bool.INSTANCE
      case ByteType => new ArrowType.Int(8, true)
      case ShortType => new ArrowType.Int(16, true)
      case IntegerType => new ArrowType.Int(32, true)
      case LongType => new ArrowType.Int(64, true)
      case FloatType => new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)
      case DoubleType => new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)
      case _: StringType | _: CharType | _: VarcharType => ArrowType.Utf8.INSTANCE
      case BinaryType => ArrowType.Binary.INSTANCE
      case DateType => new ArrowType.Date(DateUnit.DAY)
      case TimestampType => new ArrowType.Timestamp(TimeUnit.MICROSECOND, TimestampZone)
      case TimestampNTZType => new ArrowType.Timestamp(TimeUnit.MICROSECOND, null)
      case d: DecimalType => new ArrowType.Decimal(d.precision, d.scale, 128)
      case other => throw new UnsupportedTypeException(table, path, other)
    }
    new Field(f.name, new FieldType(f.nullable, arrow, null), java.util.List.of())
  }

  /** Spark type of a Lance field as sparklance reads it (some types are widened, see `readType`). */
  def toSpark(schema: LanceSchema, tableName: String): StructType =
    StructType(schema.fields.map(f => StructField(f.name, readType(f, tableName), f.nullable)))

  def readType(f: LanceField, table: String): DataType = f.arrowType match {
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
    case _ => throw new UnsupportedTypeException(table, f.name, f.logicalType)
  }
}

/** A column type sparklance cannot store or read (yet). */
class UnsupportedTypeException(table: String, column: String, tpe: Any)
  extends sparklance.format.LanceException(
    s"Column '$column' of table $table has type ${tpe match {
      case d: DataType => d.sql
      case other => other.toString
    }}, which sparklance does not support; supported types are listed in the README")
