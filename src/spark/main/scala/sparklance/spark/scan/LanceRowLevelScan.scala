package sparklance.spark.scan

import org.apache.spark.sql.catalyst.expressions.Expression
import org.apache.spark.sql.connector.expressions.{Expressions, NamedReference}
import org.apache.spark.sql.connector.expressions.filter.Predicate
import org.apache.spark.sql.connector.read.SupportsRuntimeV2Filtering
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import sparklance.format.proto.TableProtos.DataFragment
import sparklance.format.skipping.ColumnFilter
import sparklance.spark.LanceTable

/**
 * The scan of a DELETE / UPDATE / MERGE. Spark's runtime group filter (4.2+) first finds which
 * fragments hold matching rows and passes `_fragid IN (...)` here, so the rewrite reads only those.
 * Without `groupFilter` the scan asks for no runtime filter: it reads only the columns the
 * statement's conditions read, which the filter's own subquery would read from every fragment, or
 * it evaluates the `condition` itself on those columns first and reads the others of the rows it
 * keeps ([[Prefilter]]).
 */
final class LanceRowLevelScan(table: LanceTable, required: StructType, options: CaseInsensitiveStringMap,
    groupFilter: Boolean, dataFilter: Option[ColumnFilter], pushed: Seq[Predicate], nullFilled: Set[String] = Set.empty,
    condition: Option[Expression] = None)
    extends LanceScan(table, required, options, None, None, None, dataFilter, pushed, nullFilled, condition)
    with SupportsRuntimeV2Filtering {

  @volatile private var selected: Option[Set[Long]] = None
  @volatile private var keySets: Seq[KeySetFilter] = Nil

  override protected def keyFilters: Seq[KeySetFilter] = keySets

  override protected def fragments: Seq[DataFragment] =
    selected.fold(super.fragments)(ids => super.fragments.filter(f => ids.contains(f.getId)))

  override def filterAttributes(): Array[NamedReference] =
    if (groupFilter) Array(Expressions.column(LanceTable.FragmentId)) else Array.empty

  /**
   * `_fragid IN (...)` from the runtime group filter selects fragments; predicates on data columns
   * (the source's keys that [[sparklance.spark.rowlevel.TargetKeyPruning]] asks Spark to gather)
   * skip the rows the table's indices rule out, and `key IN (...)` on an integral or string column
   * read drops the other rows in the reader ([[KeySetFilter]]): Spark evaluates a runtime filter only
   * here, and its rows are rows the statement leaves alone.
   */
  override def filter(predicates: Array[Predicate]): Unit = {
    KeyPredicates.fragmentIds(predicates.toSeq).foreach(ids => selected = Some(selected.fold(ids)(_ intersect ids)))
    predicates.flatMap(DataFilters.of(_, snapshot.schema)).reduceOption(ColumnFilter.And(_, _)).foreach(restrictTo)
    // Spark may hand the same filters over again (a plan re-planned): each set is kept once.
    val decoded = StructType(required.fields.filterNot(f => LanceTable.MetadataNames.contains(f.name) || nullFilled(f.name)))
    val keys = predicates.toSeq.flatMap(KeySetFilter.of(_, decoded))
    keySets = (keySets ++ keys).distinctBy(_.identity)
  }
}
