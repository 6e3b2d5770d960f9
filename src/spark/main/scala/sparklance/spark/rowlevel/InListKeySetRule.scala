package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.expressions.{And, Expression, InSet, Literal, PredicateHelper}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.execution.{ColumnarRule, FilterExec, SparkPlan}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._

/**
 * Tests a long IN list of integers (`id IN (1, 5, ...)`, which Spark's optimizer turns into an
 * `InSet`) against a [[LongKeySet]] ([[SourceKeysContain]]) instead of Spark's set of boxed values,
 * whose lookup walks a hash trie for every row: a DELETE by a list of keys tests every row of
 * the target. Integer types Spark tests with a `switch` (lists up to
 * `spark.sql.optimizer.inSetSwitchThreshold` values) are left to it.
 *
 * Only a conjunct of a physical filter's condition is replaced: there a null (a null value, or a
 * value missing from a list holding null) and false both drop the row, while `key_set_contains`
 * answers false where `InSet` answers null. Under a NOT, or in a projection, the two differ and
 * nothing is replaced. The rule works on the physical plan, after the list was pushed to the scan
 * (where data skipping uses it) as `InSet` was.
 */
object InListKeySetRule extends ColumnarRule with PredicateHelper {
  override def preColumnarTransitions: Rule[SparkPlan] = Filters

  private object Filters extends Rule[SparkPlan] {
    override def apply(plan: SparkPlan): SparkPlan = plan.transformUp {
      case f: FilterExec if splitConjunctivePredicates(f.condition).exists(replaceable) => f.copy(condition = keyTested(f.condition))
    }
  }

  /** A filter's `condition` with its conjuncts that are long IN lists of integers tested against key sets. */
  def keyTested(condition: Expression): Expression =
    splitConjunctivePredicates(condition).map {
      case in: InSet if replaceable(in) => keySet(in)
      case other => other
    }.reduce(And)

  private def replaceable(e: Expression): Boolean = e match {
    case in: InSet if SourceKeysContain.supports(in.child.dataType) => in.child.dataType match {
      case ByteType | ShortType | IntegerType | DateType => in.hset.size > SQLConf.get.optimizerInSetSwitchThreshold
      case _ => true
    }
    case _ => false
  }

  /** The list's non-null values held as the keys of a [[SourceKeysContain]]: a null in the list matches nothing. */
  private def keySet(in: InSet): Expression = {
    val values = in.hset.iterator.filter(_ != null).toArray[Any]
    SourceKeysContain(Literal(new GenericArrayData(values), ArrayType(in.child.dataType, containsNull = false)), in.child)
  }
}
