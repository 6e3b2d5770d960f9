package sparklance.spark.scan

import org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute
import org.apache.spark.sql.catalyst.expressions.{And, Attribute, BinaryComparison, Cast, DateAdd, EqualTo, Expression, GreaterThan,
  GreaterThanOrEqual, LessThan, LessThanOrEqual, Literal, PredicateHelper}
import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.apache.spark.sql.catalyst.plans.logical.{Filter, LogicalPlan}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation
import org.apache.spark.sql.types.{DateType, TimestampNTZType, TimestampType}
import sparklance.spark.{GeneratedColumns, LanceTable}

/**
 * Data skipping through a generated column, as Delta derives partition filters: for a column
 * `d DATE GENERATED ALWAYS AS (CAST(ts AS DATE))`, a comparison of `ts` with a constant in a
 * filter on the table adds the comparison of `d` it implies, which the scan checks against `d`'s
 * zone maps. The filter on `ts` stays. For a TIMESTAMP (with time zone) the date a value falls on
 * depends on the session time zone that wrote it, so the added range is one day wider on each
 * side (no zone is more than a day off); TIMESTAMP_NTZ and DATE are exact.
 */
object GeneratedColumnSkippingRule extends Rule[LogicalPlan] with PredicateHelper {
  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformUp {
    case f @ Filter(condition, relation: DataSourceV2Relation) if relation.table.isInstanceOf[LanceTable] =>
      val dates = dateColumns(relation)
      if (dates.isEmpty) f
      else {
        val conjuncts = splitConjunctivePredicates(condition)
        val added = conjuncts.flatMap(implied(_, dates)).filterNot(a => conjuncts.exists(_.semanticEquals(a)))
        if (added.isEmpty) f else f.copy(condition = (conjuncts ++ added).reduce(And))
      }
  }

  /** Source column -> the generated DATE columns that are `CAST(source AS DATE)`. */
  private def dateColumns(relation: DataSourceV2Relation): Seq[(Attribute, Attribute)] = {
    val table = relation.table.asInstanceOf[LanceTable]
    def column(name: String) = relation.output.find(_.name.equalsIgnoreCase(name))
    GeneratedColumns.of(table.sparkSchema).filter(_._1.dataType == DateType).flatMap { case (f, e) =>
      CatalystSqlParser.parseExpression(e) match {
        case Cast(u: UnresolvedAttribute, DateType, _, _) if u.nameParts.size == 1 =>
          for (source <- column(u.nameParts.head) if Seq(TimestampType, TimestampNTZType, DateType).contains(source.dataType);
               generated <- column(f.name)) yield source -> generated
        case _ => None
      }
    }
  }

  /** The comparisons of generated columns a comparison of their source with a constant implies. */
  private def implied(e: Expression, dates: Seq[(Attribute, Attribute)]): Seq[Expression] = {
    // The comparison as `source <op> constant`, flipped when the constant is on the left.
    val normalized: Option[(Attribute, String, Literal)] = e match {
      case c: BinaryComparison => (c.left, c.right) match {
        case (a: Attribute, l: Literal) if l.value != null => op(c).map(o => (a, o, l))
        case (l: Literal, a: Attribute) if l.value != null => op(c).map(o => (a, flip(o), l))
        case _ => None
      }
      case _ => None
    }
    normalized.toSeq.flatMap { case (source, o, value) =>
      dates.filter(_._1.semanticEquals(source)).map { case (_, generated) =>
        val day = Cast(value, DateType, Some(conf.sessionLocalTimeZone))
        val slack = if (source.dataType == TimestampType) 1 else 0
        def shifted(by: Int): Expression = if (by == 0) day else DateAdd(day, Literal(by))
        o match {
          case ">" | ">=" => GreaterThanOrEqual(generated, shifted(-slack))
          case "<" | "<=" => LessThanOrEqual(generated, shifted(slack))
          case _ => And(GreaterThanOrEqual(generated, shifted(-slack)), LessThanOrEqual(generated, shifted(slack)))
        }
      }
    }
  }

  private def op(c: BinaryComparison): Option[String] = c match {
    case _: GreaterThan => Some(">")
    case _: GreaterThanOrEqual => Some(">=")
    case _: LessThan => Some("<")
    case _: LessThanOrEqual => Some("<=")
    case _: EqualTo => Some("=")
    case _ => None
  }

  private def flip(o: String): String = o match {
    case ">" => "<"
    case ">=" => "<="
    case "<" => ">"
    case "<=" => ">="
    case other => other
  }
}
