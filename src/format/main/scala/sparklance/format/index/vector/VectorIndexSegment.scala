package sparklance.format.index.vector

import com.fasterxml.jackson.databind.ObjectMapper
import java.nio.charset.StandardCharsets.UTF_8
import org.apache.arrow.memory.BufferAllocator
import org.apache.arrow.vector.UInt8Vector
import org.apache.arrow.vector.types.FloatingPointPrecision
import org.apache.arrow.vector.types.pojo.ArrowType
import org.roaringbitmap.RoaringBitmap
import scala.jdk.CollectionConverters._
import sparklance.format.{CorruptFileException, Resources, UnsupportedFeatureException}
import sparklance.format.index.Indices
import sparklance.format.io.Storage
import sparklance.format.proto.TableProtos.IndexMetadata
import sparklance.format.proto.VectorIndexProtos.VectorIndexDetails
import sparklance.format.skipping.IndexFile
import sparklance.format.table.{LanceField, Snapshot}

/**
 * One segment of an IVF vector index (LANCE-VECTOR-INDICES.md §1–2): the centroids of index.idx
 * and the partitions of auxiliary.idx, read partition by partition as a search probes them and
 * kept (up to [[VectorIndexSegment.CacheBytes]]) for the next. Index files never change, so a
 * segment serves any search of a version whose manifest holds the same entry ([[VectorIndexCache]]);
 * thread-safe (partition reads are one at a time).
 */
final class VectorIndexSegment private (
    val entry: IndexMetadata,
    val indexType: VectorIndexType,
    val metric: VectorMetric,
    val dim: Int,
    centroids: Array[Float],
    partitions: IvfModel,
    val storage: VectorStorage,
    auxiliary: IndexFile) extends AutoCloseable {

  def name: String = entry.getName
  def numPartitions: Int = partitions.numPartitions

  /** The fragments this segment holds rows of (every fragment for an entry without a bitmap). */
  val coverage: Option[RoaringBitmap] = Indices.coverage(entry)

  def centroid(p: Int): Array[Float] = java.util.Arrays.copyOfRange(centroids, p * dim, (p + 1) * dim)

  /**
   * Partition ids nearest first, with their distances, for `query` (a unit vector for a cosine
   * index): L2 to the centroids for l2 and cosine, `1 - q·c` for dot (§3), ties by partition id.
   */
  def rank(query: Array[Float]): Array[(Int, Float)] = {
    val probe = if (metric == VectorMetric.Dot) VectorMetric.Dot else VectorMetric.L2
    Array.tabulate(numPartitions)(p => (p, probe.distance(query, centroids, p * dim))).sortBy { case (p, d) => (d, p) }
  }

  // Partitions read so far (row ids and payload bytes), up to CacheBytes: the next queries of a
  // kept segment probe mostly the same partitions, and decoding them again cost more than scoring.
  private val cache = scala.collection.mutable.Map.empty[Int, (Array[Long], Array[Byte])]
  private var cachedBytes = 0L

  private def partition(p: Int, allocator: BufferAllocator): (Array[Long], Array[Byte]) = synchronized(cache.getOrElse(p, {
    val n = partitions.lengths(p)
    val read = auxiliary.columns(Seq("_rowid", storage.column), allocator, partitions.offsets(p), n) {
      case Seq(ids: UInt8Vector, payload) => (Array.tabulate(n)(i => ids.get(i)), VectorStorage.bytes(payload, n, storage.bytesPerRow))
      case other => throw new CorruptFileException(auxiliary.path, s"_rowid is ${other.head.getField.getType}, not uint64")
    }
    val size = n * (8L + storage.bytesPerRow)
    if (cachedBytes + size <= VectorIndexSegment.CacheBytes) { cache(p) = read; cachedBytes += size }
    read
  }))

  /** Heap bytes this segment holds: centroids, the storage's model (a PQ codebook) and the partitions kept. */
  def heapBytes: Long = synchronized(cachedBytes) + centroids.length * 4L + storage.modelBytes

  /** Row ids (as the index stores them) and distances to `query` of every row of partition `p`. */
  def scan(query: Array[Float], p: Int, allocator: BufferAllocator): (Array[Long], Array[Float]) = {
    val n = partitions.lengths(p)
    if (n == 0) return (Array.emptyLongArray, Array.emptyFloatArray)
    val (ids, payload) = partition(p, allocator)
    (ids, storage.distances(query, centroid(p), payload, n))
  }

  def close(): Unit = synchronized(auxiliary.close())
}

object VectorIndexSegment {
  val TypeUrlSuffix = "VectorIndexDetails"
  /** Bytes of partitions a segment keeps decoded for its next searches. */
  val CacheBytes: Long = 128L << 20
  private val json = new ObjectMapper()

  def isVector(index: IndexMetadata): Boolean = index.getIndexDetails.getTypeUrl.endsWith(TypeUrlSuffix)

  /** The vector index entries of `snapshot` on the field `fieldId` (every segment of every name). */
  def entries(snapshot: Snapshot, fieldId: Int): Seq[IndexMetadata] =
    Indices.parse(snapshot.file.indexSection, s"${snapshot.tablePath} version ${snapshot.version}")
      .filter(i => isVector(i) && i.getFieldsList.asScala.map(_.intValue) == Seq(fieldId))

  /** The metric an entry's details record (L2 when absent: proto3's default). */
  def detailsMetric(index: IndexMetadata): VectorMetric =
    VectorMetric.of(VectorIndexDetails.parseFrom(index.getIndexDetails.getValue).getMetricType)

  /**
   * The index type an entry's details record, in pylance's spelling (IVF_FLAT, IVF_PQ, IVF_SQ,
   * IVF_HNSW_FLAT / _PQ / _SQ), without opening its files; "VECTOR" when the details name no
   * compression (older writers left them empty).
   */
  def detailsTypeName(index: IndexMetadata): String = {
    val details = VectorIndexDetails.parseFrom(index.getIndexDetails.getValue)
    val sub = if (details.hasHnswIndexConfig) "IVF_HNSW_" else "IVF_"
    details.getCompressionCase match {
      case VectorIndexDetails.CompressionCase.PQ => sub + "PQ"
      case VectorIndexDetails.CompressionCase.SQ => sub + "SQ"
      case VectorIndexDetails.CompressionCase.FLAT => sub + "FLAT"
      case _ => "VECTOR"
    }
  }

  /** The dimension of a vector column: float32 fixed-size lists only. */
  def dimension(field: LanceField): Int = field.arrowType match {
    case f: ArrowType.FixedSizeList if field.arrowItemType.contains(new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE)) =>
      f.getListSize
    case _: ArrowType.FixedSizeList => throw new UnsupportedFeatureException(
      s"Column '${field.name}' is a vector of ${field.arrowItemType.getOrElse("?")}; sparklance searches float32 vectors")
    case other => throw new UnsupportedFeatureException(s"Column '${field.name}' is $other, not a fixed-size list of floats (a vector)")
  }

  /** Opens segment `entry` of `snapshot`, an index on `field`. */
  def open(storage: Storage, snapshot: Snapshot, entry: IndexMetadata, field: LanceField): VectorIndexSegment = {
    val dim = dimension(field)
    val what = s"${Indices.describe(entry)} (${Indices.directory(entry)}) of ${snapshot.tablePath}"
    val (indexType, metric, centroids) = {
      val index = IndexFile.open(storage, snapshot.files, entry, "index.idx")
      try {
        val meta = index.schema.metadata
        def text(key: String) = meta.get(key).map(new String(_, UTF_8))
        val described = text("lance:index").getOrElse(throw new UnsupportedFeatureException(
          s"Vector index $what has no lance:index metadata (a legacy index format); rebuild it with a recent pylance"))
        val node = try json.readTree(described) catch { case e: Exception => throw new CorruptFileException(index.path, s"lance:index is not JSON: $described") }
        val indexType = VectorIndexType.parse(Option(node.get("type")).map(_.asText).getOrElse(""), what)
        val metric = VectorMetric.parse(Option(node.get("distance_type")).map(_.asText).getOrElse(
          throw new CorruptFileException(index.path, s"lance:index names no distance_type: $described")))
        val ivf = IvfModel.parse(index.globalBuffer(bufferNumber(text("lance:ivf"), index.path)), index.path)
        val c = ivf.centroids.getOrElse(throw new CorruptFileException(index.path, "the IVF message has no centroids"))
        if (c.shape.size != 2 || c.shape(1) != dim)
          throw new CorruptFileException(index.path, s"centroids of shape ${c.shape.mkString("[", ", ", "]")} for vectors of $dim dimensions")
        (indexType, metric, c)
      } finally index.close()
    }
    val aux = IndexFile.open(storage, snapshot.files, entry, "auxiliary.idx")
    Resources.closeOnFailure(Seq(aux)) {
      val meta = aux.schema.metadata
      def text(key: String) = meta.get(key).map(new String(_, UTF_8))
      val partitions = IvfModel.parse(aux.globalBuffer(bufferNumber(text("lance:ivf"), aux.path)), aux.path)
      if (partitions.numPartitions != centroids.shape(0))
        throw new CorruptFileException(aux.path, s"${partitions.numPartitions} partitions for ${centroids.shape(0)} centroids")
      if (partitions.offsets.zip(partitions.lengths).exists { case (o, l) => o < 0 || l < 0 || o + l > aux.numRows })
        throw new CorruptFileException(aux.path, s"partition ranges beyond its ${aux.numRows} rows")
      val store = VectorStorage.of(indexType, metric, dim, text("storage_metadata"), aux.path, aux.globalBuffer)
      new VectorIndexSegment(entry, indexType, metric, dim, centroids.values, partitions, store, aux)
    }
  }

  private def bufferNumber(value: Option[String], path: String): Int =
    value.flatMap(_.trim.toIntOption).filter(_ > 0).getOrElse(
      throw new CorruptFileException(path, s"lance:ivf names no global buffer: ${value.getOrElse("(absent)")}"))
}
