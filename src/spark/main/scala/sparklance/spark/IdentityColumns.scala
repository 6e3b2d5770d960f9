package sparklance.spark

import org.apache.spark.sql.catalyst.util.{IdentityColumn => SparkIdentity}
import org.apache.spark.sql.connector.catalog.IdentityColumnSpec
import org.apache.spark.sql.types.{LongType, Metadata, MetadataBuilder, StructField, StructType}
import org.apache.arrow.vector.BigIntVector
import sparklance.format.UnsupportedFeatureException
import sparklance.format.commit.MetadataClaim
import sparklance.format.io.Storage
import sparklance.format.table.{FragmentScanner, LanceSchema, Snapshot}

/**
 * An identity column (`GENERATED ALWAYS | BY DEFAULT AS IDENTITY (START WITH s INCREMENT BY i)`),
 * as the writers see it: `fieldId` is its Lance field id, which keys its high-water mark. `always`:
 * values given by a statement are refused (GENERATED ALWAYS); otherwise a NULL (or a missing
 * column) gets a generated value and a given value is written as it is (BY DEFAULT).
 */
final case class IdentityColumn(name: String, fieldId: Int, start: Long, step: Long, always: Boolean) {
  require(step != 0, "an identity column's step is not 0")

  /** Whether `a` lies beyond `b` in the column's direction (above for a positive step, below for a negative one). */
  def beyond(a: Long, b: Long): Boolean = if (step > 0) a > b else a < b

  /** The value of `a` and `b` furthest in the column's direction. */
  def furthest(a: Long, b: Long): Long = if (beyond(a, b)) a else b

  /**
   * The `k`-th value (from 0) that task `partition` of `partitions` generates above the high-water
   * mark `mark` (None: no value yet, the first is `start`): the tasks' values interleave, so they
   * never meet, and a single task numbers its rows without gaps.
   */
  def generated(mark: Option[Long], partition: Int, partitions: Int, k: Long): Long = {
    val slot = Math.addExact(Math.multiplyExact(k, partitions.toLong), partition.toLong)
    mark match {
      case None => Math.addExact(start, Math.multiplyExact(step, slot))
      case Some(m) => Math.addExact(m, Math.multiplyExact(step, Math.addExact(slot, 1L)))
    }
  }
}

/**
 * Identity columns of Lance tables. Their declaration is kept in the Lance field's metadata, as
 * the column DEFAULTs are (see [[ColumnDefaults]]), so pylance shows it in `ds.schema.field(c).metadata`:
 * `spark.identity.start`, `spark.identity.step` and `spark.identity.allowExplicitInsert` (`true` for
 * BY DEFAULT). The high-water mark (the furthest value any sparklance write put in the column) is
 * kept in the table metadata under `sparklance.identity.<field id>.high_water_mark` (not shown as a property),
 * which every Lance commit copies from the version before. A write that generates values claims
 * the mark it read and sets the new one in the same commit (a [[MetadataClaim]]): of two writers
 * that generated values from the same mark, the second to commit fails with a retryable conflict,
 * so no value is ever handed out twice; deletes and compactions keep the mark where it is.
 */
object IdentityColumns {
  val StartKey = "spark.identity.start"
  val StepKey = "spark.identity.step"
  val AllowExplicitKey = "spark.identity.allowExplicitInsert"
  private val sparkKeys = Seq(SparkIdentity.IDENTITY_INFO_START -> StartKey, SparkIdentity.IDENTITY_INFO_STEP -> StepKey,
    SparkIdentity.IDENTITY_INFO_ALLOW_EXPLICIT_INSERT -> AllowExplicitKey)

  def highWaterMarkKey(fieldId: Int): String = s"sparklance.identity.$fieldId.high_water_mark"

  /** Whether a table metadata key holds a high-water mark: the writers' state, not a property (SHOW CREATE TABLE must not replay it). */
  def isHighWaterMarkKey(key: String): Boolean =
    key.startsWith("sparklance.identity.") && (key.endsWith(".high_water_mark") || key.endsWith(".fragments_through"))

  /** Spark column metadata declaring `spec`. */
  def toMetadata(metadata: Metadata, spec: IdentityColumnSpec): Metadata = new MetadataBuilder().withMetadata(metadata)
    .putLong(SparkIdentity.IDENTITY_INFO_START, spec.getStart).putLong(SparkIdentity.IDENTITY_INFO_STEP, spec.getStep)
    .putBoolean(SparkIdentity.IDENTITY_INFO_ALLOW_EXPLICIT_INSERT, spec.isAllowExplicitInsert).build()

  /** The identity declaration of a Spark column's metadata, if it has one. */
  def spec(field: StructField): Option[IdentityColumnSpec] = SparkIdentity.getIdentityInfo(field)

  /** Spark column metadata without the identity declaration. */
  def withoutSpec(metadata: Metadata): Metadata =
    sparkKeys.map(_._1).foldLeft(new MetadataBuilder().withMetadata(metadata))(_.remove(_)).build()

  /** The Lance field metadata that keeps a Spark column's identity declaration. */
  def toLance(metadata: Metadata): Map[String, String] =
    if (!metadata.contains(SparkIdentity.IDENTITY_INFO_START)) Map.empty
    else Map(StartKey -> metadata.getLong(SparkIdentity.IDENTITY_INFO_START).toString,
      StepKey -> metadata.getLong(SparkIdentity.IDENTITY_INFO_STEP).toString,
      AllowExplicitKey -> metadata.getBoolean(SparkIdentity.IDENTITY_INFO_ALLOW_EXPLICIT_INSERT).toString)

  /**
   * `field` with the identity declaration of a Lance field's `metadata`, if it has one, and
   * nullable: a statement that gives the column no value hands the writer a NULL, which becomes
   * a generated value (Spark would otherwise refuse a missing NOT NULL column).
   */
  def toSpark(field: StructField, metadata: Map[String, String]): StructField = parse(field.name, metadata) match {
    case None => field
    case Some((start, step, explicit)) =>
      field.copy(nullable = true, metadata = toMetadata(field.metadata, new IdentityColumnSpec(start, step, explicit)))
  }

  private def parse(column: String, metadata: Map[String, String]): Option[(Long, Long, Boolean)] =
    metadata.get(StartKey).map { start =>
      def long(key: String, v: String) = v.toLongOption.getOrElse(throw new UnsupportedFeatureException(
        s"Identity column '$column' has field metadata $key = '$v', which is not a number"))
      (long(StartKey, start), long(StepKey, metadata.getOrElse(StepKey, "1")),
        metadata.get(AllowExplicitKey).exists(_.equalsIgnoreCase("true")))
    }

  /**
   * Checks the identity columns a new table declares: BIGINT columns (Delta's rule: an INT would
   * run out), a step other than 0, no DEFAULT beside them.
   */
  def checkNew(table: String, schema: StructType): Unit = schema.fields.foreach { f =>
    spec(f).foreach { s =>
      def refuse(why: String) = throw new UnsupportedFeatureException(s"Identity column '${f.name}' of $table: $why")
      if (f.dataType != LongType) refuse(s"an identity column is BIGINT, not ${f.dataType.sql}")
      if (s.getStep == 0) refuse("its step (INCREMENT BY) cannot be 0")
      if (ColumnDefaults.current(f).isDefined) refuse("an identity column has no DEFAULT")
    }
  }

  /** The identity columns of a table's schema. */
  def of(schema: LanceSchema): Seq[IdentityColumn] = schema.fields.flatMap { f =>
    parse(f.name, f.metadata).map { case (start, step, explicit) => IdentityColumn(f.name, f.id, start, step, !explicit) }
  }

  /**
   * Table metadata key of the fragment id up to which a high-water mark accounts for the values
   * present: the last fragment id of the version the write that set it was planned on. Fragments
   * with higher ids hold rows written since (the next writes' own, a compaction's, or pylance's,
   * which knows nothing of the mark), whose values [[highWaterMark]] reads.
   */
  def scannedThroughKey(fieldId: Int): String = s"sparklance.identity.$fieldId.fragments_through"

  private def stored(snapshot: Snapshot, key: String): Option[Long] =
    Option(snapshot.manifest.getTableMetadataMap.get(key)).flatMap(_.toLongOption)

  /** The high-water mark `column` has in `snapshot`'s table metadata: the furthest value sparklance's writes put in it. */
  def storedMark(snapshot: Snapshot, column: IdentityColumn): Option[Long] = stored(snapshot, highWaterMarkKey(column.fieldId))

  /**
   * The value a write planned on `snapshot` generates beyond: the stored mark, or the furthest
   * value of the column in the live rows of fragments added after the mark was set, if that lies
   * beyond it (an append by pylance, which does not generate values, of values given by its
   * caller). Reads the column of those fragments only.
   */
  def highWaterMark(snapshot: Snapshot, storage: Storage, column: IdentityColumn): Option[Long] = {
    val through = stored(snapshot, scannedThroughKey(column.fieldId))
    val unscanned = snapshot.fragments.filter(f => through.forall(f.getId > _))
    val field = snapshot.schema.fields.filter(_.id == column.fieldId)
    val present = if (unscanned.isEmpty || field.isEmpty) None else scala.util.Using.resource(Allocators.child(s"identity-${column.name}")) { allocator =>
      unscanned.flatMap { f =>
        val scanner = new FragmentScanner(storage, snapshot.files, f, field, allocator, 0, f.getPhysicalRows)
        try scanner.flatMap { batch =>
          try {
            val values = batch.vectors.head.asInstanceOf[BigIntVector]
            (0 until batch.numRows).filterNot(values.isNull).map(values.get).reduceOption(column.furthest)
          } finally batch.close()
        }.reduceOption(column.furthest) finally scanner.close()
      }.reduceOption(column.furthest)
    }
    (storedMark(snapshot, column) ++ present).reduceOption(column.furthest)
  }

  /**
   * The claim a write planned on `snapshot` commits with, given the mark it generated beyond for
   * each identity column (`marks`) and the furthest value its tasks put in each (by name): the
   * stored marks it read, replaced by the furthest of those values (with the fragments they now
   * account for). None when the write put no value beyond the marks (nothing generated, explicit
   * values below them) and found none beyond them.
   */
  def claim(snapshot: Snapshot, marks: Seq[(IdentityColumn, Option[Long])], furthest: Map[String, Long]): Option[MetadataClaim] = {
    val throughFragment = snapshot.fragments.map(_.getId).maxOption
    val raised = marks.flatMap { case (c, mark) =>
      val reached = (mark ++ furthest.get(c.name)).reduceOption(c.furthest)
      reached.filter(v => storedMark(snapshot, c).forall(c.beyond(v, _))).toSeq.flatMap { v =>
        Seq(highWaterMarkKey(c.fieldId) -> v.toString) ++ throughFragment.map(scannedThroughKey(c.fieldId) -> _.toString)
      }
    }.toMap
    if (raised.isEmpty) None
    else Some(MetadataClaim(snapshot.version,
      marks.flatMap { case (c, _) => Seq(highWaterMarkKey(c.fieldId), scannedThroughKey(c.fieldId)) }
        .map(k => k -> Option(snapshot.manifest.getTableMetadataMap.get(k))).toMap, raised,
      "the high-water mark of an identity column (another writer generated identity values concurrently)"))
  }
}
