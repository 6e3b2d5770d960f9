package sparklance.spark.rowlevel

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BinaryExpression, Expression, Predicate}
import org.apache.spark.sql.catalyst.expressions.codegen.{CodegenContext, ExprCode, FalseLiteral}
import org.apache.spark.sql.catalyst.expressions.codegen.Block._
import org.apache.spark.sql.catalyst.util.ArrayData
import org.apache.spark.sql.types._

/**
 * Whether an integral `value` is one of the source's join keys: `keys` is the array of distinct
 * source keys a scalar subquery collected (or an IN list's values, [[InListKeySetRule]]), held as a
 * [[LongKeySet]] built once per task. Unlike a
 * Bloom filter it lets no other row through, and a test costs a hash and a read or two instead of
 * two hashes and several bit probes. A null value is no key (the join would not match it).
 */
final case class SourceKeysContain(keys: Expression, value: Expression) extends BinaryExpression with Predicate {

  override def left: Expression = keys
  override def right: Expression = value
  override def nullable: Boolean = false
  override def prettyName: String = "source_keys_contain"

  @transient private lazy val set: LongKeySet = keys.eval() match {
    case null => LongKeySet.of(0, _ => 0L)
    // Typed getters: the generic `get` looks the type up in the session's settings on every call.
    case array: ArrayData => value.dataType match {
      case LongType | TimestampType | TimestampNTZType => LongKeySet.of(array.numElements(), array.getLong)
      case IntegerType | DateType => LongKeySet.of(array.numElements(), i => array.getInt(i).toLong)
      case ShortType => LongKeySet.of(array.numElements(), i => array.getShort(i).toLong)
      case ByteType => LongKeySet.of(array.numElements(), i => array.getByte(i).toLong)
    }
  }

  def contains(key: Long): Boolean = set.contains(key)

  override def eval(input: InternalRow): Any = value.eval(input) match {
    case null => false
    case v => set.contains(SourceKeysContain.asLong(v))
  }

  override def doGenCode(ctx: CodegenContext, ev: ExprCode): ExprCode = {
    // The keys are a constant of the plan, read by `set` once; only the value is generated.
    val self = ctx.addReferenceObj("sourceKeys", this)
    val v = value.genCode(ctx)
    ev.copy(code = code"""
      ${v.code}
      boolean ${ev.value} = !${v.isNull} && $self.contains((long) ${v.value});""", isNull = FalseLiteral)
  }

  override protected def withNewChildrenInternal(newLeft: Expression, newRight: Expression): SourceKeysContain =
    copy(keys = newLeft, value = newRight)
}

object SourceKeysContain {
  /** Key types held as longs: integers, dates (days) and timestamps (microseconds). */
  def supports(t: DataType): Boolean = t match {
    case ByteType | ShortType | IntegerType | LongType | DateType | TimestampType | TimestampNTZType => true
    case _ => false
  }

  private def asLong(v: Any): Long = v match {
    case b: Byte => b.toLong
    case s: Short => s.toLong
    case i: Int => i.toLong
    case l: Long => l
  }
}
