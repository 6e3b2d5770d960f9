package sparklance.spark.scan

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.catalog.functions.ScalarFunction
import org.apache.spark.sql.connector.expressions.{Literal, NamedReference, UserDefinedScalarFunc}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.types.{BooleanType, DataType}

/**
 * A predicate true on every row that carries `array_contains(column, value)` to a Lance scan, where
 * a LABEL_LIST index on the column names the rows holding the value ([[ArrayContainsSkippingRule]]).
 * Spark pushes no `array_contains` into a DSv2 scan, but it does push a function of this kind, as
 * a `BOOLEAN_EXPRESSION` around a [[UserDefinedScalarFunc]]. The scan takes predicates holding it
 * whole (Spark does not evaluate them after the scan); anywhere else it is evaluated as true, so
 * it never changes a query's rows: Spark's own `array_contains` beside it still decides them.
 */
final case class ArrayContainsHint(listType: DataType, elementType: DataType) extends ScalarFunction[java.lang.Boolean] {
  override def inputTypes(): Array[DataType] = Array(listType, elementType)
  override def resultType(): DataType = BooleanType
  override def isResultNullable: Boolean = false
  override def name(): String = ArrayContainsHint.Name
  override def canonicalName(): String = ArrayContainsHint.CanonicalName
  override def produceResult(input: InternalRow): java.lang.Boolean = true
}

object ArrayContainsHint {
  val Name = "lance_array_contains_hint"
  val CanonicalName: String = "sparklance." + Name

  /** The column and value of a pushed hint; None for any other predicate. */
  def unapply(p: Predicate): Option[(NamedReference, Literal[_])] = p.name() match {
    case "BOOLEAN_EXPRESSION" => p.children().toSeq match {
      case Seq(f: UserDefinedScalarFunc) if f.canonicalName() == CanonicalName => f.children().toSeq match {
        case Seq(column: NamedReference, value: Literal[_]) => Some(column -> value)
        case _ => None
      }
      case _ => None
    }
    case _ => None
  }

  /** Whether `p` holds a hint: the copy of a conjunct [[ArrayContainsSkippingRule]] added, which the scan takes whole. */
  def isHint(p: Predicate): Boolean = unapply(p).isDefined

  def within(p: Predicate): Boolean = unapply(p).isDefined || (p.name() match {
    case "AND" | "OR" => p.children().exists { case c: Predicate => within(c); case _ => false }
    case _ => false
  })
}
