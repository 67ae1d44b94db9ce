package bench

import java.util.concurrent.atomic.AtomicLong

import scala.util.{Failure, Success, Try}

import akka.actor.{Actor, ActorRef}
import akka.util.Timeout
import org.mashupbots.socko.events.HttpResponseStatus
import spray.client.pipelining._
import spray.http.StatusCodes
import spray.http.Uri
import spray.json._

/** JSON shapes: what /v1/tweets and /weather answer, and the part of the upstream document that is read. */
object Protocol extends DefaultJsonProtocol {
  final case class Tweet(id: Long, author: String, content: String)
  final case class Weather(code: Int, temp: Int)

  final case class Condition(id: Int)
  final case class Measurements(temp: Double)
  final case class UpstreamWeather(weather: Seq[Condition], main: Measurements) {
    def toWeather: Weather = Weather(code = weather.head.id, temp = main.temp.toInt)
  }

  // spray-json 1.3.6 sorts the fields of a JsObject built from pairs (a TreeMap): the contract's order is
  // id, author, content, so the writer hands it an insertion-ordered map
  implicit object TweetWriter extends RootJsonWriter[Tweet] {
    def write(tweet: Tweet): JsValue = JsObject(scala.collection.immutable.ListMap(
      "id" -> JsNumber(tweet.id), "author" -> JsString(tweet.author), "content" -> JsString(tweet.content)))
  }
  implicit val weatherFormat: RootJsonFormat[Weather] = jsonFormat2(Weather)
  // spray-json reads only the named fields and ignores the rest of the document
  implicit val conditionFormat: RootJsonFormat[Condition] = jsonFormat1(Condition)
  implicit val measurementsFormat: RootJsonFormat[Measurements] = jsonFormat1(Measurements)
  implicit val upstreamWeatherFormat: RootJsonFormat[UpstreamWeather] = jsonFormat2(UpstreamWeather)
}

/** What the routes send to the handler actors. */
object Requests {
  final case class Text(reply: Reply, contentType: String, body: String)
  final case class Tweets(reply: Reply)
  final case class Factorial(reply: Reply, param: Option[String])
  final case class Fibonacci(reply: Reply, param: Option[String])
  final case class FetchWeather(reply: Reply)
  final case class NotFound(reply: Reply)
  final case class BadRequest(reply: Reply)

  val MaxFactorial = 5000
  val MaxFibonacci = 45

  /** `param` as an integer in 0..max, or the 400 answer. */
  def withParam(reply: Reply, param: Option[String], max: Int)(answer: Int => String): Unit =
    param.flatMap(p => Try(p.toInt).toOption).filter(n => n >= 0 && n <= max) match {
      case Some(n) => reply.ok(TextPlain, answer(n))
      case None => reply(HttpResponseStatus.BAD_REQUEST, TextPlain, s"param must be an integer from 0 to $max")
    }

  val TextPlain = "text/plain; charset=utf-8"
  val Json = "application/json"
}

/** The quick routes; a round-robin pool of these runs on the default dispatcher. */
class QuickHandler(tweetIds: AtomicLong) extends Actor {
  import Protocol._
  import Requests._

  def receive: Receive = {
    case Text(reply, contentType, body) =>
      reply.ok(contentType, body)
    case Tweets(reply) =>
      reply.ok(Json, JsArray(Tweet(tweetIds.getAndIncrement(), "author1", "Hello, World!").toJson).compactPrint)
    case Factorial(reply, param) =>
      withParam(reply, param, MaxFactorial)(n => (1 to n).foldLeft(BigInt(1))(_ * _).toString)
    case NotFound(reply) =>
      reply(HttpResponseStatus.NOT_FOUND, TextPlain, "Not Found")
    case BadRequest(reply) =>
      reply(HttpResponseStatus.BAD_REQUEST, TextPlain, "Bad Request")
  }
}

/** /fibonacci: CPU-bound for up to seconds, so its pool runs on its own dispatcher (fibonacci-dispatcher). */
class FibonacciHandler extends Actor {
  import Requests._

  def receive: Receive = {
    case Fibonacci(reply, param) => withParam(reply, param, MaxFibonacci)(n => fibonacci(n).toString)
  }

  private def fibonacci(n: Int): Long = if (n < 2) 1 else fibonacci(n - 1) + fibonacci(n - 2)
}

/** /weather/{city}: fetch the upstream document through spray-client's pooled host connector, parse it and
  * answer; the actor never waits for the upstream, the answer is written when the response arrives. */
class WeatherHandler(upstreamConnector: ActorRef, upstreamPath: Uri) extends Actor {
  import Protocol._
  import Requests._
  import context.dispatcher

  private implicit val upstreamTimeout: Timeout = Timeout(10, java.util.concurrent.TimeUnit.SECONDS)
  private val fetchUpstream = sendReceive(upstreamConnector)

  def receive: Receive = {
    case FetchWeather(reply) =>
      fetchUpstream(Get(upstreamPath)).map {
        case response if response.status == StatusCodes.OK =>
          // spray-json reads the bytes as UTF-8 (nginx sends application/json without a charset)
          JsonParser(ParserInput(response.entity.data.toByteArray)).convertTo[UpstreamWeather].toWeather
        case response =>
          throw new IllegalStateException(s"status ${response.status.intValue}")
      }.onComplete {
        case Success(weather) => reply.ok(Json, weather.toJson.compactPrint)
        case Failure(e) =>
          reply(HttpResponseStatus.BAD_GATEWAY, Json, JsObject("error" -> JsString(s"upstream: ${e.getMessage}")).compactPrint)
      }
  }
}
