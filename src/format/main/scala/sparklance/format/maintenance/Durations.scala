package sparklance.format.maintenance

import java.time.Duration
import java.util.Locale
import sparklance.format.InvalidOptionException

/**
 * Lengths of time as users write them for maintenance: Spark's interval words (`'7 days'`,
 * `'1 day 12 hours'`, `INTERVAL '30' MINUTE` as `'30 minutes'`) and the humantime spellings Lance
 * keeps in table config (`lance.auto_cleanup.older_than = '3600s'`, `'14days'`, `'1h 30m'`). A sum
 * of number-unit pairs; months and years count as humantime counts them (30.44 and 365.25 days).
 */
object Durations {
  private val Pair = """(\d+(?:\.\d+)?)\s*([a-zA-Z]+)""".r

  private val nanosPerUnit: Map[String, BigDecimal] = {
    val second = BigDecimal(1000000000L)
    val day = second * 86400
    def all(nanos: BigDecimal, names: String*) = names.map(_ -> nanos)
    (all(1, "ns", "nsec", "nanos", "nanosecond", "nanoseconds") ++
      all(1000, "us", "usec", "micros", "microsecond", "microseconds") ++
      all(1000000, "ms", "msec", "millis", "millisecond", "milliseconds") ++
      all(second, "s", "sec", "secs", "second", "seconds") ++
      all(second * 60, "m", "min", "mins", "minute", "minutes") ++
      all(second * 3600, "h", "hr", "hrs", "hour", "hours") ++
      all(day, "d", "day", "days") ++
      all(day * 7, "w", "week", "weeks") ++
      all(day * BigDecimal("30.44"), "month", "months", "mo") ++
      all(day * BigDecimal("365.25"), "y", "year", "years")).toMap
  }

  /** Parses `text`; `option` names the setting in the error a bad value gets. */
  def parse(option: String, text: String): Duration = {
    val body = text.replace("'", " ").trim.stripPrefix("interval").stripPrefix("INTERVAL").trim
    val pairs = Pair.findAllMatchIn(body).toSeq
    val rest = Pair.replaceAllIn(body, "").trim
    def bad(why: String) = throw new InvalidOptionException(option,
      s"'$text' is not a length of time ($why); write it as in '7 days', '12 hours', '1 day 6 hours' or '3600s'")
    if (pairs.isEmpty) bad("no number with a unit")
    if (rest.nonEmpty) bad(s"cannot read '$rest'")
    val nanos = pairs.map { m =>
      val unit = m.group(2).toLowerCase(Locale.ROOT)
      // "M" alone is a month in humantime, "m" a minute.
      val perUnit = if (m.group(2) == "M") nanosPerUnit("month") else nanosPerUnit.getOrElse(unit, bad(s"unknown unit '${m.group(2)}'"))
      BigDecimal(m.group(1)) * perUnit
    }.sum
    if (nanos > BigDecimal(Long.MaxValue)) bad("too long")
    Duration.ofNanos(nanos.setScale(0, BigDecimal.RoundingMode.DOWN).toLong)
  }
}
