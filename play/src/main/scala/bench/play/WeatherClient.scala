package bench.play

import java.net.URI
import org.apache.pekko.actor.ActorSystem
import org.apache.pekko.http.scaladsl.Http
import org.apache.pekko.http.scaladsl.model.{HttpRequest, StatusCodes}
import org.apache.pekko.pattern.after
import play.api.libs.json.{JsValue, Json, OWrites}
import play.api.mvc.Result
import play.api.mvc.Results.{BadGateway, Ok}
import scala.concurrent.{Future, TimeoutException}
import scala.concurrent.duration._
import scala.util.control.NonFatal

final case class Weather(code: Int, temp: Int)

object Weather {
  implicit val writes: OWrites[Weather] = Json.writes[Weather]

  /** code = weather[0].id, temp = integer part of main.temp */
  def fromUpstream(document: JsValue): Option[Weather] =
    for {
      code <- (document \ "weather" \ 0 \ "id").asOpt[Int]
      temp <- (document \ "main" \ "temp").asOpt[Double]
    } yield Weather(code, temp.toInt)
}

/**
 * `/weather/{city}`: per request, fetch the upstream document and reduce it. The client is Pekko HTTP's own
 * (already on the classpath through Play's server backend): its host connection pool keeps connections alive
 * and reuses them, and it adds nothing to shade, unlike Play WS with its shaded AsyncHttpClient.
 */
final class WeatherClient(url: URI)(implicit system: ActorSystem) {
  import system.dispatcher
  private val http = Http()
  private val uri = url.toString

  def current(): Future[Result] =
    Future.firstCompletedOf(Seq(fetch(), timeout)).recover { case NonFatal(e) =>
      badGateway(s"upstream failed: ${e.getMessage}")
    }

  // the client has no per-request deadline: a hung upstream becomes a 502 after 5 s, not a hung request
  private def timeout: Future[Nothing] =
    after(5.seconds)(Future.failed(new TimeoutException("no answer within 5 s")))

  private def fetch(): Future[Result] =
    http
      .singleRequest(HttpRequest(uri = uri))
      .flatMap { rep =>
        if (rep.status != StatusCodes.OK) {
          rep.discardEntityBytes() // frees the pooled connection
          Future.successful(badGateway(s"upstream answered ${rep.status.intValue}"))
        } else
          rep.entity.toStrict(5.seconds).map { entity =>
            Weather.fromUpstream(Json.parse(entity.data.toArrayUnsafe())) match {
              case Some(weather) => Ok(Json.toJson(weather))
              case None          => badGateway("unexpected upstream document")
            }
          }
      }

  private def badGateway(message: String): Result = BadGateway(Json.obj("error" -> message))
}
