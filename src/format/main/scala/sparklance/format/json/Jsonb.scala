package sparklance.format.json

import java.nio.charset.StandardCharsets.UTF_8
import scala.collection.mutable.ArrayBuffer
import sparklance.format.LanceException

/**
 * Lance's JSON columns (`lance.json`: large_binary values, logical type `json`) hold JSONB, the
 * binary JSON of the `jsonb` crate (Databend's) that pylance 14 links. A value is a container:
 * a big-endian u32 header (type in the top 3 bits: 0x80 array, 0x40 object, 0x20 scalar; element
 * count in the low 29), one u32 entry per element (object: all keys' entries, then all values'),
 * then the elements' bytes in the same order. An entry holds a type in bits 28-30 (null, string,
 * number, false, true, container) and the element's byte length in the low 28 bits. Object keys
 * are sorted by their UTF-8 bytes and unique. Numbers are a tag byte and big-endian bytes: 0x00
 * zero, 0x40 signed and 0x50 unsigned integers in the fewest of 1, 2, 4 or 8 bytes, 0x60 a double,
 * 0x10 / 0x20 / 0x30 NaN / +inf / -inf, 0x70 a decimal (value, then its scale byte). A scalar
 * at the top is wrapped in a scalar container of one entry. See docs/format-types.md.
 *
 * `encode` takes standard JSON text (RFC 8259) and writes the bytes pylance writes for it; `decode`
 * writes the compact text pylance reads back (keys in stored order, no spaces, numbers as below).
 */
object Jsonb {
  /** The Arrow extension name (field metadata `ARROW:extension:name`) of Lance's JSON columns. */
  val ExtensionName = "lance.json"
  /** The logical type Lance records for them. */
  val LogicalType = "json"

  /** The field metadata of a JSON column as pylance writes it (with the field's `other` metadata). */
  def fieldMetadata(other: Map[String, String]): Map[String, String] =
    other ++ Map("ARROW:extension:name" -> ExtensionName, "ARROW:extension:metadata" -> "")

  private val ArrayContainer = 0x80000000
  private val ObjectContainer = 0x40000000
  private val ScalarContainer = 0x20000000
  private val CountMask = 0x1FFFFFFF

  private val NullTag = 0x00000000
  private val StringTag = 0x10000000
  private val NumberTag = 0x20000000
  private val FalseTag = 0x30000000
  private val TrueTag = 0x40000000
  private val ContainerTag = 0x50000000
  private val TypeMask = 0x70000000
  private val LengthMask = 0x0FFFFFFF

  private val Zero: Byte = 0x00
  private val NaN: Byte = 0x10
  private val Inf: Byte = 0x20
  private val NegInf: Byte = 0x30
  private val SignedInt: Byte = 0x40
  private val UnsignedInt: Byte = 0x50
  private val Double: Byte = 0x60
  private val Decimal: Byte = 0x70

  /** Text that is not a JSON value, or bytes that are not JSONB. */
  class JsonbException(message: String) extends LanceException(message)

  // The parsed value, before it is encoded (objects need their keys sorted first).
  private sealed trait Node
  private case object JNull extends Node
  private final case class JBool(value: Boolean) extends Node
  private final case class JNumber(bytes: Array[Byte]) extends Node
  private final case class JString(utf8: Array[Byte]) extends Node
  private final case class JArray(items: Seq[Node]) extends Node
  private final case class JObject(entries: Seq[(Array[Byte], Node)]) extends Node

  def encode(text: String): Array[Byte] = {
    val node = new Parser(text).document()
    val out = new Output
    node match {
      case JArray(_) | JObject(_) => container(node, out)
      case scalar =>
        out.int(ScalarContainer)
        val entryAt = out.reserve(4)
        out.patch(entryAt, entry(scalar, out))
    }
    out.result
  }

  /** Writes an array or object; returns its length in bytes. */
  private def container(node: Node, out: Output): Int = {
    val start = out.size
    val (header, elements) = node match {
      case JArray(items) => (ArrayContainer | items.size, items.map(Right(_)))
      case JObject(entries) =>
        (ObjectContainer | entries.size, entries.map(e => Left(e._1)) ++ entries.map(e => Right(e._2)))
      case _ => throw new IllegalArgumentException("not a container")
    }
    out.int(header)
    val entriesAt = out.reserve(4 * elements.size)
    elements.zipWithIndex.foreach {
      case (Left(key), i) => out.bytes(key); out.patch(entriesAt + 4 * i, StringTag | key.length)
      case (Right(value), i) => out.patch(entriesAt + 4 * i, entry(value, out))
    }
    out.size - start
  }

  /** Writes an element's bytes; returns its entry. */
  private def entry(node: Node, out: Output): Int = node match {
    case JNull => NullTag
    case JBool(v) => if (v) TrueTag else FalseTag
    case JNumber(bytes) => out.bytes(bytes); NumberTag | bytes.length
    case JString(utf8) => out.bytes(utf8); StringTag | utf8.length
    case c => ContainerTag | container(c, out)
  }

  /** The number's bytes as the jsonb crate (without arbitrary precision, as Lance builds it) stores it. */
  private def integral(v: BigInt): Array[Byte] =
    if (v == 0) Array(Zero)
    else if (v > 0 && v <= BigInt("18446744073709551615")) {
      val x = v.toLong
      if (v <= 0xFF) Array(UnsignedInt, x.toByte)
      else if (v <= 0xFFFF) Array(UnsignedInt) ++ be(x, 2)
      else if (v <= 0xFFFFFFFFL) Array(UnsignedInt) ++ be(x, 4)
      else Array(UnsignedInt) ++ be(x, 8)
    } else if (v < 0 && v >= Long.MinValue) {
      val x = v.toLong
      if (x >= Byte.MinValue) Array(SignedInt, x.toByte)
      else if (x >= Short.MinValue) Array(SignedInt) ++ be(x, 2)
      else if (x >= Int.MinValue) Array(SignedInt) ++ be(x, 4)
      else Array(SignedInt) ++ be(x, 8)
    } else double(v.toDouble)

  private def double(d: scala.Double): Array[Byte] =
    if (d.isNaN) Array(NaN)
    else if (d.isInfinite) Array(if (d > 0) Inf else NegInf)
    else Array(Double) ++ be(java.lang.Double.doubleToRawLongBits(d), 8)

  private def be(x: Long, n: Int): Array[Byte] = Array.tabulate(n)(i => (x >>> (8 * (n - 1 - i))).toByte)

  private final class Output {
    private var buf = new Array[Byte](64)
    var size = 0
    private def room(n: Int): Unit = if (size + n > buf.length) buf = java.util.Arrays.copyOf(buf, math.max(buf.length * 2, size + n))
    def int(v: Int): Unit = { room(4); patch(size, v); size += 4 }
    def reserve(n: Int): Int = { room(n); size += n; size - n }
    def patch(at: Int, v: Int): Unit = { buf(at) = (v >>> 24).toByte; buf(at + 1) = (v >>> 16).toByte; buf(at + 2) = (v >>> 8).toByte; buf(at + 3) = v.toByte }
    def bytes(b: Array[Byte]): Unit = { room(b.length); System.arraycopy(b, 0, buf, size, b.length); size += b.length }
    def result: Array[Byte] = java.util.Arrays.copyOf(buf, size)
  }

  /** A strict RFC 8259 parser: one value, surrounded by optional white space. */
  private final class Parser(text: String) {
    private var i = 0
    private val depthLimit = 10000
    private var depth = 0

    def document(): Node = {
      val v = value()
      space()
      if (i < text.length) fail("unexpected text after the value")
      v
    }

    private def fail(why: String) = throw new JsonbException(s"Not JSON ($why at character $i)")
    private def space(): Unit = while (i < text.length && " \t\n\r".indexOf(text.charAt(i)) >= 0) i += 1
    private def peek: Char = if (i < text.length) text.charAt(i) else fail("unexpected end")

    private def value(): Node = {
      space()
      peek match {
        case '{' => nested(obj())
        case '[' => nested(arr())
        case '"' => JString(string().getBytes(UTF_8))
        case 't' => literal("true", JBool(true))
        case 'f' => literal("false", JBool(false))
        case 'n' => literal("null", JNull)
        case c if c == '-' || (c >= '0' && c <= '9') => number()
        case c => fail(s"unexpected '$c'")
      }
    }

    private def nested(body: => Node): Node = {
      depth += 1
      if (depth > depthLimit) fail("nested too deep")
      try body finally depth -= 1
    }

    private def literal(word: String, node: Node): Node =
      if (text.startsWith(word, i)) { i += word.length; node } else fail("unexpected literal")

    private def obj(): Node = {
      i += 1
      val entries = ArrayBuffer.empty[(Array[Byte], Node)]
      space()
      if (peek == '}') i += 1
      else {
        var more = true
        while (more) {
          space()
          if (peek != '"') fail("expected a key")
          val key = string().getBytes(UTF_8)
          space()
          if (peek != ':') fail("expected ':'")
          i += 1
          entries += key -> value()
          space()
          peek match {
            case ',' => i += 1
            case '}' => i += 1; more = false
            case _ => fail("expected ',' or '}'")
          }
        }
      }
      val sorted = entries.sortWith((a, b) => java.util.Arrays.compareUnsigned(a._1, b._1) < 0)
      sorted.indices.drop(1).find(k => java.util.Arrays.equals(sorted(k - 1)._1, sorted(k)._1)).foreach { k =>
        throw new JsonbException(s"Not JSON for Lance: duplicate key \"${new String(sorted(k)._1, UTF_8)}\" in an object")
      }
      JObject(sorted.toSeq)
    }

    private def arr(): Node = {
      i += 1
      val items = ArrayBuffer.empty[Node]
      space()
      if (peek == ']') i += 1
      else {
        var more = true
        while (more) {
          items += value()
          space()
          peek match {
            case ',' => i += 1
            case ']' => i += 1; more = false
            case _ => fail("expected ',' or ']'")
          }
        }
      }
      JArray(items.toSeq)
    }

    private def string(): String = {
      i += 1
      val sb = new java.lang.StringBuilder
      while (peek != '"') {
        val c = text.charAt(i)
        if (c < 0x20) fail("control character in a string")
        if (c == '\\') {
          i += 1
          peek match {
            case '"' => sb.append('"')
            case '\\' => sb.append('\\')
            case '/' => sb.append('/')
            case 'b' => sb.append('\b')
            case 'f' => sb.append('\f')
            case 'n' => sb.append('\n')
            case 'r' => sb.append('\r')
            case 't' => sb.append('\t')
            case 'u' =>
              if (i + 5 > text.length) fail("short \\u escape")
              val hex = text.substring(i + 1, i + 5)
              if (!hex.forall(Character.digit(_, 16) >= 0)) fail("bad \\u escape")
              sb.append(Integer.parseInt(hex, 16).toChar)
              i += 4
            case other => fail(s"bad escape '\\$other'")
          }
          i += 1
        } else { sb.append(c); i += 1 }
      }
      i += 1
      val s = sb.toString
      // Lone surrogates have no UTF-8 form; the jsonb crate refuses them too.
      var k = 0
      while (k < s.length) {
        val c = s.charAt(k)
        if (Character.isHighSurrogate(c) && k + 1 < s.length && Character.isLowSurrogate(s.charAt(k + 1))) k += 2
        else if (Character.isSurrogate(c)) fail("lone surrogate in a string")
        else k += 1
      }
      s
    }

    private def number(): Node = {
      val start = i
      if (peek == '-') i += 1
      def digits(): Int = { val s = i; while (i < text.length && text.charAt(i).isDigit) i += 1; i - s }
      if (peek == '0') { i += 1; if (i < text.length && text.charAt(i).isDigit) fail("leading zero") }
      else if (digits() == 0) fail("expected a digit")
      var integer = true
      if (i < text.length && text.charAt(i) == '.') { i += 1; integer = false; if (digits() == 0) fail("expected a digit") }
      if (i < text.length && (text.charAt(i) == 'e' || text.charAt(i) == 'E')) {
        i += 1; integer = false
        if (i < text.length && (text.charAt(i) == '+' || text.charAt(i) == '-')) i += 1
        if (digits() == 0) fail("expected a digit")
      }
      val s = text.substring(start, i)
      // Integers within u64 / i64 stay integers; all others (fractions, exponents, larger) are doubles.
      JNumber(if (integer) integral(BigInt(s)) else double(s.toDouble))
    }
  }

  /** The compact JSON text of a JSONB value, as pylance 14 reads it back. */
  def decode(bytes: Array[Byte]): String = {
    val sb = new java.lang.StringBuilder(bytes.length + 16)
    new Reader(bytes).top(sb)
    sb.toString
  }

  private final class Reader(b: Array[Byte]) {
    private def fail(why: String) = throw new JsonbException(s"Not JSONB: $why")
    private def int(at: Int): Int = {
      if (at < 0 || at + 4 > b.length) fail(s"truncated at byte $at")
      ((b(at) & 0xFF) << 24) | ((b(at + 1) & 0xFF) << 16) | ((b(at + 2) & 0xFF) << 8) | (b(at + 3) & 0xFF)
    }

    def top(sb: java.lang.StringBuilder): Unit = {
      val end = container(0, sb)
      if (end != b.length) fail(s"${b.length - end} bytes after the value")
    }

    /** Writes the container at `at`; returns where it ends. */
    private def container(at: Int, sb: java.lang.StringBuilder): Int = {
      val header = int(at)
      val count = header & CountMask
      (header & ~CountMask) match {
        case ScalarContainer =>
          if (count != 1 && count != 0) fail(s"a scalar container of $count entries")
          element(int(at + 4), at + 8, sb)
        case ArrayContainer =>
          var data = at + 4 + 4 * count
          sb.append('[')
          for (k <- 0 until count) {
            if (k > 0) sb.append(',')
            data = element(int(at + 4 + 4 * k), data, sb)
          }
          sb.append(']')
          data
        case ObjectContainer =>
          val keysAt = at + 4 + 8 * count
          var keyData = keysAt
          var valueData = keysAt + (0 until count).map(k => int(at + 4 + 4 * k) & LengthMask).sum
          sb.append('{')
          for (k <- 0 until count) {
            if (k > 0) sb.append(',')
            val keyEntry = int(at + 4 + 4 * k)
            if ((keyEntry & TypeMask) != StringTag) fail("an object key that is not a string")
            keyData = element(keyEntry, keyData, sb)
            sb.append(':')
            valueData = element(int(at + 4 + 4 * (count + k)), valueData, sb)
          }
          sb.append('}')
          valueData
        case other => fail(f"unknown container type 0x$other%08x")
      }
    }

    /** Writes the element of `entry` whose bytes start at `at`; returns where they end. */
    private def element(entry: Int, at: Int, sb: java.lang.StringBuilder): Int = {
      val length = entry & LengthMask
      if (at + length > b.length) fail(s"an element of $length bytes past the end")
      entry & TypeMask match {
        case NullTag => sb.append("null")
        case TrueTag => sb.append("true")
        case FalseTag => sb.append("false")
        case StringTag => quote(new String(b, at, length, UTF_8), sb)
        case NumberTag => number(at, length, sb)
        case ContainerTag =>
          val end = container(at, sb)
          if (end != at + length) fail("a container whose length disagrees with its entry")
        case other => fail(f"an element of type 0x${other >>> 28}%x, which pylance does not write")
      }
      at + length
    }

    private def number(at: Int, length: Int, sb: java.lang.StringBuilder): Unit = {
      def signed(n: Int): Long = (0 until n).foldLeft(if (b(at + 1) < 0) -1L else 0L)((v, k) => (v << 8) | (b(at + 1 + k) & 0xFF))
      def unsigned(n: Int): Long = (0 until n).foldLeft(0L)((v, k) => (v << 8) | (b(at + 1 + k) & 0xFF))
      if (length < 1) fail("an empty number")
      b(at) match {
        case Zero => sb.append('0')
        case NaN | Inf | NegInf => sb.append("null") // as serde_json writes non-finite doubles
        case SignedInt if Seq(2, 3, 5, 9).contains(length) => sb.append(signed(length - 1))
        case UnsignedInt if Seq(2, 3, 5, 9).contains(length) => sb.append(java.lang.Long.toUnsignedString(unsigned(length - 1)))
        case Double if length == 9 => sb.append(Jsonb.formatDouble(java.lang.Double.longBitsToDouble(unsigned(8))))
        case Decimal if Seq(10, 18, 34).contains(length) =>
          val value = BigInt(java.util.Arrays.copyOfRange(b, at + 1, at + length - 1))
          sb.append(BigDecimal(value, b(at + length - 1) & 0xFF).bigDecimal.toPlainString)
        case tag => fail(f"a number of tag 0x$tag%02x and $length bytes")
      }
    }

    private def quote(s: String, sb: java.lang.StringBuilder): Unit = {
      sb.append('"')
      s.foreach {
        case '"' => sb.append("\\\"")
        case '\\' => sb.append("\\\\")
        case '\n' => sb.append("\\n")
        case '\r' => sb.append("\\r")
        case '\t' => sb.append("\\t")
        case '\b' => sb.append("\\b")
        case '\f' => sb.append("\\f")
        case c if c < 0x20 => sb.append(f"\\u${c.toInt}%04x")
        case c => sb.append(c)
      }
      sb.append('"')
    }
  }

  /**
   * A finite double as pylance prints it: the shortest digits that read back as the same double,
   * in positional notation when the decimal point falls within 16 digits left or 5 right of
   * them (`1000.0`, `0.001234`), else as `d.ddde±x` (`1e+21`, `1e-7`).
   */
  def formatDouble(d: scala.Double): String = {
    if (d == 0) return if (1 / d < 0) "-0.0" else "0.0"
    // Java 17's Double.toString is not always the shortest (4.9E-324 for 5e-324): the fewest
    // significant digits whose nearest value is d are found from the exact value.
    val exact = new java.math.BigDecimal(math.abs(d))
    val plain = (1 to 17).iterator.map(p => exact.round(new java.math.MathContext(p, java.math.RoundingMode.HALF_EVEN)))
      .find(_.doubleValue == math.abs(d)).getOrElse(exact).stripTrailingZeros()
    val digits = plain.unscaledValue.toString
    val point = digits.length - plain.scale // value = 0.digits * 10^point
    val sign = if (d < 0) "-" else ""
    val body =
      if (point >= digits.length && point <= 16) digits + "0" * (point - digits.length) + ".0"
      else if (point > 0 && point <= 16) digits.substring(0, point) + "." + digits.substring(point)
      else if (point > -5 && point <= 0) "0." + "0" * -point + digits
      else {
        val exp = point - 1
        (if (digits.length == 1) digits else digits.head + "." + digits.tail) + "e" + (if (exp > 0) "+" else "") + exp
      }
    sign + body
  }
}
