package sparklance.format.index.text

import java.nio.charset.StandardCharsets.UTF_8
import sparklance.format.CorruptFileException

/**
 * The token → token id map of one partition, `_token_fst_bytes` of `part_<p>_tokens.lance`: a
 * finite state transducer in the `fst` crate's format (version 3). Nodes are addressed by their
 * last byte and read backwards from it; a key's id is the sum of the outputs met on its path plus
 * the final node's output. Only look-ups are needed: the query's tokens are few.
 */
final class TokenMap(bytes: Array[Byte], path: String) {
  import TokenMap._

  if (bytes.length < 36) throw new CorruptFileException(path, s"a token FST of ${bytes.length} bytes")
  private val version = u64(0, 8)

  /** Its size in memory, roughly: the FST's bytes. */
  def weight: Long = bytes.length.toLong
  if (version != 3 && version != 2) throw new CorruptFileException(path, s"token FST version $version (2 or 3 are read)")
  // Version 3 ends with a CRC32C after the key count and root address.
  private val footer = if (version >= 3) 4 else 0
  val size: Long = u64(bytes.length - footer - 16, 8)
  private val root: Long = u64(bytes.length - footer - 8, 8)

  private def u8(at: Long): Int = bytes(Math.toIntExact(at)) & 0xff
  private def u64(at: Long, n: Int): Long = {
    var v = 0L
    var i = 0
    while (i < n) { v |= u8(at + i).toLong << (8 * i); i += 1 }
    v
  }

  /** The id of `token`, if the map holds it. */
  def get(token: String): Option[Long] = {
    var addr = root
    var out = 0L
    for (b <- token.getBytes(UTF_8)) {
      if (addr == EmptyAddress) return None
      step(addr, b & 0xff) match {
        case Some((o, next)) => out += o; addr = next
        case None => return None
      }
    }
    finalOutput(addr).map(out + _)
  }

  /** The output and target of the transition of node `addr` on `input`. */
  private def step(addr: Long, input: Int): Option[(Long, Long)] = {
    val state = u8(addr)
    (state >> 6) match {
      case 3 => // one transition to the node just before this one, no output
        val common = state & 0x3f
        val (in, inputLen) = if (common != 0) (CommonInputs(common - 1), 0) else (u8(addr - 1), 1)
        if (in == input) Some((0L, addr - inputLen - 1)) else None
      case 2 => // one transition with packed output and target
        val common = state & 0x3f
        val (in, inputLen) = if (common != 0) (CommonInputs(common - 1), 0) else (u8(addr - 1), 1)
        if (in != input) return None
        val sizes = u8(addr - inputLen - 1)
        val tsize = sizes >> 4
        val osize = sizes & 0x0f
        val transAt = addr - inputLen - 1 - tsize
        val outAt = transAt - osize
        val end = outAt
        Some((if (osize == 0) 0L else u64(outAt, osize), delta(transAt, tsize, end)))
      case _ =>
        val n = ntrans(addr, state)
        val nLen = if ((state & 0x3f) == 0) 1 else 0
        val sizes = u8(addr - nLen - 1)
        val tsize = sizes >> 4
        val osize = sizes & 0x0f
        val indexSize = if (version >= 2 && n > TransIndexThreshold) 256 else 0
        val base = addr - nLen - 1 - indexSize // one past the last input byte
        val found =
          if (indexSize > 0) { val i = u8(base + input); if (i >= n) -1 else i }
          else (0 until n).find(i => u8(base - i - 1) == input).getOrElse(-1)
        if (found < 0) return None
        val transTotal = n + n * tsize + indexSize
        val isFinal = (state & 0x40) != 0
        val end = addr - nLen - 1 - transTotal - n * osize - (if (isFinal) osize else 0)
        val transAt = base - n - found * tsize - tsize
        val outAt = addr - nLen - 1 - transTotal - found * osize - osize
        Some((if (osize == 0) 0L else u64(outAt, osize), delta(transAt, tsize, end)))
    }
  }

  private def ntrans(addr: Long, state: Int): Int = {
    val n = state & 0x3f
    if (n != 0) n else { val m = u8(addr - 1); if (m == 1) 256 else m }
  }

  private def delta(at: Long, tsize: Int, end: Long): Long = {
    val d = if (tsize == 0) 0L else u64(at, tsize)
    if (d == EmptyAddress) EmptyAddress else end - d
  }

  /** The final output of node `addr`, None when no key ends there. */
  private def finalOutput(addr: Long): Option[Long] = {
    if (addr == EmptyAddress) return Some(0L)
    val state = u8(addr)
    if ((state >> 6) >= 2 || (state & 0x40) == 0) return None // one-transition nodes are never final
    val n = ntrans(addr, state)
    val nLen = if ((state & 0x3f) == 0) 1 else 0
    val sizes = u8(addr - nLen - 1)
    val tsize = sizes >> 4
    val osize = sizes & 0x0f
    if (osize == 0) return Some(0L)
    val indexSize = if (version >= 2 && n > TransIndexThreshold) 256 else 0
    val at = addr - nLen - 1 - (n + n * tsize + indexSize) - n * osize - osize
    Some(u64(at, osize))
  }
}

object TokenMap {
  private val EmptyAddress = 0L
  private val TransIndexThreshold = 32

  // The fst crate's table of frequent input bytes: a one-transition node names its input by its
  // 1-based place here in the state byte's low six bits (0: the byte follows explicitly).
  private val CommonInputs: Array[Int] =
    ("te/oasripcnw.hlm-du012g=:bf3y5&_4v9678k%?xCDASFIBEjPTzRNM+LOqHGWUV,YKJZXQ;)(~[]$!'*@".map(_.toInt) ++
      (0 until 32) ++ Seq(' ', '"', '#', '<', '>', '\\', '^', '`', '{', '|', '}').map(_.toInt) ++ (0x7f to 0xff)).toArray
  require(CommonInputs.length == 256 && CommonInputs.distinct.length == 256)
}
