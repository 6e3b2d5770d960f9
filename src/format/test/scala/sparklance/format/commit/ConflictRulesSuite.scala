package sparklance.format.commit

import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._
import com.google.protobuf.ByteString
import org.roaringbitmap.RoaringBitmap
import sparklance.format.deletion.PortableBitmaps
import sparklance.format.proto.TableProtos.{DataFragment, IndexMetadata}
import sparklance.format.proto.TransactionProtos.Transaction
import sparklance.format.proto.TransactionProtos.Transaction.OperationCase
import sparklance.format.proto.TransactionProtos.Transaction.OperationCase._

/**
 * The conflict table against the outcomes of Lance's resolver (conflict_resolver.rs, the one
 * pylance 14 runs), written out here row by row: C compatible, M merge deletion vectors,
 * R retryable, I incompatible. Where Lance looks at data we do not model (index bitmaps,
 * overlay coverage) the expected answer is the cautious R, marked "cautious".
 */
class ConflictRulesSuite extends AnyFunSuite {
  private def frag(id: Long) = DataFragment.newBuilder().setId(id).build()

  /** A transaction of `kind` that changes fragment `on` where the operation names fragments. */
  private def txn(kind: OperationCase, on: Long = 1, config: Map[String, String] = Map.empty,
      preservesNullability: Boolean = true): Transaction = {
    val b = Transaction.newBuilder().setUuid(s"$kind-$on")
    kind match {
      case APPEND => b.setAppend(Transaction.Append.newBuilder().addFragments(frag(0)))
      case DELETE => b.setDelete(Transaction.Delete.newBuilder().addUpdatedFragments(frag(on)))
      case UPDATE => b.setUpdate(Transaction.Update.newBuilder().addRemovedFragmentIds(on).addNewFragments(frag(0)))
      case OVERWRITE => b.setOverwrite(Transaction.Overwrite.newBuilder().putAllConfigUpsertValues(config.asJava))
      case CREATE_INDEX => b.setCreateIndex(Transaction.CreateIndex.newBuilder().addNewIndices(IndexMetadata.newBuilder()
        .setName(s"idx-$on").addFields(0).setFragmentBitmap(ByteString.copyFrom(PortableBitmaps.toBytes(RoaringBitmap.bitmapOf(on.toInt))))))
      case REWRITE => b.setRewrite(Transaction.Rewrite.newBuilder().addGroups(
        Transaction.Rewrite.RewriteGroup.newBuilder().addOldFragments(frag(on)).addNewFragments(frag(0))))
      case MERGE => b.setMerge(Transaction.Merge.newBuilder().setPreservesNullability(preservesNullability))
      case RESTORE => b.setRestore(Transaction.Restore.newBuilder().setVersion(1))
      case RESERVE_FRAGMENTS => b.setReserveFragments(Transaction.ReserveFragments.newBuilder().setNumFragments(2))
      case PROJECT => b.setProject(Transaction.Project.newBuilder().setPreservesNullability(preservesNullability))
      case UPDATE_CONFIG =>
        val updates = Transaction.UpdateMap.newBuilder()
        config.foreach { case (k, v) => updates.addUpdateEntries(Transaction.UpdateMapEntry.newBuilder().setKey(k).setValue(v)) }
        b.setUpdateConfig(Transaction.UpdateConfig.newBuilder().setConfigUpdates(updates))
      case DATA_REPLACEMENT => b.setDataReplacement(Transaction.DataReplacement.newBuilder().addReplacements(
        Transaction.DataReplacementGroup.newBuilder().setFragmentId(on)))
      case UPDATE_MEM_WAL_STATE => b.setUpdateMemWalState(Transaction.UpdateMemWalState.getDefaultInstance)
      case CLONE => b.setClone(Transaction.Clone.getDefaultInstance)
      case UPDATE_BASES => b.setUpdateBases(Transaction.UpdateBases.getDefaultInstance)
      case DATA_OVERLAY => b.setDataOverlay(Transaction.DataOverlay.newBuilder().addGroups(
        Transaction.DataOverlayGroup.newBuilder().setFragmentId(on)))
      case OPERATION_NOT_SET =>
    }
    b.build()
  }

  private val all = OperationCase.values().toSeq.filterNot(_ == OPERATION_NOT_SET)

  private def verdict(r: Ruling): Char = r match {
    case Ruling.Compatible => 'C'
    case Ruling.MergeDeletions => 'M'
    case Ruling.ThroughRewrite => 'T'
    case _: Ruling.Retryable => 'R'
    case _: Ruling.Incompatible => 'I'
  }

  /**
   * Checks every committed operation against `ours` on fragment 1, with theirs on fragment 1
   * (`overlap`) and on fragment 2; operations not listed are expected C both ways.
   */
  private def row(ours: OperationCase, overlap: Map[OperationCase, Char], disjoint: Map[OperationCase, Char]): Unit =
    for (theirs <- all; (expected, on) <- Seq(overlap -> 1L, disjoint -> 2L)) {
      val got = verdict(ConflictRules.check(txn(ours), txn(theirs, on)))
      assert(got == expected.getOrElse(theirs, 'C'), s"ours $ours vs committed $theirs on fragment $on")
    }

  private def same(m: Map[OperationCase, Char]) = (m, m)

  test("Append") {
    val (o, d) = same(Map(OVERWRITE -> 'I', RESTORE -> 'I', UPDATE_MEM_WAL_STATE -> 'I'))
    row(APPEND, o, d)
  }

  test("Delete and Update: deletion vectors merge on shared fragments, and follow rows a compaction moved") {
    val common = Map(MERGE -> 'R', OVERWRITE -> 'I', RESTORE -> 'I', UPDATE_MEM_WAL_STATE -> 'I')
    val overlap = common ++ Map(DELETE -> 'M', UPDATE -> 'M', REWRITE -> 'T', DATA_REPLACEMENT -> 'R')
    row(DELETE, overlap, common)
    row(UPDATE, overlap + (DATA_OVERLAY -> 'R' /* cautious: Lance checks the overlay's coverage */), common)
  }

  test("Overwrite") {
    val (o, d) = same(Map(OVERWRITE -> 'R', UPDATE_MEM_WAL_STATE -> 'I'))
    row(OVERWRITE, o, d)
    assert(verdict(ConflictRules.check(txn(OVERWRITE, config = Map("k" -> "1")), txn(OVERWRITE, config = Map("k" -> "2")))) == 'I')
    assert(verdict(ConflictRules.check(txn(OVERWRITE, config = Map("k" -> "1")), txn(UPDATE_CONFIG, config = Map("k" -> "2")))) == 'I')
    assert(verdict(ConflictRules.check(txn(OVERWRITE, config = Map("k" -> "1")), txn(UPDATE_CONFIG, config = Map("j" -> "2")))) == 'C')
  }

  test("Rewrite (compaction)") {
    val common = Map(MERGE -> 'R', OVERWRITE -> 'I', RESTORE -> 'I')
    row(REWRITE, common ++ Map(CREATE_INDEX -> 'R', DELETE -> 'R', UPDATE -> 'R', REWRITE -> 'R', DATA_REPLACEMENT -> 'R',
      DATA_OVERLAY -> 'R'), common)
    // Lance: an index without a fragment bitmap may cover anything.
    val unbounded = Transaction.newBuilder().setUuid("idx").setCreateIndex(Transaction.CreateIndex.newBuilder()
      .addNewIndices(IndexMetadata.newBuilder().setName("idx").addFields(0))).build()
    assert(verdict(ConflictRules.check(txn(REWRITE), unbounded)) == 'R')
  }

  test("Restore, ReserveFragments, Project, Merge, UpdateConfig") {
    row(RESTORE, Map(UPDATE_MEM_WAL_STATE -> 'I'), Map(UPDATE_MEM_WAL_STATE -> 'I'))
    val (ro, rd) = same(Map(OVERWRITE -> 'I', RESTORE -> 'I'))
    row(RESERVE_FRAGMENTS, ro, rd)
    val (po, pd) = same(Map(MERGE -> 'R', PROJECT -> 'R', OVERWRITE -> 'I', RESTORE -> 'I', UPDATE_MEM_WAL_STATE -> 'I'))
    row(PROJECT, po, pd)
    val (mo, md) = same(Map(CREATE_INDEX -> 'R' /* cautious: Lance retries for a MemWAL index only */,
      APPEND -> 'R', DELETE -> 'R', UPDATE -> 'R', REWRITE -> 'R', MERGE -> 'R', DATA_REPLACEMENT -> 'R', DATA_OVERLAY -> 'R',
      OVERWRITE -> 'I', RESTORE -> 'I', PROJECT -> 'I', UPDATE_MEM_WAL_STATE -> 'I'))
    row(MERGE, mo, md)
    row(UPDATE_CONFIG, Map.empty, Map.empty)
    assert(verdict(ConflictRules.check(txn(UPDATE_CONFIG, config = Map("k" -> "1")), txn(UPDATE_CONFIG, config = Map("k" -> "2")))) == 'I')
    assert(verdict(ConflictRules.check(txn(UPDATE_CONFIG, config = Map("k" -> "1")), txn(OVERWRITE, config = Map("k" -> "2")))) == 'I')
  }

  test("CreateIndex: new rows and deletions pass; rewritten fragments or columns and the same index retry") {
    val (o, d) = same(Map(REWRITE -> 'R', DATA_REPLACEMENT -> 'R', DATA_OVERLAY -> 'R', MERGE -> 'R', PROJECT -> 'R',
      OVERWRITE -> 'I', RESTORE -> 'I', UPDATE_MEM_WAL_STATE -> 'I'))
    row(CREATE_INDEX, o + (CREATE_INDEX -> 'R'), d) // the same index name on fragment 1
    def index(name: String, field: Int) = Transaction.newBuilder().setUuid(name).setCreateIndex(Transaction.CreateIndex.newBuilder()
      .addNewIndices(sparklance.format.proto.TableProtos.IndexMetadata.newBuilder().setName(name).addFields(field))).build()
    assert(verdict(ConflictRules.check(index("k_idx", 0), index("k_idx", 0))) == 'R')
    assert(verdict(ConflictRules.check(index("k_idx", 0), index("s_idx", 3))) == 'C')
    def rewroteColumn(field: Int) = Transaction.newBuilder().setUuid("u").setUpdate(Transaction.Update.newBuilder()
      .addUpdatedFragments(frag(1)).addFieldsModified(field).setUpdateMode(Transaction.UpdateMode.REWRITE_COLUMNS)).build()
    assert(verdict(ConflictRules.check(index("k_idx", 0), rewroteColumn(0))) == 'R')
    assert(verdict(ConflictRules.check(index("k_idx", 0), rewroteColumn(2))) == 'C')
  }

  test("a change of nullability cannot pass a commit that wrote values, in either order") {
    for (values <- Seq(APPEND, UPDATE, DATA_REPLACEMENT, DATA_OVERLAY); schema <- Seq(PROJECT, MERGE)) {
      assert(verdict(ConflictRules.check(txn(values), txn(schema, preservesNullability = false))) == 'R', s"$values vs $schema")
      assert(verdict(ConflictRules.check(txn(schema, preservesNullability = false), txn(values))) == 'R', s"$schema vs $values")
    }
    assert(verdict(ConflictRules.check(txn(APPEND), txn(PROJECT))) == 'C')
  }

  test("a Merge cannot pass a change of schema metadata, in either order") {
    val metadata = Transaction.newBuilder().setUpdateConfig(Transaction.UpdateConfig.newBuilder().setSchemaMetadataUpdates(
      Transaction.UpdateMap.newBuilder().addUpdateEntries(Transaction.UpdateMapEntry.newBuilder().setKey("a").setValue("b")))).build()
    assert(verdict(ConflictRules.check(txn(MERGE), metadata)) == 'R')
    assert(verdict(ConflictRules.check(metadata, txn(MERGE))) == 'R')
  }

  test("a write of values cannot pass a commit that added a CHECK constraint; other commits and other keys pass") {
    val added = txn(UPDATE_CONFIG, config = Map(WriteConstraints.Prefix + "positive" -> """{"check":"v > 0"}"""))
    for (values <- Seq(APPEND, UPDATE, DATA_REPLACEMENT, DATA_OVERLAY)) ConflictRules.check(txn(values), added) match {
      case Ruling.Retryable(reason) => assert(reason.contains("positive"), s"$values: $reason")
      case other => fail(s"$values: got $other")
    }
    for (passes <- Seq(DELETE, REWRITE, CREATE_INDEX, RESERVE_FRAGMENTS))
      assert(verdict(ConflictRules.check(txn(passes), added)) == 'C', s"$passes")
    assert(verdict(ConflictRules.check(txn(APPEND), txn(UPDATE_CONFIG, config = Map("sparklance.other" -> "1")))) == 'C')
    // Dropping a constraint (a removed key) lets writes pass.
    val dropped = Transaction.newBuilder().setUpdateConfig(Transaction.UpdateConfig.newBuilder().setConfigUpdates(
      Transaction.UpdateMap.newBuilder().addUpdateEntries(Transaction.UpdateMapEntry.newBuilder().setKey(WriteConstraints.Prefix + "positive")))).build()
    assert(verdict(ConflictRules.check(txn(APPEND), dropped)) == 'C')
  }

  test("an operation newer than our protos is a retryable conflict that names its field") {
    val unknown = com.google.protobuf.UnknownFieldSet.newBuilder().addField(116,
      com.google.protobuf.UnknownFieldSet.Field.newBuilder().addLengthDelimited(com.google.protobuf.ByteString.EMPTY).build()).build()
    val theirs = Transaction.parseFrom(Transaction.newBuilder().setUnknownFields(unknown).build().toByteArray)
    ConflictRules.check(txn(APPEND), theirs) match {
      case Ruling.Retryable(reason) => assert(reason.contains("transaction field 116"))
      case other => fail(s"got $other")
    }
  }
}
