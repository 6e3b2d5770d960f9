package sparklance.spark

/**
 * One table property sparklance understands (the registry is [[TableProperties]]): its name in
 * TBLPROPERTIES, the kind of value it takes, the value a table without it has, and the line the
 * docs give it (docs/configuration.md, which a test checks against the registry).
 * `configKey` is where the table config keeps it; None for the two properties that are the
 * table's format (its data file version and the stable row id feature flag), which the manifest
 * records in its own fields and only CREATE / REPLACE choose.
 */
final case class TableProperty[T](name: String, kind: PropertyKind[T], default: T, configKey: Option[String], doc: String) {
  def fixedAtCreation: Boolean = configKey.isEmpty

  /** The value `raw` stands for; a value of another kind is an error naming the table, the property and the value. */
  def parse(table: String, raw: String): T = kind.read(raw).getOrElse(
    throw new InvalidTablePropertyException(table, name, s"must be ${kind.values}, got '$raw'"))

  /** `raw` as the table config stores it. */
  def normalize(table: String, raw: String): String = kind.render(parse(table, raw))

  /**
   * The value a table with `config` has: what the config holds, else the default. A value another
   * writer stored that is not of the kind is an error that says where it is.
   */
  def of(config: Map[String, String]): T = configKey.flatMap(config.get).fold(default)(raw => kind.read(raw).getOrElse(
    throw new InvalidTablePropertyException("the table", name,
      s"the table config's ${configKey.get} holds '$raw', which is not ${kind.values}; set the property again with ALTER TABLE")))

  /** A statement's option of the same name, else the table's value. */
  def of(options: Map[String, String], config: Map[String, String]): T =
    options.get(name).fold(of(config))(parse("this statement's options", _))
}
