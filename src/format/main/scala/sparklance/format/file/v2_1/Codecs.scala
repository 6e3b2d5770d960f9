package sparklance.format.file.v2_1

import com.github.luben.zstd.{Zstd, ZstdException}
import net.jpountz.lz4.LZ4Exception
import sparklance.format.file.Lz4
import sparklance.format.CorruptFileException
import sparklance.format.proto.Encodings21Protos.{BufferCompression, CompressionScheme}

/**
 * General compression (LANCE-FILE-2.1-2.2.md §9.6): LZ4 blocks behind a u32 uncompressed size,
 * zstd frames behind a u64 uncompressed size (a bare frame is accepted too).
 */
private[v2_1] object Codecs {
  private val ZstdMagic = 0xfd2fb528

  private def sizeOf(n: Long, ctx: Ctx): Int =
    if (n < 0 || n > Int.MaxValue - 64) throw ctx.corrupt(s"implausible uncompressed size $n") else n.toInt

  /** The bytes `src(from until from + len)` decompress to, from their header alone. */
  def decompressedSize(c: BufferCompression, src: Array[Byte], from: Int, len: Int, ctx: Ctx): Int =
    c.getScheme match {
      case CompressionScheme.COMPRESSION_ALGORITHM_ZSTD =>
        if (len == 0) 0
        else if (isBareZstd(src, from, len)) sizeOf(Zstd.getFrameContentSize(src, from, len), ctx)
        else if (len < 8) throw ctx.corrupt(s"zstd buffer of $len bytes is too short")
        else sizeOf(Bytes.i64(src, from), ctx)
      case CompressionScheme.COMPRESSION_ALGORITHM_LZ4 =>
        if (len < 4) throw ctx.corrupt(s"lz4 buffer of $len bytes is too short")
        sizeOf(Bytes.u32(src, from), ctx)
      case other => throw ctx.unsupported(s"general compression scheme $other")
    }

  def decompress(c: BufferCompression, src: Array[Byte], from: Int, len: Int, ctx: Ctx): Array[Byte] = {
    val out = new Array[Byte](decompressedSize(c, src, from, len, ctx))
    decompressInto(c, src, from, len, out, 0, ctx)
    out
  }

  /**
   * Decompresses `src(from until from + len)` into `out` at `at`, which has room for the
   * [[decompressedSize]] bytes it holds; returns that size.
   */
  def decompressInto(c: BufferCompression, src: Array[Byte], from: Int, len: Int, out: Array[Byte], at: Int, ctx: Ctx): Int = {
    val size = decompressedSize(c, src, from, len, ctx)
    if (size == 0 && len == 0) return 0
    c.getScheme match {
      case CompressionScheme.COMPRESSION_ALGORITHM_ZSTD =>
        val frameStart = if (isBareZstd(src, from, len)) 0 else 8
        val n =
          try Zstd.decompressByteArray(out, at, size, src, from + frameStart, len - frameStart)
          catch { case e: ZstdException => throw new CorruptFileException(ctx.path, s"${ctx.where}: zstd data is damaged", e) }
        if (Zstd.isError(n) || n != size) throw ctx.corrupt(s"zstd data does not decode to its $size bytes")
      case _ =>
        val n =
          try Lz4.decompressor.decompress(src, from + 4, len - 4, out, at, size)
          catch { case e: LZ4Exception => throw new CorruptFileException(ctx.path, s"${ctx.where}: lz4 data is damaged", e) }
        if (n != size) throw ctx.corrupt(s"lz4 data holds $n bytes, its header says $size")
    }
    size
  }

  private def isBareZstd(src: Array[Byte], from: Int, len: Int): Boolean = len >= 4 && Bytes.i32(src, from) == ZstdMagic
}
