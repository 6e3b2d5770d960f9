package sparklance.format.file.v2_1

/** Little-endian reads and growable byte/bit/int buffers used while decoding pages. */
private[v2_1] object Bytes {
  def u8(a: Array[Byte], at: Int): Int = a(at) & 0xff
  def u16(a: Array[Byte], at: Int): Int = ByteArrayWords.u16(a, at).toInt
  def i32(a: Array[Byte], at: Int): Int = ByteArrayWords.u32(a, at).toInt
  def u32(a: Array[Byte], at: Int): Long = ByteArrayWords.u32(a, at)
  def i64(a: Array[Byte], at: Int): Long = ByteArrayWords.i64(a, at)

  /** Reads an unsigned little-endian integer of `bytes` (1..8) bytes. */
  def uN(a: Array[Byte], at: Int, bytes: Int): Long = bytes match {
    // The common widths in one load each: byte by byte, they were top frames of a profile of appends.
    case 8 => ByteArrayWords.i64(a, at)
    case 4 => ByteArrayWords.u32(a, at)
    case 2 => ByteArrayWords.u16(a, at)
    case 1 => a(at) & 0xffL
    case _ =>
      var v = 0L
      var k = bytes - 1
      while (k >= 0) { v = (v << 8) | (a(at + k) & 0xffL); k -= 1 }
      v
  }

  /**
   * The `n` integers of `bytes` (1..8) bytes each from `at` on, read as [[uN]] reads them, in a
   * loop per width: a bit-packed page's values read through a lambda and [[uN]]'s match per value
   * were two frames of an append's profile.
   */
  def uNs(a: Array[Byte], at: Int, n: Int, bytes: Int): Array[Long] = {
    val out = new Array[Long](n)
    var i = 0
    bytes match {
      case 8 => while (i < n) { out(i) = ByteArrayWords.i64(a, at + 8 * i); i += 1 }
      case 4 => while (i < n) { out(i) = ByteArrayWords.u32(a, at + 4 * i); i += 1 }
      case 2 => while (i < n) { out(i) = ByteArrayWords.u16(a, at + 2 * i); i += 1 }
      case _ => while (i < n) { out(i) = uN(a, at + bytes * i, bytes); i += 1 }
    }
    out
  }

  /** Writes the low `bytes` bytes of `v` little-endian at `at`. */
  def putN(a: Array[Byte], at: Int, bytes: Int, v: Long): Unit = bytes match {
    case 8 => ByteArrayWords.put64(a, at, v)
    case 4 => ByteArrayWords.put32(a, at, v)
    case 2 => ByteArrayWords.put16(a, at, v)
    case 1 => a(at) = v.toByte
    case _ =>
      var k = 0
      while (k < bytes) { a(at + k) = (v >>> (8 * k)).toByte; k += 1 }
  }

  def pad8(n: Int): Int = (n + 7) & ~7

  def getBit(a: Array[Byte], bit: Long): Boolean = ((a((bit >>> 3).toInt) >>> (bit & 7).toInt) & 1) != 0
  def setBit(a: Array[Byte], bit: Long): Unit = a((bit >>> 3).toInt) = (a((bit >>> 3).toInt) | (1 << (bit & 7).toInt)).toByte
  def bytesForBits(bits: Long): Int = Math.toIntExact((bits + 7) >>> 3)
}

/** A growable byte array. */
private[v2_1] final class ByteSink(initial: Int = 64) {
  var array: Array[Byte] = new Array[Byte](math.max(initial, 16))
  var size: Int = 0
  def ensure(extra: Long): Unit = {
    val need = size + extra
    if (need > Int.MaxValue - 16) throw new IllegalStateException(s"$need bytes exceed one array")
    if (need > array.length) array = java.util.Arrays.copyOf(array, math.min(Int.MaxValue - 16L, math.max(need, array.length * 2L)).toInt)
  }
  def append(src: Array[Byte], from: Int, len: Int): Unit = { ensure(len); System.arraycopy(src, from, array, size, len); size += len }
  def zeros(len: Int): Unit = { ensure(len); java.util.Arrays.fill(array, size, size + len, 0.toByte); size += len }
  def toArray: Array[Byte] = java.util.Arrays.copyOf(array, size)
  /** Empties the sink, keeping its array for the next bytes. */
  def clear(): Unit = size = 0
}

/** A growable LSB-first bitmap. */
private[v2_1] final class BitSink(initialBits: Int = 64) {
  var array: Array[Byte] = new Array[Byte](math.max(8, (initialBits + 7) / 8))
  var size: Long = 0
  private def ensure(extra: Long): Unit = {
    val need = Bytes.bytesForBits(size + extra)
    if (need > array.length) array = java.util.Arrays.copyOf(array, math.max(need, array.length * 2))
  }
  def add(bit: Boolean): Unit = { ensure(1); if (bit) Bytes.setBit(array, size); size += 1 }
  def addMany(bit: Boolean, n: Long): Unit = {
    ensure(n)
    if (bit && n > 0) {
      // Bit by bit up to a byte boundary, whole bytes at once, then the rest: a vector column's
      // items are all valid, dimension x rows of them per batch.
      val end = size + n
      var i = size
      while (i < end && (i & 7) != 0) { Bytes.setBit(array, i); i += 1 }
      val wholeEnd = end & ~7L
      if (i < wholeEnd) { java.util.Arrays.fill(array, (i >>> 3).toInt, (wholeEnd >>> 3).toInt, 0xff.toByte); i = wholeEnd }
      while (i < end) { Bytes.setBit(array, i); i += 1 }
    }
    size += n
  }
  def appendBits(src: Array[Byte], fromBit: Long, n: Long): Unit = {
    ensure(n)
    if ((fromBit & 7) == 0 && (size & 7) == 0) {
      val whole = (n >>> 3).toInt
      System.arraycopy(src, (fromBit >>> 3).toInt, array, (size >>> 3).toInt, whole)
      var i = whole.toLong * 8
      while (i < n) { if (Bytes.getBit(src, fromBit + i)) Bytes.setBit(array, size + i); i += 1 }
    } else {
      var i = 0L
      while (i < n) { if (Bytes.getBit(src, fromBit + i)) Bytes.setBit(array, size + i); i += 1 }
    }
    size += n
  }
  /** Empties the sink, keeping its array; `add` only sets ones, so the used bytes are zeroed. */
  def clear(): Unit = { java.util.Arrays.fill(array, 0, Bytes.bytesForBits(size), 0.toByte); size = 0 }
  def countOnes: Long = { var c = 0L; var i = 0L; while (i < size) { if (Bytes.getBit(array, i)) c += 1; i += 1 }; c }
}

/** A growable int array. */
private[v2_1] final class IntSink(initial: Int = 64) {
  var array: Array[Int] = new Array[Int](math.max(initial, 16))
  var size: Int = 0
  def add(v: Int): Unit = {
    if (size == array.length) array = java.util.Arrays.copyOf(array, array.length * 2)
    array(size) = v; size += 1
  }
  def appendAll(src: Array[Int], from: Int, len: Int): Unit = {
    if (size + len > array.length) array = java.util.Arrays.copyOf(array, math.max(size + len, array.length * 2))
    System.arraycopy(src, from, array, size, len); size += len
  }
  /** Appends `n` copies of `v`. */
  def addMany(v: Int, n: Int): Unit = {
    if (size + n > array.length) array = java.util.Arrays.copyOf(array, math.max(size + n, array.length * 2))
    java.util.Arrays.fill(array, size, size + n, v)
    size += n
  }
  /** Empties the sink, keeping its array for the next values. */
  def clear(): Unit = size = 0
  def toArray: Array[Int] = java.util.Arrays.copyOf(array, size)
}
