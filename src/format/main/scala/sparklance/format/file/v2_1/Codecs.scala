package sparklance.format.file.v2_1

import com.github.luben.zstd.{Zstd, ZstdException}
import net.jpountz.lz4.{LZ4Exception, LZ4Factory}
import sparklance.format.CorruptFileException
import sparklance.format.proto.Encodings21Protos.{BufferCompression, CompressionScheme}

/**
 * General compression (LANCE-FILE-2.1-2.2.md §9.6): LZ4 blocks behind a u32 uncompressed size,
 * zstd frames behind a u64 uncompressed size (a bare frame is accepted too).
 */
private[v2_1] object Codecs {
  private val ZstdMagic = 0xfd2fb528

  def decompress(c: BufferCompression, src: Array[Byte], from: Int, len: Int, ctx: Ctx): Array[Byte] =
    c.getScheme match {
      case CompressionScheme.COMPRESSION_ALGORITHM_ZSTD => zstd(src, from, len, ctx)
      case CompressionScheme.COMPRESSION_ALGORITHM_LZ4 => lz4(src, from, len, ctx)
      case other => throw ctx.unsupported(s"general compression scheme $other")
    }

  private def sizeOf(n: Long, ctx: Ctx): Int =
    if (n < 0 || n > Int.MaxValue - 64) throw ctx.corrupt(s"implausible uncompressed size $n") else n.toInt

  def zstd(src: Array[Byte], from: Int, len: Int, ctx: Ctx): Array[Byte] = {
    if (len == 0) return Array.emptyByteArray
    val bare = len >= 4 && Bytes.i32(src, from) == ZstdMagic
    if (!bare && len < 8) throw ctx.corrupt(s"zstd buffer of $len bytes is too short")
    val frameStart = if (bare) 0 else 8
    val size = if (bare) sizeOf(Zstd.getFrameContentSize(src, from, len), ctx) else sizeOf(Bytes.i64(src, from), ctx)
    val out = new Array[Byte](size)
    val n =
      try Zstd.decompressByteArray(out, 0, size, src, from + frameStart, len - frameStart)
      catch { case e: ZstdException => throw new CorruptFileException(ctx.path, s"${ctx.where}: zstd data is damaged", e) }
    if (Zstd.isError(n) || n != size) throw ctx.corrupt(s"zstd data does not decode to its $size bytes")
    out
  }

  def lz4(src: Array[Byte], from: Int, len: Int, ctx: Ctx): Array[Byte] = {
    if (len < 4) throw ctx.corrupt(s"lz4 buffer of $len bytes is too short")
    val size = sizeOf(Bytes.u32(src, from), ctx)
    val out = new Array[Byte](size)
    val n =
      try LZ4Factory.fastestInstance().safeDecompressor().decompress(src, from + 4, len - 4, out, 0, size)
      catch { case e: LZ4Exception => throw new CorruptFileException(ctx.path, s"${ctx.where}: lz4 data is damaged", e) }
    if (n != size) throw ctx.corrupt(s"lz4 data holds $n bytes, its header says $size")
    out
  }
}
