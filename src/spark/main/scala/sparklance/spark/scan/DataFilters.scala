package sparklance.spark.scan

import org.apache.spark.sql.connector.expressions.{Literal, NamedReference, UserDefinedScalarFunc}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.UTF8String
import sparklance.format.skipping.{ColumnFilter, ZoneValue, ZoneValues}
import sparklance.format.skipping.ColumnFilter.CompareOp
import sparklance.format.table.{LanceField, LanceSchema}

/**
 * Spark's pushed predicates as the [[ColumnFilter]]s data skipping judges zones by: comparisons
 * (=, <=>, <>, <, <=, >, >=) and IN between a column and literals, IS [NOT] NULL, STARTS_WITH, and
 * AND / OR / NOT of them, on top-level and nested columns of integer, date, timestamp, floating
 * point, string (binary collation), binary, boolean and decimal types; `lance_match` calls on a
 * string column ([[sparklance.spark.search.TextMatchFunction]]), which its INVERTED index answers;
 * and `array_contains` of a list column and a literal ([[ArrayContainsHint]]), which its LABEL_LIST
 * index answers. Spark still evaluates every predicate on the rows read (a hint stands for one).
 */
object DataFilters {
  /**
   * A filter keeping at least the rows `p` keeps, on `schema`'s columns; None when no part of `p`
   * can be judged. Parts of an AND it cannot judge are left out, which keeps more rows.
   */
  def of(p: Predicate, schema: LanceSchema): Option[ColumnFilter] = translate(p, schema, exact = false)

  /** A filter keeping exactly the rows `p` keeps; None when a part of `p` cannot be judged. */
  def exactly(p: Predicate, schema: LanceSchema): Option[ColumnFilter] = translate(p, schema, exact = true)

  private def translate(p: Predicate, schema: LanceSchema, exact: Boolean): Option[ColumnFilter] = {
    val children = p.children().toSeq
    p.name() match {
      case "AND" =>
        val Seq(l, r) = children.map(c => translate(c.asInstanceOf[Predicate], schema, exact))
        if (exact) for (a <- l; b <- r) yield ColumnFilter.And(a, b)
        else (l ++ r).reduceOption(ColumnFilter.And(_, _))
      case "OR" =>
        val Seq(l, r) = children.map(c => translate(c.asInstanceOf[Predicate], schema, exact))
        for (a <- l; b <- r) yield ColumnFilter.Or(a, b)
      // A negation is as wide as its operand is exact: NOT of a wider filter would keep fewer rows.
      case "NOT" => translate(children.head.asInstanceOf[Predicate], schema, exact = true).map(ColumnFilter.Not)
      // A boolean expression Spark hands over as it is: a lance_match call with a constant query, or
      // an array_contains hint.
      case "BOOLEAN_EXPRESSION" => children.head match {
        case _ if ArrayContainsHint.isHint(p) => ArrayContainsHint.unapply(p).flatMap { case (c, l) =>
          for (f <- field(c, schema) if ZoneValues.listElement(f).isDefined; v <- value(l)) yield ColumnFilter.ListContains(f.id, v)
        }
        case f: UserDefinedScalarFunc => sparklance.spark.search.TextMatchFunction.binding(f).flatMap { b =>
          (column(f.children()(0), schema), f.children()(1)) match {
            case (Some(field), l: Literal[_]) if l.value() != null =>
              Some(ColumnFilter.TextMatch(field.id, l.value().toString, b.analyzer, b.index))
            case _ => None
          }
        }
        case _ => None
      }
      case "IS_NULL" => column(children.head, schema).map(f => ColumnFilter.IsNull(f.id))
      case "IS_NOT_NULL" => column(children.head, schema).map(f => ColumnFilter.IsNotNull(f.id))
      case "STARTS_WITH" => (column(children.head, schema), children(1)) match {
        case (Some(f), l: Literal[_]) => value(l).collect { case ZoneValue.Bytes(prefix) => ColumnFilter.StartsWith(f.id, prefix) }
        case _ => None
      }
      case "IN" => column(children.head, schema).flatMap { f =>
        // One pass without an Option per value: a MERGE's runtime filter holds its source's every key.
        val values = Vector.newBuilder[ZoneValue]
        val translated = children.iterator.drop(1).forall {
          case l: Literal[_] if l.value() == null => true // matches no row
          case l: Literal[_] => value(l).exists { v => values += v; true }
          case _ => false
        }
        if (translated) Some(ColumnFilter.In(f.id, values.result())) else None
      }
      case op @ ("=" | "<=>" | "<>" | "<" | "<=" | ">" | ">=") => children match {
        case Seq(c, l: Literal[_]) => comparison(op, c, l, schema)
        case Seq(l: Literal[_], c) => comparison(flipped(op), c, l, schema)
        case _ => None
      }
      case _ => None
    }
  }

  private def flipped(op: String): String = op match {
    case "<" => ">"
    case "<=" => ">="
    case ">" => "<"
    case ">=" => "<="
    case symmetric => symmetric
  }

  private def comparison(op: String, c: org.apache.spark.sql.connector.expressions.Expression, l: Literal[_],
      schema: LanceSchema): Option[ColumnFilter] = column(c, schema).flatMap { f =>
    if (l.value() == null) {
      // `c <=> NULL` is IS NULL; any other comparison with NULL is never true, which no zone test states.
      if (op == "<=>") Some(ColumnFilter.IsNull(f.id)) else None
    } else value(l).map { v =>
      op match {
        case "=" => ColumnFilter.Compare(f.id, CompareOp.Equal, v)
        // Null-safe: false, not unknown, on a null, which matters under NOT.
        case "<=>" => ColumnFilter.And(ColumnFilter.IsNotNull(f.id), ColumnFilter.Compare(f.id, CompareOp.Equal, v))
        case "<>" => ColumnFilter.NotEqual(f.id, v)
        case "<" => ColumnFilter.Compare(f.id, CompareOp.Less, v)
        case "<=" => ColumnFilter.Compare(f.id, CompareOp.LessOrEqual, v)
        case ">" => ColumnFilter.Compare(f.id, CompareOp.Greater, v)
        case ">=" => ColumnFilter.Compare(f.id, CompareOp.GreaterOrEqual, v)
      }
    }
  }

  /** The table field of comparable values a column reference names. */
  private def column(e: org.apache.spark.sql.connector.expressions.Expression, schema: LanceSchema): Option[LanceField] =
    // Spark compares a JSON column's text and a dictionary column's values, which its index does not hold.
    field(e, schema).filter(ZoneValues.supports)

  /** The table field a column reference names, through structs for nested columns. */
  private def field(e: org.apache.spark.sql.connector.expressions.Expression, schema: LanceSchema): Option[LanceField] = e match {
    case r: NamedReference =>
      val path = r.fieldNames().toSeq
      path.tail.foldLeft(schema.field(path.head)) { (parent, name) => parent.flatMap(_.children.find(_.name == name)) }
    case _ => None
  }

  /** A literal as data skipping compares it, in Spark's internal representation of its type. */
  private def value(l: Literal[_]): Option[ZoneValue] = (l.dataType(), l.value()) match {
    case (ByteType, v: java.lang.Byte) => Some(ZoneValue.Integral(v.longValue))
    case (ShortType, v: java.lang.Short) => Some(ZoneValue.Integral(v.longValue))
    case (IntegerType | DateType, v: java.lang.Integer) => Some(ZoneValue.Integral(v.longValue))
    case (LongType | TimestampType | TimestampNTZType, v: java.lang.Long) => Some(ZoneValue.Integral(v))
    case (FloatType, v: java.lang.Float) => Some(ZoneValue.Floating(v.doubleValue))
    case (DoubleType, v: java.lang.Double) => Some(ZoneValue.Floating(v))
    // Only the default collation orders strings by their UTF-8 bytes.
    case (StringType, v: UTF8String) if l.dataType() == StringType => Some(ZoneValue.Bytes(v.getBytes))
    case (BinaryType, v: Array[Byte]) => Some(ZoneValue.Bytes(v))
    case (BooleanType, v: java.lang.Boolean) => Some(ZoneValue.Bool(v))
    case (_: DecimalType, v: Decimal) => Some(ZoneValue.Decimal(v.toJavaBigDecimal))
    case _ => None
  }
}
