package bench

import java.util.concurrent.atomic.AtomicLong

import scala.util.{Failure, Success}

import akka.actor.{Actor, ActorRef}
import akka.util.Timeout
import bench.contract.Contract
import bench.contract.JsonProtocol._
import org.mashupbots.socko.events.HttpResponseStatus
import spray.client.pipelining._
import spray.http.StatusCodes
import spray.http.Uri
import spray.json._

/** What the routes send to the handler actors. */
object Requests {
  final case class Text(reply: Reply, contentType: String, body: String)
  final case class Tweets(reply: Reply)
  final case class Factorial(reply: Reply, param: Option[String])
  final case class Fibonacci(reply: Reply, param: Option[String])
  final case class FetchWeather(reply: Reply)
  final case class NotFound(reply: Reply)
  final case class BadRequest(reply: Reply)

  /** `param` as an integer in 0..max, or the 400 answer. */
  def withParam(reply: Reply, param: Option[String], max: Int)(answer: Int => String): Unit =
    Contract.param(param.orNull, max) match {
      case -1 => reply(HttpResponseStatus.BAD_REQUEST, TextPlain, Contract.paramError(max))
      case n => reply.ok(TextPlain, answer(n))
    }

  val TextPlain = "text/plain; charset=utf-8"
  val Json = "application/json"
}

/** The quick routes; a round-robin pool of these runs on the default dispatcher. */
class QuickHandler(tweetIds: AtomicLong) extends Actor {
  import Requests._

  def receive: Receive = {
    case Text(reply, contentType, body) =>
      reply.ok(contentType, body)
    case Tweets(reply) =>
      reply.ok(Json, JsArray(Tweet(tweetIds.getAndIncrement(), "author1", "Hello, World!").toJson).compactPrint)
    case Factorial(reply, param) =>
      withParam(reply, param, Contract.FACTORIAL_MAX)(n => Contract.factorial(n).toString)
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
    case Fibonacci(reply, param) => withParam(reply, param, Contract.FIBONACCI_MAX)(n => Contract.fibonacci(n).toString)
  }
}

/** /weather/{city}: fetch the upstream document through spray-client's pooled host connector, parse it and
  * answer; the actor never waits for the upstream, the answer is written when the response arrives. */
class WeatherHandler(upstreamConnector: ActorRef, upstreamPath: Uri) extends Actor {
  import Requests._
  import context.dispatcher

  private implicit val upstreamTimeout: Timeout = Timeout(10, java.util.concurrent.TimeUnit.SECONDS)
  private val fetchUpstream = sendReceive(upstreamConnector)

  def receive: Receive = {
    case FetchWeather(reply) =>
      fetchUpstream(Get(upstreamPath)).map {
        case response if response.status == StatusCodes.OK => weatherOf(response.entity.data.toByteArray)
        case response =>
          throw new IllegalStateException(s"status ${response.status.intValue}")
      }.onComplete {
        case Success(weather) => reply.ok(Json, weather.toJson.compactPrint)
        case Failure(e) =>
          reply(HttpResponseStatus.BAD_GATEWAY, Json, JsObject("error" -> JsString(s"upstream: ${e.getMessage}")).compactPrint)
      }
  }
}
