package bench.finagle

import java.time.{Instant, ZoneOffset}
import java.time.format.DateTimeFormatter
import java.util.Locale

/** The `Date` header value (IMF-fixdate), formatted at most once per second and shared by all threads. */
object HttpDate {
  private val format = DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.ENGLISH).withZone(ZoneOffset.UTC)

  private final class Stamp(val second: Long, val text: String)
  @volatile private var cached = new Stamp(-1, "")

  def now(): String = {
    val second = System.currentTimeMillis() / 1000
    val stamp = cached
    if (stamp.second == second) stamp.text
    else {
      val text = format.format(Instant.ofEpochSecond(second))
      cached = new Stamp(second, text) // racing threads compute the same text: harmless
      text
    }
  }
}
