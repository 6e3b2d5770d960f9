package sparklance.format.index.vector

import java.util.Locale
import sparklance.format.UnsupportedFeatureException
import sparklance.format.proto.VectorIndexProtos.VectorMetricType

/**
 * A distance between float vectors, in pylance's units (LANCE-VECTOR-INDICES.md §3): squared L2
 * (no square root), `1 - cos`, `1 - dot`. Smaller is nearer for all three.
 */
sealed abstract class VectorMetric(val name: String, val proto: VectorMetricType) extends Serializable {
  /** Cosine indices are L2 indices over unit vectors: rows, samples and queries are normalized first. */
  def normalizes: Boolean = this == VectorMetric.Cosine
  /** Dot indices keep unit-norm centroids and quantize raw vectors, not residuals. */
  def spherical: Boolean = this == VectorMetric.Dot

  /** The exact distance between `q` and the `dim` floats of `x` from `offset`. */
  def distance(q: Array[Float], x: Array[Float], offset: Int): Float

  final def distance(q: Array[Float], x: Array[Float]): Float = {
    if (q.length != x.length) throw new IllegalArgumentException(s"Vectors of ${q.length} and ${x.length} dimensions")
    distance(q, x, 0)
  }

  override def toString: String = name
}

object VectorMetric {
  case object L2 extends VectorMetric("l2", VectorMetricType.L2) {
    def distance(q: Array[Float], x: Array[Float], offset: Int): Float = {
      var s = 0f
      var j = 0
      while (j < q.length) { val d = q(j) - x(offset + j); s += d * d; j += 1 }
      s
    }
  }

  case object Cosine extends VectorMetric("cosine", VectorMetricType.Cosine) {
    def distance(q: Array[Float], x: Array[Float], offset: Int): Float = {
      var dot, qq, xx = 0f
      var j = 0
      while (j < q.length) {
        val a = q(j); val b = x(offset + j)
        dot += a * b; qq += a * a; xx += b * b
        j += 1
      }
      // A zero vector has no direction: as far from everything as an orthogonal one.
      if (qq == 0f || xx == 0f) 1f else 1f - dot / (math.sqrt(qq).toFloat * math.sqrt(xx).toFloat)
    }
  }

  case object Dot extends VectorMetric("dot", VectorMetricType.Dot) {
    def distance(q: Array[Float], x: Array[Float], offset: Int): Float = 1f - dot(q, x, offset)
  }

  val all: Seq[VectorMetric] = Seq(L2, Cosine, Dot)

  /** The metric pylance names `name` (any case; "euclidean" is its alias of l2), if sparklance has it. */
  def find(name: String): Option[VectorMetric] = name.toLowerCase(Locale.ROOT) match {
    case "euclidean" => Some(L2)
    case other => all.find(_.name == other)
  }

  /** "l2", "cosine" or "dot" in any case (pylance's names; "euclidean" is pylance's alias of l2). */
  def parse(name: String): VectorMetric = find(name).getOrElse(throw new UnsupportedFeatureException(
    s"Unknown vector distance type '$name'; sparklance knows ${all.map(_.name).mkString(", ")}"))

  /** The metric of a VectorIndexDetails message; Hamming (binary vectors) is refused by name. */
  def of(t: VectorMetricType): VectorMetric = t match {
    case VectorMetricType.L2 => L2
    case VectorMetricType.Cosine => Cosine
    case VectorMetricType.Dot => Dot
    case other => throw new UnsupportedFeatureException(s"Vector indices with metric $other are not supported; sparklance searches l2, cosine and dot")
  }

  /** `q · x` over the `q.length` floats of `x` from `offset`, summed in f32 in index order. */
  def dot(q: Array[Float], x: Array[Float], offset: Int): Float = {
    var s = 0f
    var j = 0
    while (j < q.length) { s += q(j) * x(offset + j); j += 1 }
    s
  }

  /** `v / |v|` (a zero vector stays zero): cosine indices store and probe unit vectors. */
  def normalized(v: Array[Float]): Array[Float] = {
    var s = 0f
    v.foreach(x => s += x * x)
    val n = math.sqrt(s).toFloat
    if (n == 0f) v.clone() else v.map(_ / n)
  }
}
