package sparklance.spark

import org.apache.spark.sql.SparkSessionExtensions
import sparklance.spark.rowlevel.{AssignedColumnsRule, CarriedBlobsRule, ConditionColumnsRule, MergeSourceKeyFilter, OuterMergeRule, TargetKeyPruning}

/**
 * sparklance's session extension (`spark.sql.extensions=sparklance.spark.LanceSparkSessionExtensions`,
 * which `sparklance.configure` sets). It tells the table which columns an UPDATE or MERGE assigns,
 * which Spark's row-level write API does not, so that the statement can rewrite only those
 * columns where most of a fragment's rows change (see [[rowlevel.RewriteMode]]); and it plans
 * row-level statements to read and move less: see [[ConditionColumnsRule]], [[CarriedBlobsRule]], [[MergeSourceKeyFilter]],
 * [[OuterMergeRule]] and [[TargetKeyPruning]] (with [[rowlevel.CollectedKeysPlanning]]); and optimized writes keep an ordered input's order
 * ([[write.OrderedInputRule]]) and cut their shuffle into tasks of one fragment's rows ([[write.FragmentSizedShuffle]]) or drop it when the input's partitions are large ([[write.ShuffleFreeWrite]]); and `ALTER COLUMN ... SET NOT NULL` runs, checked against the data ([[SetNotNullRule]]);
 * and writes of data tagged as vectors of another dimension than the column's are refused ([[write.VectorInputCheck]]);
 * and the table function `vector_search` finds the rows nearest a vector ([[search.VectorSearchFunction]]), as
 * ORDER BY a vector distance LIMIT k does with a vector index ([[search.NearestByIndexRule]]), and an
 * APPROX NEAREST join probes the index for each query row, and an EXACT NEAREST join (or an APPROX one
 * without an index) searches the table's vectors for blocks of query rows ([[search.NearestJoinRule]]);
 * and the table function `text_search` searches a column's INVERTED index ([[search.TextSearchFunction]]), and
 * `hybrid_search` fuses the two searches by reciprocal rank fusion ([[search.HybridSearchFunction]]), and
 * `lance_match(column, query)` tests text for a query's tokens, bound to the column's INVERTED index
 * ([[search.TextMatchFunction]], [[search.TextMatchIndexRule]]);
 * and a LABEL_LIST index skips rows for `array_contains` ([[scan.ArrayContainsSkippingRule]]);
 * and Delta's option `readChangeFeed` reads change data ([[changes.ReadChangeFeedRule]]);
 * and writes compute generated columns they leave out ([[GeneratedColumnsRule]]), and a filter on the column a
 * generated DATE column casts adds the filter on it it implies ([[scan.GeneratedColumnSkippingRule]]);
 * and ADD CONSTRAINT ... CHECK refuses a constraint existing rows violate naming their count ([[AddConstraintStrategy]]);
 * and COUNT(*) is answered from metadata without a job ([[scan.CountScanStrategy]]), with a filter from the
 * rows the table's indices decide ([[scan.FilteredCountStrategy]]);
 * and a filtered scan decodes the columns its filter does not read only for the rows the filter keeps ([[scan.ScanPrefilterStrategy]]);
 * and filters test long IN lists of integers against a primitive key set ([[rowlevel.InListKeySetRule]]).
 */
final class LanceSparkSessionExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectHintResolutionRule(new changes.ReadChangeFeedRule(_))
    // Before AssignedColumnsRule, which must see the generated columns an UPDATE assigns.
    extensions.injectResolutionRule(_ => GeneratedColumnsRule)
    extensions.injectResolutionRule(_ => AssignedColumnsRule)
    extensions.injectResolutionRule(_ => SetNotNullRule)
    extensions.injectPostHocResolutionRule(new search.NearestJoinRule(_))
    extensions.injectCheckRule(_ => sparklance.spark.write.VectorInputCheck)
    extensions.injectCheckRule(_ => rowlevel.IdentityUpdateCheck)
    extensions.injectOptimizerRule(_ => ConditionColumnsRule)
    extensions.injectOptimizerRule(_ => CarriedBlobsRule)
    // TargetKeyPruning before MergeSourceKeyFilter, which leaves alone a target read it filtered.
    extensions.injectOptimizerRule(new TargetKeyPruning(_))
    extensions.injectOptimizerRule(new MergeSourceKeyFilter(_))
    extensions.injectOptimizerRule(_ => OuterMergeRule)
    extensions.injectOptimizerRule(_ => sparklance.spark.write.OrderedInputRule)
    extensions.injectQueryStageOptimizerRule(sparklance.spark.write.FragmentSizedShuffle(_))
    extensions.injectQueryStagePrepRule(sparklance.spark.write.ShuffleFreeWrite(_))
    extensions.injectQueryStagePrepRule(_ => rowlevel.CollectedKeysPlanning)
    extensions.injectOptimizerRule(new search.NearestByIndexRule(_))
    extensions.injectOptimizerRule(_ => search.TextMatchIndexRule)
    extensions.injectOptimizerRule(_ => scan.ArrayContainsSkippingRule)
    extensions.injectOptimizerRule(_ => scan.GeneratedColumnSkippingRule)
    extensions.injectPlannerStrategy(_ => search.ExactNearestStrategy)
    extensions.injectPlannerStrategy(_ => AddConstraintStrategy)
    extensions.injectColumnar(_ => rowlevel.InListKeySetRule)
    extensions.injectPlannerStrategy(_ => scan.CountScanStrategy)
    extensions.injectPlannerStrategy(_ => scan.FilteredCountStrategy)
    extensions.injectPlannerStrategy(_ => scan.ScanPrefilterStrategy)
    search.VectorSearchFunction.register(extensions)
    search.TextSearchFunction.register(extensions)
    search.HybridSearchFunction.register(extensions)
    search.TextMatchFunction.register(extensions)
  }
}
