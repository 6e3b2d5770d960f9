package sparklance.format.skipping

/**
 * A row filter data skipping understands, on columns named by field id: the part of a query's
 * WHERE clause a zone's statistics can rule out. Rows are kept where the filter is true; a
 * comparison with a null is never true, as in SQL. Anything else in a query stays with the
 * engine, which also evaluates these filters again on every row read.
 */
sealed trait ColumnFilter

object ColumnFilter {
  sealed trait CompareOp
  object CompareOp {
    case object Equal extends CompareOp
    case object Less extends CompareOp
    case object LessOrEqual extends CompareOp
    case object Greater extends CompareOp
    case object GreaterOrEqual extends CompareOp
  }
  import CompareOp._

  final case class Compare(fieldId: Int, op: CompareOp, value: ZoneValue) extends ColumnFilter
  final case class NotEqual(fieldId: Int, value: ZoneValue) extends ColumnFilter
  /**
   * `column IN (values)`; nulls among the values match no row. A runtime filter may list a
   * MERGE source's every key, so tests search the values in order rather than scan them.
   */
  final case class In(fieldId: Int, values: Seq[ZoneValue]) extends ColumnFilter {
    /**
     * Integral values, sorted as primitive longs: a MERGE's runtime filter lists its source's every
     * key, and sorting 100,000 of them as objects through an `Ordering` took about a third of the
     * driver's time between gathering the keys and starting the scan.
     */
    private lazy val sortedLongs: Option[Array[Long]] =
      Option.when(values.forall(_.isInstanceOf[ZoneValue.Integral])) {
        val longs = values.iterator.map(_.asInstanceOf[ZoneValue.Integral].value).toArray
        java.util.Arrays.sort(longs)
        longs
      }

    /** The values in Spark's order; None when they are of several kinds, which do not compare. */
    private lazy val sorted: Option[Array[ZoneValue]] = {
      val kinds = values.map(_.getClass).distinct
      if (kinds.size > 1) None
      else Some(values.toArray.sorted(ZoneValue.OneKind))
    }

    /** Whether some value lies within [lo, hi]; values that do not compare with the bounds may. */
    def anyWithin(lo: ZoneValue, hi: ZoneValue): Boolean = (lo, hi, sortedLongs) match {
      case (ZoneValue.Integral(l), ZoneValue.Integral(h), Some(vs)) =>
        val first = firstAtLeast(vs, l)
        first < vs.length && vs(first) <= h
      case _ => sorted match {
        case Some(vs) if vs.nonEmpty && ZoneValue.compare(vs(0), lo).isDefined && ZoneValue.compare(vs(0), hi).isDefined =>
          val first = firstAtLeast(vs, lo)
          first < vs.length && ZoneValue.OneKind.lteq(vs(first), hi)
        case Some(vs) if vs.isEmpty => false
        case _ => values.exists(v => ZoneValue.compare(lo, v).forall(_ <= 0) && ZoneValue.compare(hi, v).forall(_ >= 0))
      }
    }

    /** Whether a value equals `v` (one that does not compare with it may). */
    def holds(v: ZoneValue): Boolean = anyWithin(v, v)

    /** The index of the first of `vs` not below `bound`, or `vs.length`. */
    private def firstAtLeast(vs: Array[ZoneValue], bound: ZoneValue): Int = {
      var lo = 0
      var hi = vs.length
      while (lo < hi) {
        val mid = (lo + hi) >>> 1
        if (ZoneValue.OneKind.lt(vs(mid), bound)) lo = mid + 1 else hi = mid
      }
      lo
    }

    /** The index of a value of `vs` equal to `bound`, else of the first above it, or `vs.length`. */
    private def firstAtLeast(vs: Array[Long], bound: Long): Int = {
      val at = java.util.Arrays.binarySearch(vs, bound)
      if (at < 0) -at - 1 else at
    }
  }
  final case class IsNull(fieldId: Int) extends ColumnFilter
  final case class IsNotNull(fieldId: Int) extends ColumnFilter
  /**
   * A list column holding an element equal to `value` (Spark's `array_contains`): answered by a
   * LABEL_LIST index, whose keys are the lists' elements.
   */
  final case class ListContains(fieldId: Int, value: ZoneValue) extends ColumnFilter
  /** A string or binary column starting with `prefix`. */
  final case class StartsWith(fieldId: Int, prefix: Array[Byte]) extends ColumnFilter
  /**
   * A string column holding at least one of the tokens `analyzer` makes of `query` (Lance's plain
   * match query, as `lance_match` asks it); an INVERTED index of that analyzer names its rows.
   * `index` is the index the query was bound to, for messages; None for the default analyzer.
   */
  final case class TextMatch(fieldId: Int, query: String, analyzer: sparklance.format.index.text.TextAnalyzer,
      index: Option[String]) extends ColumnFilter
  final case class And(left: ColumnFilter, right: ColumnFilter) extends ColumnFilter
  final case class Or(left: ColumnFilter, right: ColumnFilter) extends ColumnFilter
  final case class Not(child: ColumnFilter) extends ColumnFilter
  /** Keeps every row: what stands for a negation data skipping cannot express. */
  case object Keep extends ColumnFilter

  /**
   * The filter with NOT applied to its comparisons: `NOT (x < v)` keeps the rows `x >= v` keeps (a
   * null x is kept by neither; NaN is the largest value in both), `NOT (x = v)` is `x != v`. A
   * negation it cannot express becomes [[Keep]].
   */
  def negationFree(filter: ColumnFilter): ColumnFilter = filter match {
    case And(l, r) => And(negationFree(l), negationFree(r))
    case Or(l, r) => Or(negationFree(l), negationFree(r))
    case Not(c) => negated(c)
    case other => other
  }

  private def negated(filter: ColumnFilter): ColumnFilter = filter match {
    case Compare(id, Equal, v) => NotEqual(id, v)
    case Compare(id, Less, v) => Compare(id, GreaterOrEqual, v)
    case Compare(id, LessOrEqual, v) => Compare(id, Greater, v)
    case Compare(id, Greater, v) => Compare(id, LessOrEqual, v)
    case Compare(id, GreaterOrEqual, v) => Compare(id, Less, v)
    case NotEqual(id, v) => Compare(id, Equal, v)
    case IsNull(id) => IsNotNull(id)
    case IsNotNull(id) => IsNull(id)
    case And(l, r) => Or(negated(l), negated(r))
    case Or(l, r) => And(negated(l), negated(r))
    case Not(c) => negationFree(c)
    case In(_, _) | StartsWith(_, _) | ListContains(_, _) | TextMatch(_, _, _, _) | Keep => Keep
  }

  /**
   * The filter without the IS NOT NULL tests that another test of the same AND already implies: a
   * comparison, IN, prefix test or text match is never true on a null. Spark adds `isnotnull(k)` beside every
   * `k = v` it pushes, and an index that names rows answers IS NOT NULL only by reading every
   * value: a BTREE point lookup read all its pages for it.
   */
  def withoutImpliedNotNull(filter: ColumnFilter): ColumnFilter = filter match {
    case and: And =>
      val parts = conjuncts(and)
      val valueTested = parts.collect { case c @ (_: Compare | _: NotEqual | _: In | _: StartsWith | _: ListContains | _: TextMatch) => fieldId(c) }.flatten.toSet
      parts.filter {
        case IsNotNull(id) => !valueTested(id)
        case _ => true
      }.map(withoutImpliedNotNull).reduce(And(_, _))
    case Or(l, r) => Or(withoutImpliedNotNull(l), withoutImpliedNotNull(r))
    case other => other
  }

  private def conjuncts(filter: ColumnFilter): Seq[ColumnFilter] = filter match {
    case And(l, r) => conjuncts(l) ++ conjuncts(r)
    case other => Seq(other)
  }

  /**
   * Whether a row whose column holds `value` (None: null) passes `leaf`, a filter on one column
   * without NOT ([[negationFree]]); values that do not compare are kept. For [[ListContains]],
   * `value` is one element of the list.
   */
  def keeps(leaf: ColumnFilter, value: Option[ZoneValue]): Boolean = {
    def order(v: ZoneValue, c: ZoneValue)(test: Int => Boolean) = ZoneValue.compare(v, c).forall(test)
    leaf match {
      case Compare(_, op, c) => value.exists(v => order(v, c)(r => op match {
        case Equal => r == 0
        case Less => r < 0
        case LessOrEqual => r <= 0
        case Greater => r > 0
        case GreaterOrEqual => r >= 0
      }))
      case NotEqual(_, c) => value.exists(v => order(v, c)(_ != 0))
      // `value` is an element of the list (a key of its LABEL_LIST index).
      case ListContains(_, c) => value.exists(v => order(v, c)(_ == 0))
      case in: In => value.exists(in.holds)
      case IsNull(_) => value.isEmpty
      case IsNotNull(_) => value.isDefined
      case StartsWith(_, prefix) => value.exists {
        case ZoneValue.Bytes(b) => b.startsWith(prefix)
        case _ => true
      }
      case _ => true
    }
  }

  /** The field id a filter on one column reads; None for AND, OR, NOT and [[Keep]]. */
  def fieldId(filter: ColumnFilter): Option[Int] = filter match {
    case Compare(id, _, _) => Some(id)
    case NotEqual(id, _) => Some(id)
    case In(id, _) => Some(id)
    case IsNull(id) => Some(id)
    case IsNotNull(id) => Some(id)
    case StartsWith(id, _) => Some(id)
    case ListContains(id, _) => Some(id)
    case TextMatch(id, _, _, _) => Some(id)
    case _ => None
  }

  /** The field ids a filter reads. */
  def fieldIds(filter: ColumnFilter): Set[Int] = filter match {
    case And(l, r) => fieldIds(l) ++ fieldIds(r)
    case Or(l, r) => fieldIds(l) ++ fieldIds(r)
    case Not(c) => fieldIds(c)
    case other => fieldId(other).toSet
  }
}
