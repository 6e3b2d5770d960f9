package sparklance.format.table

import org.apache.arrow.vector.types.{DateUnit, FloatingPointPrecision, TimeUnit}
import org.apache.arrow.vector.types.pojo.ArrowType
import sparklance.format.UnsupportedFeatureException

/**
 * Lance's `logical_type` strings (LANCE-FORMAT.md, "Logical types") and the Arrow types they
 * stand for. Nested types name only the container; their children are separate schema fields,
 * except fixed-size lists, whose item type is spelled inside the string.
 */
object LogicalTypes {
  private def unitName(u: TimeUnit): String = u match {
    case TimeUnit.SECOND => "s"
    case TimeUnit.MILLISECOND => "ms"
    case TimeUnit.MICROSECOND => "us"
    case TimeUnit.NANOSECOND => "ns"
  }
  private def unitOf(s: String): TimeUnit = s match {
    case "s" => TimeUnit.SECOND
    case "ms" => TimeUnit.MILLISECOND
    case "us" => TimeUnit.MICROSECOND
    case "ns" => TimeUnit.NANOSECOND
    case other => throw new UnsupportedFeatureException(s"Unknown time unit '$other' in a Lance logical type")
  }

  /** The logical type of a field; `itemType` is consulted for fixed-size lists only. */
  def toLogical(t: ArrowType, fslItem: Option[ArrowType] = None, listOfStruct: Boolean = false): String = t match {
    case _: ArrowType.Bool => "bool"
    case _: ArrowType.Null => "null"
    case i: ArrowType.Int => (if (i.getIsSigned) "int" else "uint") + i.getBitWidth
    case f: ArrowType.FloatingPoint => f.getPrecision match {
      case FloatingPointPrecision.HALF => "halffloat"
      case FloatingPointPrecision.SINGLE => "float"
      case FloatingPointPrecision.DOUBLE => "double"
    }
    case _: ArrowType.Utf8 => "string"
    case _: ArrowType.LargeUtf8 => "large_string"
    case _: ArrowType.Binary => "binary"
    case _: ArrowType.LargeBinary => "large_binary"
    case b: ArrowType.FixedSizeBinary => s"fixed_size_binary:${b.getByteWidth}"
    case d: ArrowType.Date => if (d.getUnit == DateUnit.DAY) "date32:day" else "date64:ms"
    case t: ArrowType.Time => s"time${t.getBitWidth}:${unitName(t.getUnit)}"
    case d: ArrowType.Duration => s"duration:${unitName(d.getUnit)}"
    case ts: ArrowType.Timestamp =>
      s"timestamp:${unitName(ts.getUnit)}:${Option(ts.getTimezone).getOrElse("-")}"
    case d: ArrowType.Decimal => s"decimal:${d.getBitWidth}:${d.getPrecision}:${d.getScale}"
    case f: ArrowType.FixedSizeList =>
      val item = fslItem.getOrElse(throw new IllegalArgumentException("fixed_size_list needs its item type"))
      s"fixed_size_list:${toLogical(item)}:${f.getListSize}"
    case _: ArrowType.List => if (listOfStruct) "list.struct" else "list"
    case _: ArrowType.LargeList => if (listOfStruct) "large_list.struct" else "large_list"
    case _: ArrowType.Struct => "struct"
    case _: ArrowType.Map => "map"
    case other => throw new UnsupportedFeatureException(s"Arrow type $other has no Lance logical type in sparklance")
  }

  /**
   * Whether values of the type are lists of their one child in the file's rep/def levels: lists,
   * and maps (a list of `entries` structs of `key` and `value`).
   */
  def isList(t: ArrowType): Boolean =
    t.isInstanceOf[ArrowType.List] || t.isInstanceOf[ArrowType.LargeList] || t.isInstanceOf[ArrowType.Map]

  /**
   * A dictionary field's logical type, `dict:<value type>:<index type>:<ordered>` (Lance records
   * `false`: arrow-rs has no ordered dictionaries), split into the value type and the index type;
   * other logical types are returned as they are, without an index type.
   */
  def dictionaryOf(logical: String): (String, Option[ArrowType.Int]) =
    if (!logical.startsWith("dict:")) (logical, None)
    else {
      val parts = logical.split(":", -1)
      val index = if (parts.length >= 4) fromLogical(parts(parts.length - 2))._1 else null
      index match {
        case i: ArrowType.Int => (parts.slice(1, parts.length - 2).mkString(":"), Some(i))
        case _ => throw new UnsupportedFeatureException(s"Unsupported Lance dictionary type '$logical'")
      }
    }

  /** The logical type of a dictionary field of values of logical type `value`. */
  def dictionary(value: String, index: ArrowType.Int): String = s"dict:$value:${toLogical(index)}:false"

  /** Arrow type of a logical type; for fixed-size lists also the item's Arrow type. */
  def fromLogical(logical: String): (ArrowType, Option[ArrowType]) = {
    val simple: PartialFunction[String, ArrowType] = {
      case "bool" => ArrowType.Bool.INSTANCE
      case "null" => ArrowType.Null.INSTANCE
      case "int8" => new ArrowType.Int(8, true)
      case "int16" => new ArrowType.Int(16, true)
      case "int32" => new ArrowType.Int(32, true)
      case "int64" => new ArrowType.Int(64, true)
      case "uint8" => new ArrowType.Int(8, false)
      case "uint16" => new ArrowType.Int(16, false)
      case "uint32" => new ArrowType.Int(32, false)
      case "uint64" => new ArrowType.Int(64, false)
      case "halffloat" => new ArrowType.FloatingPoint(FloatingPointPrecision.HALF)
      case "float" => new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)
      case "double" => new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE)
      case "string" => ArrowType.Utf8.INSTANCE
      case "large_string" => ArrowType.LargeUtf8.INSTANCE
      case "binary" => ArrowType.Binary.INSTANCE
      case "large_binary" => ArrowType.LargeBinary.INSTANCE
      // Lance's JSON columns: JSONB values, the field naming the extension lance.json (see Jsonb).
      case sparklance.format.json.Jsonb.LogicalType => ArrowType.LargeBinary.INSTANCE
      case "date32:day" => new ArrowType.Date(DateUnit.DAY)
      case "date64:ms" => new ArrowType.Date(DateUnit.MILLISECOND)
      case "list" | "list.struct" => ArrowType.List.INSTANCE
      case "large_list" | "large_list.struct" => ArrowType.LargeList.INSTANCE
      case "struct" => ArrowType.Struct.INSTANCE
      // Lance records no key order: pylance writes and reads its maps unsorted.
      case "map" => new ArrowType.Map(false)
    }
    if (simple.isDefinedAt(logical)) return (simple(logical), None)
    val parts = logical.split(":", -1)
    parts(0) match {
      case "timestamp" if parts.length >= 3 =>
        val tz = logical.split(":", 3)(2)
        (new ArrowType.Timestamp(unitOf(parts(1)), if (tz == "-") null else tz), None)
      case "time32" | "time64" if parts.length == 2 =>
        (new ArrowType.Time(unitOf(parts(1)), parts(0).drop(4).toInt), None)
      case "duration" if parts.length == 2 => (new ArrowType.Duration(unitOf(parts(1))), None)
      case "decimal" if parts.length == 4 =>
        (new ArrowType.Decimal(parts(2).toInt, parts(3).toInt, parts(1).toInt), None)
      case "fixed_size_binary" if parts.length == 2 => (new ArrowType.FixedSizeBinary(parts(1).toInt), None)
      case "fixed_size_list" if parts.length >= 3 =>
        val item = logical.substring("fixed_size_list:".length, logical.lastIndexOf(':'))
        val (itemType, _) = fromLogical(item)
        (new ArrowType.FixedSizeList(parts.last.toInt), Some(itemType))
      case _ => throw new UnsupportedFeatureException(s"Unsupported Lance logical type '$logical'")
    }
  }
}
