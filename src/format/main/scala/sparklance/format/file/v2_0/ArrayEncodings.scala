package sparklance.format.file.v2_0

import sparklance.format.proto.Encodings20Protos._

/** Builders for the `ArrayEncoding` shapes pylance writes (LANCE-FILE-2.0.md §2, compact notation). */
private[v2_0] object ArrayEncodings {
  val ArrayEncodingName = "lance.encodings.ArrayEncoding"
  val ColumnEncodingName = "lance.encodings.ColumnEncoding"

  /** `flat<bits>[b<index>]`; the Buffer sub-message must be present even for index 0 (§2.2). */
  def flat(bits: Int, bufferIndex: Int): ArrayEncoding = ArrayEncoding.newBuilder()
    .setFlat(Flat.newBuilder().setBitsPerValue(bits).setBuffer(Buffer.newBuilder().setBufferIndex(bufferIndex)))
    .build()

  def noNulls(values: ArrayEncoding): ArrayEncoding = ArrayEncoding.newBuilder()
    .setNullable(Nullable.newBuilder().setNoNulls(Nullable.NoNull.newBuilder().setValues(values))).build()

  def someNulls(validity: ArrayEncoding, values: ArrayEncoding): ArrayEncoding = ArrayEncoding.newBuilder()
    .setNullable(Nullable.newBuilder().setSomeNulls(Nullable.SomeNull.newBuilder().setValidity(validity).setValues(values)))
    .build()

  val allNulls: ArrayEncoding = ArrayEncoding.newBuilder()
    .setNullable(Nullable.newBuilder().setAllNulls(Nullable.AllNull.getDefaultInstance)).build()

  def fixedSizeList(dimension: Int, items: ArrayEncoding): ArrayEncoding = ArrayEncoding.newBuilder()
    .setFixedSizeList(FixedSizeList.newBuilder().setDimension(dimension).setItems(items)).build()

  def binary(indices: ArrayEncoding, bytes: ArrayEncoding, nullAdjustment: Long): ArrayEncoding = ArrayEncoding.newBuilder()
    .setBinary(Binary.newBuilder().setIndices(indices).setBytes(bytes).setNullAdjustment(nullAdjustment)).build()

  def list(offsets: ArrayEncoding, nullAdjustment: Long, numItems: Long): ArrayEncoding = ArrayEncoding.newBuilder()
    .setList(List.newBuilder().setOffsets(offsets).setNullOffsetAdjustment(nullAdjustment).setNumItems(numItems)).build()

  /** `dictionary{indices, items, num_dictionary_items}` (§2.6a). */
  def dictionary(indices: ArrayEncoding, items: ArrayEncoding, numItems: Int): ArrayEncoding = ArrayEncoding.newBuilder()
    .setDictionary(Dictionary.newBuilder().setIndices(indices).setItems(items).setNumDictionaryItems(numItems)).build()

  val struct: ArrayEncoding = ArrayEncoding.newBuilder().setStruct(SimpleStruct.getDefaultInstance).build()

  val columnValues: ColumnEncoding =
    ColumnEncoding.newBuilder().setValues(com.google.protobuf.Empty.getDefaultInstance).build()
}
