package bench.finagle

import com.twitter.finagle.Service
import com.twitter.finagle.http.{Method, Request, Response, Status}
import com.twitter.io.Buf
import com.twitter.util.Future
import java.net.URI
import scala.util.control.NonFatal

final case class Weather(code: Int, temp: Int)
final case class UpstreamError(error: String)

/** `/weather/{city}`: per request, fetch the upstream document through Finagle's pooled keep-alive client (the calling
  * event loop's own, from `upstream()`) and reduce it.
  */
final class WeatherClient(upstream: () => Service[Request, Response], url: URI) {
  private val path = Option(url.getRawPath).filter(_.nonEmpty).getOrElse("/")
  private val authority = url.getAuthority

  def current(): Future[Response] = {
    val req = Request(Method.Get, path)
    req.host = authority // nginx requires Host on HTTP/1.1
    upstream()(req)
      .map { rep =>
        if (rep.status != Status.Ok) badGateway(s"upstream answered ${rep.statusCode}")
        else Responses.json(Status.Ok, Json.mapper.writeValueAsBytes(parse(Buf.ByteArray.Owned.extract(rep.content))))
      }
      .handle { case NonFatal(e) => badGateway(s"upstream failed: ${Option(e.getMessage).getOrElse(e.getClass.getName)}") }
  }

  /** code = weather[0].id, temp = integer part of main.temp */
  private def parse(document: Array[Byte]): Weather = {
    val root = Json.mapper.readTree(document)
    val id = root.path("weather").path(0).path("id")
    val temp = root.path("main").path("temp")
    require(id.isIntegralNumber && temp.isNumber, "unexpected upstream document")
    Weather(code = id.intValue, temp = temp.doubleValue.toInt)
  }

  private def badGateway(message: String): Response =
    Responses.json(Status.BadGateway, Json.mapper.writeValueAsBytes(UpstreamError(message)))
}
