package sparklance.spark.rowlevel

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, BloomFilterMightContain, DynamicPruningSubquery, EqualTo, Expression, Literal, PredicateHelper, ScalarSubquery, XxHash64}
import org.apache.spark.sql.catalyst.expressions.aggregate.{BloomFilterAggregate, CollectSet}
import org.apache.spark.sql.catalyst.plans.RightOuter
import org.apache.spark.sql.catalyst.plans.logical.{Aggregate, Filter, Join, LogicalPlan, WriteDelta}
import org.apache.spark.sql.catalyst.rules.Rule
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import sparklance.spark.scan.KeySetFilter

/**
 * A MERGE with a WHEN NOT MATCHED clause joins the target to the source with a right outer join,
 * which Spark cannot plan as a broadcast of the (usually small) source: it shuffles every target
 * row to meet the few source rows. This rule filters the target read by the source's join keys,
 * gathered by a scalar subquery on the source the way Spark's own runtime filters are, so only
 * target rows that may match reach the shuffle:
 *  - one integral key (integers, dates, timestamps) of a source Spark knows to hold at most
 *    [[MergeSourceKeyFilter.MaxExactKeys]] rows: the exact set of keys ([[SourceKeysContain]]);
 *  - otherwise a Bloom filter of the keys. A false positive is a row the join drops as before; a
 *    target row without a match had no part in the result.
 *
 * It applies to keys of types whose equal values hash equally, when the source is deterministic
 * and no larger than Spark's Bloom filter creation-side threshold
 * (`spark.sql.optimizer.runtime.bloomFilter.creationSideThreshold`, 10 MB by default), since the
 * subquery reads the source a second time, and not when Spark's runtime Bloom filters are off.
 * Nor where [[TargetKeyPruning]] (which runs before it) has put its dynamic pruning filter on the
 * join's one integral or string key: the target's scan then keeps exactly the rows holding a source key
 * ([[sparklance.spark.scan.KeySetFilter]]), from the keys that filter's own subquery gathers, and
 * a filter here would read the source once more for nothing.
 */
final class MergeSourceKeyFilter(session: SparkSession) extends Rule[LogicalPlan] with PredicateHelper {

  override def apply(plan: LogicalPlan): LogicalPlan = plan.transformDown {
    case w: WriteDelta if conf.getConf(SQLConf.RUNTIME_BLOOM_FILTER_ENABLED) =>
      RowLevelPlans.targetRead(w).fold[LogicalPlan](w) { read =>
        val query = w.query.transformDown {
          case j: Join if j.joinType == RightOuter && j.left.exists(_ eq read.relation) && !filtered(j.left) =>
            keys(j, read).filterNot { case (targetKeys, _) => keptByScan(targetKeys, j.left, read) }
              .fold[LogicalPlan](j) { case (targetKeys, sourceKeys) =>
                val filter = (targetKeys, sourceKeys) match {
                  case (Seq(targetKey), Seq(sourceKey)) if exact(sourceKey, j.right) =>
                    SourceKeysContain(ScalarSubquery(keySetOf(sourceKey, j.right)), targetKey)
                  case _ => BloomFilterMightContain(ScalarSubquery(bloomOf(sourceKeys, j.right)), new XxHash64(targetKeys))
                }
                j.withNewChildren(Seq(j.left.transformUp { case r if r eq read.relation => Filter(filter, r) }, j.right))
              }
        }
        w.withNewChildren(Seq(query))
      }
  }

  /** The equality conjuncts of the join condition between target columns and source expressions. */
  private def keys(join: Join, read: RowLevelPlans.TargetRead): Option[(Seq[Expression], Seq[Expression])] = {
    val target = read.relation.outputSet
    val source = join.right.outputSet
    def onTarget(e: Expression) = e.deterministic && e.references.nonEmpty && e.references.subsetOf(target) && hashable(e.dataType)
    def onSource(e: Expression) = e.deterministic && e.references.nonEmpty && e.references.subsetOf(source) && hashable(e.dataType)
    val pairs = join.condition.toSeq.flatMap(splitConjunctivePredicates).collect {
      case EqualTo(l, r) if onTarget(l) && onSource(r) => (l, r)
      case EqualTo(l, r) if onSource(l) && onTarget(r) => (r, l)
    }
    // The subquery reads the source a second time: a source that may differ between the two
    // reads (rand(), uuid()) could leave out keys the join then matches. Spark's analysis refuses
    // such MERGE sources today; the rule does not rely on that.
    if (pairs.isEmpty || !join.right.deterministic || !SourceSize.small(join.right)) None else Some((pairs.map(_._1), pairs.map(_._2)))
  }

  /**
   * Whether the target's read carries a dynamic pruning filter on the join's only key, of a type
   * the scan keeps exactly the rows of whose key is among the filter's values.
   */
  private def keptByScan(targetKeys: Seq[Expression], target: LogicalPlan, read: RowLevelPlans.TargetRead): Boolean =
    targetKeys match {
      case Seq(key: Attribute) if KeySetFilter.supports(key.dataType) => target.exists {
        case Filter(condition, child) if child eq read.relation => splitConjunctivePredicates(condition).exists {
          case d: DynamicPruningSubquery => d.pruningKey.semanticEquals(key)
          case _ => false
        }
        case _ => false
      }
      case _ => false
    }

  /** Whether the source's keys are few enough, by its known row count, to be held exactly. */
  private def exact(sourceKey: Expression, source: LogicalPlan): Boolean =
    SourceKeysContain.supports(sourceKey.dataType) && SourceSize.rowsAtMost(source).exists(_ <= MergeSourceKeyFilter.MaxExactKeys)

  /** The optimized plan of one row holding the distinct (non-null) keys of the source. */
  private def keySetOf(sourceKey: Expression, source: LogicalPlan): LogicalPlan =
    session.sessionState.optimizer.execute(
      Aggregate(Nil, Seq(Alias(CollectSet(sourceKey).toAggregateExpression(), "source_keys")()), source))

  /** The optimized plan of one row holding the Bloom filter of the source's keys. */
  private def bloomOf(sourceKeys: Seq[Expression], source: LogicalPlan): LogicalPlan = {
    val items = SourceSize.rowsAtMost(source).filter(_ > 0).map(_.toLong)
      .getOrElse(conf.getConf(SQLConf.RUNTIME_BLOOM_FILTER_EXPECTED_NUM_ITEMS))
    // 16 bits a key: about one false positive in 2,000 target rows (Spark caps items and bits by
    // its own settings).
    val bits = math.max(items * MergeSourceKeyFilter.BitsPerKey, 1L << 13)
    val bloom = new BloomFilterAggregate(new XxHash64(sourceKeys), Literal(items), Literal(bits))
    // Subqueries are optimized in an earlier batch than this one, so this one optimizes its own.
    session.sessionState.optimizer.execute(Aggregate(Nil, Seq(Alias(bloom.toAggregateExpression(), "source_keys")()), source))
  }

  /**
   * Key types whose equal values hash equally. Not floating point (0.0 = -0.0, and the join
   * normalizes them only later), nor strings of a collation other than binary ('a' = 'A').
   */
  private def hashable(t: DataType): Boolean = t match {
    case BooleanType | ByteType | ShortType | IntegerType | LongType | DateType | TimestampType | TimestampNTZType |
         BinaryType | _: DecimalType => true
    case s: StringType => s == StringType
    case _ => false
  }

  private def filtered(plan: LogicalPlan): Boolean = plan.exists {
    case f: Filter => f.condition.exists(e => e.isInstanceOf[BloomFilterMightContain] || e.isInstanceOf[SourceKeysContain])
    case _ => false
  }
}

object MergeSourceKeyFilter {
  val BitsPerKey = 16L
  /**
   * The most keys held exactly: 8 MB of longs, a part of the plan each task deserializes (its
   * Bloom filter would be 2 MB).
   */
  val MaxExactKeys = 1L << 20
}
