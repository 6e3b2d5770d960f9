package sparklance.format.index.vector

import com.fasterxml.jackson.databind.{JsonNode, ObjectMapper}
import org.apache.arrow.vector.FieldVector
import org.apache.arrow.vector.complex.FixedSizeListVector
import sparklance.format.{CorruptFileException, UnsupportedFeatureException}

/**
 * How an IVF index stores the vectors of its partitions (auxiliary.idx, LANCE-VECTOR-INDICES.md
 * §4): the payload column next to `_rowid`, and the distance estimate its values give.
 */
trait VectorStorage {
  /** The payload column of auxiliary.idx. */
  def column: String

  /** Bytes a row of the payload takes (the values of its fixed-size list). */
  def bytesPerRow: Int

  /**
   * The distances to `query` (normalized already for a cosine index) of the `n` rows of one
   * partition, whose centroid is `centroid`, from `payload`: the values of the partition's rows of
   * [[column]], [[bytesPerRow]] a row (little-endian floats for FLAT).
   */
  def distances(query: Array[Float], centroid: Array[Float], payload: Array[Byte], n: Int): Array[Float]

  /** Heap bytes of the model the distances need besides the payload (a PQ codebook; none for FLAT and SQ). */
  def modelBytes: Long = 0L
}

object VectorStorage {
  private val json = new ObjectMapper()

  /**
   * The storage of `indexType` described by auxiliary.idx's `storage_metadata` (a JSON array
   * holding one JSON string), with `buffer(i)` reading global buffer i (the PQ codebook).
   */
  def of(indexType: VectorIndexType, metric: VectorMetric, dim: Int, storageMetadata: Option[String], path: String,
      buffer: Int => Array[Byte]): VectorStorage = {
    def meta: JsonNode = {
      val text = storageMetadata.getOrElse(throw new CorruptFileException(path, "no storage_metadata in the schema metadata"))
      val outer = try json.readTree(text) catch { case e: Exception => throw new CorruptFileException(path, s"storage_metadata is not JSON: $text") }
      if (!outer.isArray || outer.size != 1 || !outer.get(0).isTextual)
        throw new CorruptFileException(path, s"storage_metadata is not an array of one JSON string: $text")
      try json.readTree(outer.get(0).asText) catch { case e: Exception => throw new CorruptFileException(path, s"storage_metadata holds no JSON object: $text") }
    }
    def int(node: JsonNode, key: String): Int = Option(node.get(key)).filter(_.canConvertToInt).map(_.asInt).getOrElse(
      throw new CorruptFileException(path, s"storage_metadata has no integer '$key': $node"))
    indexType match {
      case VectorIndexType.IvfFlat => FlatStorage(metric, dim)
      case VectorIndexType.IvfPq =>
        val m = meta
        val (bits, subVectors) = (int(m, "nbits"), int(m, "num_sub_vectors"))
        if (bits != 8 && bits != 4) throw new UnsupportedFeatureException(s"PQ index $path has $bits-bit codes; sparklance reads 4 and 8")
        if (subVectors <= 0 || dim % subVectors != 0)
          throw new CorruptFileException(path, s"$subVectors sub-vectors do not divide $dim dimensions")
        val transposed = Option(m.get("transposed")).exists(_.asBoolean)
        val codebook = F32Tensor.of(
          sparklance.format.proto.VectorIndexProtos.Tensor.parseFrom(buffer(int(m, "codebook_position"))), path, "PQ codebook")
        if (codebook.values.length != (1 << bits) * dim)
          throw new CorruptFileException(path, s"the PQ codebook holds ${codebook.values.length} floats, not ${1 << bits} x $dim")
        PqStorage(metric, dim, subVectors, bits, transposed, codebook.values)
      case VectorIndexType.IvfSq =>
        val m = meta
        val bits = int(m, "num_bits")
        if (bits != 8) throw new UnsupportedFeatureException(s"SQ index $path has $bits-bit codes; sparklance reads 8")
        val bounds = Option(m.get("bounds")).getOrElse(throw new CorruptFileException(path, s"storage_metadata has no bounds: $m"))
        SqStorage(metric, dim, bounds.get("start").asDouble, bounds.get("end").asDouble)
    }
  }

  /** The values of the `n` rows of a fixed-size list column, `perRow` bytes a row. */
  private[vector] def bytes(payload: FieldVector, n: Int, perRow: Int): Array[Byte] = {
    val data = payload.asInstanceOf[FixedSizeListVector].getDataVector
    val out = new Array[Byte](n * perRow)
    data.getDataBuffer.getBytes(0, out)
    out
  }
}
