package sparklance.spark.procedures

/** A `CALL` of a procedure the catalog does not have; names the ones it has. */
class NoSuchProcedureException(catalog: String, name: String, known: Seq[String])
  extends IllegalArgumentException(s"Catalog $catalog has no procedure $name; its procedures are " +
    known.map(p => s"$catalog.${LanceProcedures.Namespace}.$p").mkString(", "))
