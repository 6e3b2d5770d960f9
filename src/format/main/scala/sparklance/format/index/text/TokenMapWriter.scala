package sparklance.format.index.text

import java.io.ByteArrayOutputStream
import java.util.zip.CRC32C

/**
 * Writes the token → token id map of a partition (`_token_fst_bytes`) in the `fst` crate's
 * format, version 3, which [[TokenMap]] and pylance read (docs/format-inverted-index.md).
 *
 * The automaton is a trie, not a minimal one: each key's id is the final output of the node its
 * last byte reaches, every transition output is 0. The crate reads any acyclic automaton with
 * valid nodes; minimizing would only make the bytes smaller. Nodes are written children first
 * (a transition points back to an earlier address), as the crate's builder writes them.
 */
final class TokenMapWriter {
  import TokenMapWriter._

  private val out = new ByteArrayOutputStream()
  // Unfinished nodes of the previous key's path: stack(d) is the node reached after d bytes.
  private val stack = scala.collection.mutable.ArrayBuffer(new Pending)
  private var previous: Array[Byte] = null
  private var count = 0L
  private var lastAddress = -1L

  writeLong(3L) // fst version
  writeLong(0L) // fst type

  /** Adds `key` with `value`; keys must come in strictly increasing unsigned byte order. */
  def add(key: Array[Byte], value: Long): Unit = {
    require(value >= 0, s"negative token id $value")
    val common = if (previous == null) 0 else {
      var i = 0
      while (i < key.length && i < previous.length && key(i) == previous(i)) i += 1
      if (i == key.length || (i < previous.length && (key(i) & 0xff) <= (previous(i) & 0xff)))
        throw new IllegalArgumentException("token map keys must be distinct and sorted by their bytes")
      i
    }
    freezeDownTo(common)
    var d = common
    while (d < key.length) { stack(d).pendingInput = key(d) & 0xff; stack += new Pending; d += 1 }
    val last = stack(key.length)
    last.isFinal = true
    last.finalOutput = value
    previous = key
    count += 1
  }

  /** The finished map's bytes: header, nodes, key count, root address, masked CRC32C. */
  def finish(): Array[Byte] = {
    freezeDownTo(0)
    val root = compile(stack(0))
    writeLong(count)
    writeLong(root)
    val crc = new CRC32C()
    val bytes = out.toByteArray
    crc.update(bytes, 0, bytes.length)
    val sum = crc.getValue
    val masked = (((sum >>> 15) | (sum << 17)) + 0xa282ead8L) & 0xffffffffL
    writeInt(masked.toInt)
    out.toByteArray
  }

  /** Writes every node deeper than `depth` and records each as a transition of its parent. */
  private def freezeDownTo(depth: Int): Unit = {
    while (stack.size - 1 > depth) {
      val node = stack.remove(stack.size - 1)
      val parent = stack.last
      parent.addTransition(parent.pendingInput, compile(node))
    }
  }

  /** Writes `node`, returning its address (that of its last byte, the state byte). */
  private def compile(node: Pending): Long = {
    val start = out.size.toLong
    val n = node.inputs.size
    if (!node.isFinal && n == 1) {
      val target = node.addresses(0)
      if (target == lastAddress) {
        // One transition to the node just written, output 0: input byte, then state 0b11_000000.
        out.write(node.inputs(0)); out.write(0xc0)
      } else {
        val tsize = packSize(start - target)
        writeUint(start - target, tsize)
        out.write(tsize << 4) // no output bytes
        out.write(node.inputs(0))
        out.write(0x80) // one transition, input byte explicit
      }
    } else {
      val osize = if (node.isFinal && node.finalOutput != 0) packSize(node.finalOutput) else 0
      val tsize = (0 until n).map(i => packSize(start - node.addresses(i))).foldLeft(1)(math.max)
      if (node.isFinal && osize > 0) writeUint(node.finalOutput, osize)
      // Transition outputs (all 0), then addresses, then inputs, each in reverse order.
      if (osize > 0) (0 until n).foreach(_ => writeUint(0L, osize))
      (n - 1 to 0 by -1).foreach(i => writeUint(start - node.addresses(i), tsize))
      (n - 1 to 0 by -1).foreach(i => out.write(node.inputs(i)))
      if (n > TransIndexThreshold) {
        val index = Array.fill[Byte](256)(0xff.toByte)
        (0 until n).foreach(i => index(node.inputs(i)) = i.toByte)
        out.write(index)
      }
      out.write(tsize << 4 | osize)
      val inState = n >= 1 && n <= 63
      if (!inState) out.write(if (n == 256) 1 else n)
      out.write((if (node.isFinal) 0x40 else 0) | (if (inState) n else 0))
    }
    lastAddress = out.size.toLong - 1
    lastAddress
  }

  private def writeUint(v: Long, n: Int): Unit = { var i = 0; while (i < n) { out.write(((v >>> (8 * i)) & 0xff).toInt); i += 1 } }
  private def writeLong(v: Long): Unit = writeUint(v, 8)
  private def writeInt(v: Int): Unit = writeUint(v.toLong & 0xffffffffL, 4)
}

object TokenMapWriter {
  // Above this many transitions a node carries a 256-byte index from input byte to transition.
  private val TransIndexThreshold = 32

  /** The bytes of a map from `keys` (sorted by their bytes, distinct) to `values`. */
  def write(keys: Seq[Array[Byte]], values: Seq[Long]): Array[Byte] = {
    val w = new TokenMapWriter
    keys.iterator.zip(values.iterator).foreach { case (k, v) => w.add(k, v) }
    w.finish()
  }

  /** Bytes needed for `v` (at least 1). */
  private def packSize(v: Long): Int = {
    var n = 1
    while (n < 8 && (v >>> (8 * n)) != 0) n += 1
    n
  }

  /** A node whose transitions are still being added. */
  private final class Pending {
    val inputs = scala.collection.mutable.ArrayBuffer.empty[Int]
    val addresses = scala.collection.mutable.ArrayBuffer.empty[Long]
    var pendingInput: Int = -1
    var isFinal = false
    var finalOutput = 0L
    def addTransition(input: Int, address: Long): Unit = { inputs += input; addresses += address }
  }
}
