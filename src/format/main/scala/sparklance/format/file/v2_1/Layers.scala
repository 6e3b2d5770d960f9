package sparklance.format.file.v2_1

import sparklance.format.proto.Encodings21Protos.RepDefLayer
import sparklance.format.proto.Encodings21Protos.RepDefLayer._

/**
 * The rep/def layers of a page, innermost first (LANCE-FILE-2.1-2.2.md §4.1-4.3), with the def
 * codes each layer owns (-1 = none).
 */
private[v2_1] final class Layers(val layers: IndexedSeq[RepDefLayer], ctx: Ctx) {
  val size: Int = layers.size
  val nullCode: Array[Int] = new Array[Int](size)
  val emptyCode: Array[Int] = new Array[Int](size)
  val isList: Array[Boolean] = new Array[Boolean](size)

  locally {
    var c = 1
    for (i <- 0 until size) {
      nullCode(i) = -1
      emptyCode(i) = -1
      layers(i) match {
        case REPDEF_ALL_VALID_ITEM =>
        case REPDEF_ALL_VALID_LIST => isList(i) = true
        case REPDEF_NULLABLE_ITEM => nullCode(i) = c; c += 1
        case REPDEF_NULLABLE_LIST => isList(i) = true; nullCode(i) = c; c += 1
        case REPDEF_EMPTYABLE_LIST => isList(i) = true; emptyCode(i) = c; c += 1
        case REPDEF_NULL_AND_EMPTY_LIST => isList(i) = true; nullCode(i) = c; emptyCode(i) = c + 1; c += 2
        case other => throw ctx.corrupt(s"rep/def layer $other")
      }
    }
  }

  val maxDef: Int = (nullCode ++ emptyCode).maxOption.map(math.max(_, 0)).getOrElse(0)
  val maxRep: Int = isList.count(identity)

  /** Def codes owned by the layers before (inside) the innermost list: these entries have slots. */
  val maxVisibleDef: Int = {
    val firstList = isList.indexOf(true)
    val inner = if (firstList < 0) size else firstList
    (0 until inner).map(i => (if (nullCode(i) >= 0) 1 else 0) + (if (emptyCode(i) >= 0) 1 else 0)).sum
  }

  /** The first layer (innermost first) that can be null, for pages that are all null without levels. */
  def firstNullCode: Int = nullCode.find(_ >= 0).getOrElse(0)

  override def toString: String = layers.mkString("[", ", ", "]")
}

/** The Arrow shape of a leaf, which constant pages need to interpret their value. */
private[v2_1] final case class LeafKind(fixedBits: Int, offsetBytes: Int)

private[v2_1] object LeafKind {
  val Variable32: LeafKind = LeafKind(0, 4)
  val Variable64: LeafKind = LeafKind(0, 8)
}
