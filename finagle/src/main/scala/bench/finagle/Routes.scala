package bench.finagle

import bench.contract.Contract
import com.fasterxml.jackson.databind.json.JsonMapper
import com.fasterxml.jackson.module.scala.DefaultScalaModule
import com.twitter.finagle.{Service, SimpleFilter}
import com.twitter.finagle.http.{Fields, MediaType, Method, Request, Response, Status, Version}
import com.twitter.io.Buf
import com.twitter.util.{Future, FuturePool}
import java.util.concurrent.atomic.AtomicLong

final case class Tweet(id: Long, author: String, content: String)

/** Shared Jackson mapper (thread-safe once configured); the Scala module serializes case classes and Seqs. */
object Json {
  val mapper: JsonMapper = JsonMapper.builder().addModule(DefaultScalaModule).build()
}

/** The contract's routes: a pattern match on (method, path). Everything not listed is a 404. */
final class Routes(weather: WeatherClient, cpuPool: FuturePool) extends Service[Request, Response] {
  private val tweetIds = new AtomicLong(Contract.FIRST_TWEET_ID)

  def apply(req: Request): Future[Response] = (req.method, req.path) match {
    case (Method.Get, "/id")        => fixed(Status.Ok, Routes.Id, "text/plain")
    case (Method.Get, "/hello")     => fixed(Status.Ok, Routes.Hello, MediaType.PlainTextUtf8)
    case (Method.Get, "/backend")   => fixed(Status.Ok, Routes.Backend, MediaType.HtmlUtf8)
    case (Method.Get, "/v1/tweets") => tweets()
    case (Method.Get, "/factorial") =>
      withParam(req, Contract.FACTORIAL_MAX)(n => text(Status.Ok, Contract.factorial(n).toString, "text/plain"))
    case (Method.Get, "/fibonacci") =>
      // the recursion runs on the CPU pool, never on a Netty I/O thread (see FinagleServer)
      withParam(req, Contract.FIBONACCI_MAX) { n =>
        cpuPool(Contract.fibonacci(n)).flatMap(fib => text(Status.Ok, fib.toString, "text/plain"))
      }
    case (Method.Get, WeatherPath(_)) => weather.current()
    case _                            => fixed(Status.NotFound, Routes.NotFound, "text/plain")
  }

  private def tweets(): Future[Response] = {
    val body = Json.mapper.writeValueAsBytes(Seq(Tweet(tweetIds.getAndIncrement(), "author1", "Hello, World!")))
    Future.value(Responses.json(Status.Ok, body))
  }

  /** Runs `handle` with the integer `param` in [0, max], or answers 400. */
  private def withParam(req: Request, max: Int)(handle: Int => Future[Response]): Future[Response] =
    Contract.param(req.params.get("param").orNull, max) match {
      case -1 => text(Status.BadRequest, s"param must be an integer between 0 and $max", "text/plain")
      case n => handle(n)
    }

  private def text(status: Status, body: String, contentType: String): Future[Response] =
    Future.value(Responses.text(status, Buf.Utf8(body), contentType))

  private def fixed(status: Status, body: Buf, contentType: String): Future[Response] =
    Future.value(Responses.text(status, body, contentType))

  /** `/weather/{city}`: exactly one non-empty path segment after /weather/. */
  private object WeatherPath {
    private val Pattern = "/weather/([^/]+)".r
    def unapply(path: String): Option[String] = path match {
      case Pattern(city) => Some(city)
      case _             => None
    }
  }
}

object Routes {
  // The fixed answers' bodies, UTF-8 encoded once, as Finagle's TechEmpower entry keeps its plaintext body: the
  // contract asks per-request serialization of /v1/tweets only (issue 48).
  private val Id = Buf.Utf8("finagle")
  private val Hello = Buf.Utf8("Hello World")
  private val Backend = Buf.Utf8("<h1>Say hello to akka-http</h1>") // the contract's body, the same for every server
  private val NotFound = Buf.Utf8("Not Found")
}

object Responses {
  // Content-Type through `setUnsafe`, as Finagle's TechEmpower entry: the checked setter validates the name and value
  // on every response, and these are our own constants.
  def text(status: Status, body: Buf, contentType: String): Response = {
    val rep = Response(status)
    rep.headerMap.setUnsafe(Fields.ContentType, contentType)
    rep.content = body
    rep
  }

  def json(status: Status, body: Array[Byte]): Response = {
    val rep = Response(status)
    rep.headerMap.setUnsafe(Fields.ContentType, MediaType.Json)
    rep.content = Buf.ByteArray.Owned(body)
    rep
  }
}

/**
 * Adds what every response needs and Finagle does not add itself: `Server`, `Date` (formatted once per second), and
 * `Connection: keep-alive` for an HTTP/1.0 client that asked to keep the connection.
 */
object ServerHeaders extends SimpleFilter[Request, Response] {
  // our own constant and our own date string: set unchecked, as the entry does
  private val withServerAndDate: Response => Response = { rep =>
    rep.headerMap.setUnsafe(Fields.Server, "finagle").setUnsafe(Fields.Date, HttpDate.now())
    rep
  }

  def apply(req: Request, service: Service[Request, Response]): Future[Response] =
    if (req.version == Version.Http10 && req.keepAlive)
      service(req).map { rep =>
        rep.headerMap.setUnsafe(Fields.Connection, "keep-alive")
        withServerAndDate(rep)
      }
    else service(req).map(withServerAndDate) // no closure allocated per request
}
