package sparklance.spark.scan

import java.util.Arrays
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.util.SQLOrderingUtil
import org.apache.spark.sql.types._
import org.apache.spark.sql.vectorized.ColumnVector
import org.apache.spark.unsafe.types.UTF8String
import scala.util.control.NonFatal
import sparklance.spark.rowlevel.SourceKeysContain

/**
 * A [[Prefilter]]'s condition evaluated a batch at a time, one expression over all rows before the
 * next, in plain loops over arrays: the row-at-a-time path (a Spark Predicate over each
 * ColumnarBatch row) was most of the prefilter's time in a JFR profile of an UPDATE of 1% of 10M
 * rows, more than decoding the condition's column. Only common shapes are compiled (see
 * [[ColumnarCondition.compile]]); the prefilter keeps the row path for the others.
 *
 * Spark's filter above the scan evaluates the condition again, so a row may be kept when unsure,
 * never dropped when the condition may hold. Where Spark would raise an error (integer overflow or
 * a zero divisor under ANSI mode) or give a value that differs by mode (wrapping overflow, null for
 * a zero divisor), the row is kept: Spark's filter decides it, and raises its error (or not) as it
 * would without the prefilter. Such rows never raise here: the expressions are evaluated whole, not
 * short-circuited as Spark does, so an error here might be one Spark never reaches.
 */
final class ColumnarCondition private (root: ColumnarCondition.BoolNode) {
  import ColumnarCondition._
  private val batch = new Batch
  private var out = new Array[Boolean](0)

  /**
   * Whether each of the first `n` rows of `columns` (the condition's bound columns) may satisfy the
   * condition: false only where it is false or null. The array is reused by the next call.
   */
  def keep(columns: Array[ColumnVector], n: Int): Array[Boolean] = {
    batch.start(columns, n)
    root.eval(batch)
    if (out.length < n) out = new Array[Boolean](n)
    val (v, nulls, anyNull) = (root.values, root.nulls, root.anyNull)
    var i = 0
    while (i < n) { out(i) = v(i) && !(anyNull && nulls(i)); i += 1 }
    if (batch.anyUnsure) {
      i = 0
      while (i < n) { out(i) |= batch.unsure(i); i += 1 }
    }
    out
  }
}

object ColumnarCondition {
  /**
   * `condition` (bound to the prefilter's columns) compiled where it is built only of: columns and
   * literals (and foldable expressions) of integral, date, timestamp, float, double, string
   * (UTF8_BINARY) and boolean types; `+ - * %` and unary minus on integers and doubles (float
   * arithmetic rounds otherwise), `/` on doubles; widening casts between integers and from
   * integers or floats to double; the six comparisons and `<=>`; AND, OR, NOT; IN lists and sets
   * of literals on integers and strings; IS [NOT] NULL on any column or compiled expression; and
   * sparklance's key-set test. None for anything else.
   */
  def compile(condition: Expression): Option[ColumnarCondition] =
    try bool(condition).map(new ColumnarCondition(_)) catch { case NonFatal(_) => None }

  /** The rows of one call, and those whose value Spark might give otherwise or raise an error for (`unsure`). */
  private[scan] final class Batch {
    var columns: Array[ColumnVector] = _
    var n = 0
    var unsure = new Array[Boolean](0)
    var anyUnsure = false

    def start(columns: Array[ColumnVector], n: Int): Unit = {
      this.columns = columns
      this.n = n
      if (unsure.length < n) unsure = new Array[Boolean](n)
      else if (anyUnsure) Arrays.fill(unsure, 0, n, false)
      anyUnsure = false
    }

    def markUnsure(i: Int): Unit = { unsure(i) = true; anyUnsure = true }
  }

  /** A node's values for the rows of a batch; `nulls` is meaningful only where `anyNull`. */
  private[scan] abstract class Node {
    var nulls = new Array[Boolean](0)
    var anyNull = false
    def eval(b: Batch): Unit

    protected def grow(n: Int): Unit

    protected final def prepare(n: Int): Unit = {
      if (nulls.length < n) { nulls = new Array[Boolean](n); grow(n) }
      anyNull = false
    }

    /** Nulls where either input is null. */
    protected final def nullsOf(a: Node, b: Node, n: Int): Unit = {
      if (a.anyNull || b.anyNull) {
        anyNull = true
        var i = 0
        while (i < n) { nulls(i) = (a.anyNull && a.nulls(i)) || (b.anyNull && b.nulls(i)); i += 1 }
      }
    }

    protected final def nullsOf(a: Node, n: Int): Unit =
      if (a.anyNull) { anyNull = true; System.arraycopy(a.nulls, 0, nulls, 0, n) }

    final def isNull(i: Int): Boolean = anyNull && nulls(i)

    /** Row i null, the others of the `n` as they were. */
    protected final def setNull(i: Int, n: Int): Unit = {
      if (!anyNull) { anyNull = true; Arrays.fill(nulls, 0, n, false) }
      nulls(i) = true
    }

    /** Row i unsure: its value is taken as null, and whatever the condition makes of it, the row is kept. */
    protected final def unsure(b: Batch, i: Int): Unit = { b.markUnsure(i); setNull(i, b.n) }
  }

  private[scan] abstract class LongNode extends Node {
    var values = new Array[Long](0)
    override protected def grow(n: Int): Unit = values = new Array[Long](n)
  }

  private[scan] abstract class DoubleNode extends Node {
    var values = new Array[Double](0)
    override protected def grow(n: Int): Unit = values = new Array[Double](n)
  }

  private[scan] abstract class StringNode extends Node {
    var values = new Array[UTF8String](0)
    override protected def grow(n: Int): Unit = values = new Array[UTF8String](n)
  }

  private[scan] abstract class BoolNode extends Node {
    var values = new Array[Boolean](0)
    override protected def grow(n: Int): Unit = values = new Array[Boolean](n)
  }

  private def columnNulls(node: Node, c: ColumnVector, n: Int): Unit =
    if (c.hasNull) {
      node.anyNull = true
      var i = 0
      while (i < n) { node.nulls(i) = c.isNullAt(i); i += 1 }
    }

  // ---- integers (and dates, timestamps): Long values

  private final class LongColumn(ordinal: Int, t: DataType) extends LongNode {
    override def eval(b: Batch): Unit = {
      val n = b.n
      prepare(n)
      val c = b.columns(ordinal)
      columnNulls(this, c, n)
      var i = 0
      t match {
        case ByteType => while (i < n) { values(i) = c.getByte(i); i += 1 }
        case ShortType => while (i < n) { values(i) = c.getShort(i); i += 1 }
        case IntegerType | DateType => while (i < n) { values(i) = c.getInt(i); i += 1 }
        case _ => while (i < n) { values(i) = c.getLong(i); i += 1 }
      }
    }
  }

  private final class LongLiteral(val value: Option[Long]) extends LongNode {
    override def eval(b: Batch): Unit = {
      prepare(b.n)
      value match {
        case Some(v) => Arrays.fill(values, 0, b.n, v)
        case None => anyNull = true; Arrays.fill(nulls, 0, b.n, true)
      }
    }
  }

  private object LongOp extends Enumeration { val Add, Subtract, Multiply, Remainder = Value }

  /**
   * `left op right` in a type of `bits` bits. A result outside the type, or a zero divisor, is an
   * error under ANSI mode and wraps or is null otherwise: the row is unsure.
   */
  private final class LongArithmetic(op: LongOp.Value, left: LongNode, right: LongNode, bits: Int) extends LongNode {
    private val (min, max) = if (bits == 64) (Long.MinValue, Long.MaxValue) else (-(1L << (bits - 1)), (1L << (bits - 1)) - 1)
    // A positive literal divisor (`id % 100`): see [[remainder]].
    private val divisor = right match {
      case l: LongLiteral if op == LongOp.Remainder && l.value.exists(_ > 0) => l.value.get
      case _ => 0L
    }
    private val inverse = 1.0 / divisor

    override def eval(b: Batch): Unit = {
      left.eval(b)
      right.eval(b)
      val n = b.n
      prepare(n)
      nullsOf(left, right, n)
      val (l, r) = (left.values, right.values)
      var i = 0
      op match {
        case LongOp.Add => while (i < n) {
          val s = l(i) + r(i)
          // Overflow of 64 bits: both operands' signs differ from the sum's.
          if (!isNull(i) && (((l(i) ^ s) & (r(i) ^ s)) < 0 || s < min || s > max)) unsure(b, i)
          values(i) = s; i += 1
        }
        case LongOp.Subtract => while (i < n) {
          val s = l(i) - r(i)
          if (!isNull(i) && (((l(i) ^ r(i)) & (l(i) ^ s)) < 0 || s < min || s > max)) unsure(b, i)
          values(i) = s; i += 1
        }
        case LongOp.Multiply => while (i < n) {
          val p = l(i) * r(i)
          if (!isNull(i) && (Math.multiplyHigh(l(i), r(i)) != (p >> 63) || p < min || p > max)) unsure(b, i)
          values(i) = p; i += 1
        }
        case LongOp.Remainder if divisor > 0 => while (i < n) { values(i) = remainder(l(i), divisor, inverse); i += 1 }
        case LongOp.Remainder => while (i < n) {
          if (r(i) == 0) { if (!isNull(i)) unsure(b, i); values(i) = 0 }
          // Long.MinValue % -1 is 0 in Java and in Spark alike: no overflow.
          else values(i) = l(i) % r(i)
          i += 1
        }
      }
    }
  }

  /** Below this, a long times a double's inverse of the divisor is off the quotient by one at most (a constant: no accessor call per row). */
  private final val ExactQuotients = 1L << 51

  /**
   * `x % d` for a divisor d > 0 and its `inverse` (1.0 / d): for 0 <= x < 2^51^, from the quotient
   * estimated in doubles and corrected by one, which is several times faster than the division
   * of `%`: a long division by a value the JIT does not see as a constant was the largest part of
   * evaluating `id % 100 = 7` over 10M rows (JFR). Other values take `%`.
   */
  private[scan] def remainder(x: Long, d: Long, inverse: Double): Long =
    if (x >= 0 && x < ExactQuotients) {
      val r = x - (x * inverse).toLong * d
      if (r < 0) r + d else if (r >= d) r - d else r
    } else x % d

  private final class LongNegate(child: LongNode, bits: Int) extends LongNode {
    private val min = if (bits == 64) Long.MinValue else -(1L << (bits - 1))
    override def eval(b: Batch): Unit = {
      child.eval(b)
      val n = b.n
      prepare(n)
      nullsOf(child, n)
      val c = child.values
      var i = 0
      while (i < n) {
        if (c(i) == min && !isNull(i)) unsure(b, i)
        values(i) = -c(i)
        i += 1
      }
    }
  }

  // ---- floating point: Double values (floats widened exactly; only doubles computed with)

  private final class DoubleColumn(ordinal: Int, t: DataType) extends DoubleNode {
    override def eval(b: Batch): Unit = {
      val n = b.n
      prepare(n)
      val c = b.columns(ordinal)
      columnNulls(this, c, n)
      var i = 0
      if (t == FloatType) while (i < n) { values(i) = c.getFloat(i); i += 1 }
      else while (i < n) { values(i) = c.getDouble(i); i += 1 }
    }
  }

  private final class DoubleLiteral(value: Option[Double]) extends DoubleNode {
    override def eval(b: Batch): Unit = {
      prepare(b.n)
      value match {
        case Some(v) => Arrays.fill(values, 0, b.n, v)
        case None => anyNull = true; Arrays.fill(nulls, 0, b.n, true)
      }
    }
  }

  /** Integers as doubles: Spark's cast is Java's conversion. */
  private final class LongToDouble(child: LongNode) extends DoubleNode {
    override def eval(b: Batch): Unit = {
      child.eval(b)
      val n = b.n
      prepare(n)
      nullsOf(child, n)
      var i = 0
      while (i < n) { values(i) = child.values(i).toDouble; i += 1 }
    }
  }

  private object DoubleOp extends Enumeration { val Add, Subtract, Multiply, Divide, Remainder, Negate = Value }

  /** `left op right` on doubles; a zero divisor (null, or an error under ANSI mode) makes the row unsure. */
  private final class DoubleArithmetic(op: DoubleOp.Value, left: DoubleNode, right: DoubleNode) extends DoubleNode {
    override def eval(b: Batch): Unit = {
      left.eval(b)
      if (right ne null) right.eval(b)
      val n = b.n
      prepare(n)
      if (right ne null) nullsOf(left, right, n) else nullsOf(left, n)
      val l = left.values
      val r = if (right ne null) right.values else null
      var i = 0
      op match {
        case DoubleOp.Add => while (i < n) { values(i) = l(i) + r(i); i += 1 }
        case DoubleOp.Subtract => while (i < n) { values(i) = l(i) - r(i); i += 1 }
        case DoubleOp.Multiply => while (i < n) { values(i) = l(i) * r(i); i += 1 }
        case DoubleOp.Negate => while (i < n) { values(i) = -l(i); i += 1 }
        case DoubleOp.Divide | DoubleOp.Remainder =>
          val divide = op == DoubleOp.Divide
          while (i < n) {
            if (r(i) == 0) {
              if (!isNull(i)) unsure(b, i)
              values(i) = 0
            } else values(i) = if (divide) l(i) / r(i) else l(i) % r(i)
            i += 1
          }
      }
    }
  }

  // ---- strings (UTF8_BINARY: bytes compared as Spark's UTF8String does)

  private final class StringColumn(ordinal: Int) extends StringNode {
    override def eval(b: Batch): Unit = {
      val n = b.n
      prepare(n)
      val c = b.columns(ordinal)
      columnNulls(this, c, n)
      var i = 0
      while (i < n) { values(i) = if (isNull(i)) null else c.getUTF8String(i); i += 1 }
    }
  }

  private final class StringLiteral(value: UTF8String) extends StringNode {
    override def eval(b: Batch): Unit = {
      prepare(b.n)
      Arrays.fill(values.asInstanceOf[Array[AnyRef]], 0, b.n, value)
      if (value == null) { anyNull = true; Arrays.fill(nulls, 0, b.n, true) }
    }
  }

  // ---- predicates

  private final class BoolColumn(ordinal: Int) extends BoolNode {
    override def eval(b: Batch): Unit = {
      val n = b.n
      prepare(n)
      val c = b.columns(ordinal)
      columnNulls(this, c, n)
      var i = 0
      while (i < n) { values(i) = c.getBoolean(i); i += 1 }
    }
  }

  private final class BoolLiteral(value: Option[Boolean]) extends BoolNode {
    override def eval(b: Batch): Unit = {
      prepare(b.n)
      value match {
        case Some(v) => Arrays.fill(values, 0, b.n, v)
        case None => anyNull = true; Arrays.fill(nulls, 0, b.n, true)
      }
    }
  }

  private object Cmp extends Enumeration { val Eq, Lt, Le, Gt, Ge, EqNullSafe = Value }

  /** A comparison of two nodes of one kind, from the sign of `compare(i)` (rows where neither is null). */
  private abstract class Comparison(op: Cmp.Value, left: Node, right: Node) extends BoolNode {
    protected def compare(i: Int): Int
    protected def equal(i: Int): Boolean = compare(i) == 0

    override def eval(b: Batch): Unit = {
      left.eval(b)
      right.eval(b)
      val n = b.n
      prepare(n)
      var i = 0
      if (op == Cmp.EqNullSafe) {
        while (i < n) {
          val (ln, rn) = (left.isNull(i), right.isNull(i))
          values(i) = if (ln || rn) ln && rn else equal(i)
          i += 1
        }
      } else {
        nullsOf(left, right, n)
        op match {
          case Cmp.Eq => while (i < n) { values(i) = !isNull(i) && equal(i); i += 1 }
          case Cmp.Lt => while (i < n) { values(i) = !isNull(i) && compare(i) < 0; i += 1 }
          case Cmp.Le => while (i < n) { values(i) = !isNull(i) && compare(i) <= 0; i += 1 }
          case Cmp.Gt => while (i < n) { values(i) = !isNull(i) && compare(i) > 0; i += 1 }
          case _ => while (i < n) { values(i) = !isNull(i) && compare(i) >= 0; i += 1 }
        }
      }
    }
  }

  /**
   * Integers compared in loops of their own over local arrays (or against a literal's value): the
   * shared loop of [[Comparison]], calling `compare(i)` per row, took half the time of evaluating
   * `id % 100 = 7` (JFR). A row's value where it is null is left as it comes: no node reads it.
   */
  private final class LongComparison(op: Cmp.Value, left: LongNode, right: LongNode) extends BoolNode {
    private val constant = right match {
      case l: LongLiteral if op != Cmp.EqNullSafe => l.value
      case _ => None
    }

    override def eval(b: Batch): Unit = {
      left.eval(b)
      val n = b.n
      prepare(n)
      val (l, v) = (left.values, values)
      var i = 0
      constant match {
        case Some(k) =>
          nullsOf(left, n)
          op match {
            case Cmp.Eq => while (i < n) { v(i) = l(i) == k; i += 1 }
            case Cmp.Lt => while (i < n) { v(i) = l(i) < k; i += 1 }
            case Cmp.Le => while (i < n) { v(i) = l(i) <= k; i += 1 }
            case Cmp.Gt => while (i < n) { v(i) = l(i) > k; i += 1 }
            case _ => while (i < n) { v(i) = l(i) >= k; i += 1 }
          }
        case None =>
          right.eval(b)
          val r = right.values
          if (op == Cmp.EqNullSafe) while (i < n) {
            val (ln, rn) = (left.isNull(i), right.isNull(i))
            v(i) = if (ln || rn) ln && rn else l(i) == r(i)
            i += 1
          } else {
            nullsOf(left, right, n)
            op match {
              case Cmp.Eq => while (i < n) { v(i) = l(i) == r(i); i += 1 }
              case Cmp.Lt => while (i < n) { v(i) = l(i) < r(i); i += 1 }
              case Cmp.Le => while (i < n) { v(i) = l(i) <= r(i); i += 1 }
              case Cmp.Gt => while (i < n) { v(i) = l(i) > r(i); i += 1 }
              case _ => while (i < n) { v(i) = l(i) >= r(i); i += 1 }
            }
          }
      }
    }
  }

  /** Spark's order of doubles: NaN equals NaN and is above every other value, -0.0 equals 0.0. */
  private final class DoubleComparison(op: Cmp.Value, left: DoubleNode, right: DoubleNode) extends Comparison(op, left, right) {
    override protected def compare(i: Int): Int = SQLOrderingUtil.compareDoubles(left.values(i), right.values(i))
  }

  private final class StringComparison(op: Cmp.Value, left: StringNode, right: StringNode) extends Comparison(op, left, right) {
    override protected def compare(i: Int): Int = left.values(i).binaryCompare(right.values(i))
    override protected def equal(i: Int): Boolean = left.values(i) == right.values(i)
  }

  private final class And3(left: BoolNode, right: BoolNode) extends BoolNode {
    override def eval(b: Batch): Unit = {
      left.eval(b)
      right.eval(b)
      val n = b.n
      prepare(n)
      val (l, r) = (left.values, right.values)
      var i = 0
      if (!left.anyNull && !right.anyNull) while (i < n) { values(i) = l(i) && r(i); i += 1 }
      else {
        anyNull = true
        while (i < n) {
          val (ln, rn) = (left.isNull(i), right.isNull(i))
          // False wins over null; true AND null is null.
          val lFalse = !ln && !l(i)
          val rFalse = !rn && !r(i)
          nulls(i) = !lFalse && !rFalse && (ln || rn)
          values(i) = !ln && !rn && l(i) && r(i)
          i += 1
        }
      }
    }
  }

  private final class Or3(left: BoolNode, right: BoolNode) extends BoolNode {
    override def eval(b: Batch): Unit = {
      left.eval(b)
      right.eval(b)
      val n = b.n
      prepare(n)
      val (l, r) = (left.values, right.values)
      var i = 0
      if (!left.anyNull && !right.anyNull) while (i < n) { values(i) = l(i) || r(i); i += 1 }
      else {
        anyNull = true
        while (i < n) {
          // True wins over null; false OR null is null.
          val lTrue = !left.isNull(i) && l(i)
          val rTrue = !right.isNull(i) && r(i)
          values(i) = lTrue || rTrue
          nulls(i) = !values(i) && (left.isNull(i) || right.isNull(i))
          i += 1
        }
      }
    }
  }

  private final class Not3(child: BoolNode) extends BoolNode {
    override def eval(b: Batch): Unit = {
      child.eval(b)
      val n = b.n
      prepare(n)
      nullsOf(child, n)
      var i = 0
      while (i < n) { values(i) = !child.values(i); i += 1 }
    }
  }

  /** IS NULL (or IS NOT NULL, `negated`) of a compiled node, never null itself. */
  private final class NullTest(child: Node, negated: Boolean) extends BoolNode {
    override def eval(b: Batch): Unit = {
      child.eval(b)
      val n = b.n
      prepare(n)
      var i = 0
      while (i < n) { values(i) = child.isNull(i) != negated; i += 1 }
    }
  }

  /** IS [NOT] NULL of a column of any type. */
  private final class ColumnNullTest(ordinal: Int, negated: Boolean) extends BoolNode {
    override def eval(b: Batch): Unit = {
      val n = b.n
      prepare(n)
      val c = b.columns(ordinal)
      if (c.hasNull) { var i = 0; while (i < n) { values(i) = c.isNullAt(i) != negated; i += 1 } }
      else Arrays.fill(values, 0, n, negated)
    }
  }

  /**
   * `child IN (list)`: null for a null value, true where the value is listed, else null where the
   * list holds a null (`listHasNull`), else false; `contains` tests a non-null value.
   */
  private abstract class Membership(child: Node, listHasNull: Boolean) extends BoolNode {
    protected def contains(i: Int): Boolean
    override def eval(b: Batch): Unit = {
      child.eval(b)
      val n = b.n
      prepare(n)
      var i = 0
      while (i < n) {
        val found = !child.isNull(i) && contains(i)
        values(i) = found
        if (!found && (child.isNull(i) || listHasNull)) setNull(i, n)
        i += 1
      }
    }
  }

  private final class LongIn(child: LongNode, sorted: Array[Long], listHasNull: Boolean) extends Membership(child, listHasNull) {
    override protected def contains(i: Int): Boolean = Arrays.binarySearch(sorted, child.values(i)) >= 0
  }

  private final class StringIn(child: StringNode, set: java.util.HashSet[UTF8String], listHasNull: Boolean)
      extends Membership(child, listHasNull) {
    override protected def contains(i: Int): Boolean = set.contains(child.values(i))
  }

  /** sparklance's key-set test: false for a null key (see [[SourceKeysContain]]). */
  private final class KeySetTest(child: LongNode, keys: SourceKeysContain) extends BoolNode {
    override def eval(b: Batch): Unit = {
      child.eval(b)
      val n = b.n
      prepare(n)
      var i = 0
      while (i < n) { values(i) = !child.isNull(i) && keys.contains(child.values(i)); i += 1 }
    }
  }

  // ---- compilation

  private def integralBits(t: DataType): Option[Int] = t match {
    case ByteType => Some(8)
    case ShortType => Some(16)
    case IntegerType => Some(32)
    case LongType => Some(64)
    case _ => None
  }

  /** Types held as Long values: integers, and dates (days) and timestamps (microseconds), compared as such. */
  private def longLike(t: DataType): Boolean = integralBits(t).isDefined || t == DateType || t == TimestampType || t == TimestampNTZType

  private def binaryString(t: DataType): Boolean = t == StringType

  /** A foldable expression's value, evaluated once here (its errors make the whole condition fall back). */
  private object Constant {
    def unapply(e: Expression): Option[Any] = if (e.foldable) Some(e.eval(null)) else None
  }

  private def long(e: Expression): Option[LongNode] = e match {
    case _ if !longLike(e.dataType) => None
    case Constant(v) => Some(new LongLiteral(Option(v).map(_.asInstanceOf[Number].longValue)))
    case r: BoundReference => Some(new LongColumn(r.ordinal, r.dataType))
    case c: Cast => (integralBits(c.child.dataType), integralBits(c.dataType)) match {
      // Widening keeps every value; narrowing may fail or wrap.
      case (Some(from), Some(to)) if from <= to => long(c.child)
      case _ => None
    }
    case a: BinaryArithmetic if integralBits(a.dataType).isDefined =>
      val op = a match {
        case _: Add => Some(LongOp.Add)
        case _: Subtract => Some(LongOp.Subtract)
        case _: Multiply => Some(LongOp.Multiply)
        case _: Remainder => Some(LongOp.Remainder)
        case _ => None
      }
      for { o <- op; l <- long(a.left); r <- long(a.right) } yield new LongArithmetic(o, l, r, integralBits(a.dataType).get)
    case u: UnaryMinus if integralBits(u.dataType).isDefined => long(u.child).map(new LongNegate(_, integralBits(u.dataType).get))
    case _ => None
  }

  private def double(e: Expression): Option[DoubleNode] = e match {
    case Constant(v) if e.dataType == DoubleType || e.dataType == FloatType =>
      Some(new DoubleLiteral(Option(v).map(_.asInstanceOf[Number].doubleValue)))
    case r: BoundReference if r.dataType == DoubleType || r.dataType == FloatType => Some(new DoubleColumn(r.ordinal, r.dataType))
    case c: Cast if c.dataType == DoubleType => c.child.dataType match {
      case FloatType => double(c.child)
      case t if integralBits(t).isDefined => long(c.child).map(new LongToDouble(_))
      case _ => None
    }
    case a: BinaryArithmetic if a.dataType == DoubleType =>
      val op = a match {
        case _: Add => Some(DoubleOp.Add)
        case _: Subtract => Some(DoubleOp.Subtract)
        case _: Multiply => Some(DoubleOp.Multiply)
        case _: Divide => Some(DoubleOp.Divide)
        case _: Remainder => Some(DoubleOp.Remainder)
        case _ => None
      }
      for { o <- op; l <- double(a.left); r <- double(a.right) } yield new DoubleArithmetic(o, l, r)
    case u: UnaryMinus if u.dataType == DoubleType => double(u.child).map(new DoubleArithmetic(DoubleOp.Negate, _, null))
    case _ => None
  }

  private def string(e: Expression): Option[StringNode] = e match {
    case _ if !binaryString(e.dataType) => None
    case Constant(v) => Some(new StringLiteral(v.asInstanceOf[UTF8String]))
    case r: BoundReference => Some(new StringColumn(r.ordinal))
    case _ => None
  }

  private def value(e: Expression): Option[Node] = long(e).orElse(double(e)).orElse(string(e)).orElse(bool(e))

  private def comparison(op: Cmp.Value, l: Expression, r: Expression): Option[BoolNode] =
    if (l.dataType != r.dataType) None
    else if (longLike(l.dataType)) for { a <- long(l); b <- long(r) } yield new LongComparison(op, a, b)
    else if (l.dataType == DoubleType || l.dataType == FloatType) for { a <- double(l); b <- double(r) } yield new DoubleComparison(op, a, b)
    else if (binaryString(l.dataType)) for { a <- string(l); b <- string(r) } yield new StringComparison(op, a, b)
    else None

  /** An IN list's values (literals all), or None. */
  private def membership(child: Expression, items: Seq[Any]): Option[BoolNode] = {
    val hasNull = items.contains(null)
    val present = items.filter(_ != null)
    if (longLike(child.dataType))
      long(child).map(c => new LongIn(c, present.map(_.asInstanceOf[Number].longValue).toArray.sorted, hasNull))
    else if (binaryString(child.dataType)) string(child).map { c =>
      val set = new java.util.HashSet[UTF8String]
      present.foreach(v => set.add(v.asInstanceOf[UTF8String]))
      new StringIn(c, set, hasNull)
    }
    else None
  }

  private def bool(e: Expression): Option[BoolNode] = e match {
    case _ if e.dataType != BooleanType => None
    case Constant(v) => Some(new BoolLiteral(Option(v).map(_.asInstanceOf[Boolean])))
    case r: BoundReference => Some(new BoolColumn(r.ordinal))
    case a: And => for { l <- bool(a.left); r <- bool(a.right) } yield new And3(l, r)
    case o: Or => for { l <- bool(o.left); r <- bool(o.right) } yield new Or3(l, r)
    case n: Not => bool(n.child).map(new Not3(_))
    case c: EqualTo => comparison(Cmp.Eq, c.left, c.right)
    case c: EqualNullSafe => comparison(Cmp.EqNullSafe, c.left, c.right)
    case c: LessThan => comparison(Cmp.Lt, c.left, c.right)
    case c: LessThanOrEqual => comparison(Cmp.Le, c.left, c.right)
    case c: GreaterThan => comparison(Cmp.Gt, c.left, c.right)
    case c: GreaterThanOrEqual => comparison(Cmp.Ge, c.left, c.right)
    case IsNull(r: BoundReference) => Some(new ColumnNullTest(r.ordinal, negated = false))
    case IsNotNull(r: BoundReference) => Some(new ColumnNullTest(r.ordinal, negated = true))
    case IsNull(child) => value(child).map(new NullTest(_, negated = false))
    case IsNotNull(child) => value(child).map(new NullTest(_, negated = true))
    case in: In if in.list.forall(_.foldable) => membership(in.value, in.list.map(_.eval(null)))
    case in: InSet => membership(in.child, in.hset.toSeq)
    case k: SourceKeysContain if longLike(k.value.dataType) => long(k.value).map(new KeySetTest(_, k))
    case _ => None
  }
}
