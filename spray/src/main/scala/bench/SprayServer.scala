package bench

import java.util.concurrent.atomic.AtomicLong

import scala.collection.immutable.ListMap
import scala.concurrent.duration._
import scala.concurrent.{Await, ExecutionContext, Future}
import scala.util.{Failure, Success, Try}

import akka.actor.{ActorRef, ActorSystem, Props}
import akka.io.IO
import akka.pattern.ask
import akka.util.Timeout
import com.typesafe.config.{Config, ConfigFactory}
import spray.can.Http
import spray.client.pipelining._
import spray.http.MediaTypes.`text/html`
import spray.http.StatusCodes.{BadGateway, BadRequest, NotFound, OK}
import spray.http.{ContentTypes, HttpEntity, Uri}
import spray.json._
import spray.routing.{HttpServiceActor, RejectionHandler, Route}

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
    def write(tweet: Tweet): JsValue = JsObject(ListMap(
      "id" -> JsNumber(tweet.id), "author" -> JsString(tweet.author), "content" -> JsString(tweet.content)))
  }
  implicit val weatherFormat: RootJsonFormat[Weather] = jsonFormat2(Weather)
  // spray-json reads only the named fields and ignores the rest of the document
  implicit val conditionFormat: RootJsonFormat[Condition] = jsonFormat1(Condition)
  implicit val measurementsFormat: RootJsonFormat[Measurements] = jsonFormat1(Measurements)
  implicit val upstreamWeatherFormat: RootJsonFormat[UpstreamWeather] = jsonFormat2(UpstreamWeather)
}

/** The routes, run by one spray-routing actor that spray-can hands every request to.
  * @param upstreamConnector spray-client's host connector: a pool of keep-alive connections to the upstream */
class SprayService(upstreamConnector: ActorRef, upstreamPath: Uri) extends HttpServiceActor {
  import Protocol._
  import SprayServer._

  private implicit val executionContext: ExecutionContext = context.dispatcher
  // /fibonacci's own thread pool (see application.conf)
  private val fibonacciContext: ExecutionContext = context.system.dispatchers.lookup("fibonacci-dispatcher")

  private val nextTweetId = new AtomicLong(1000000)

  private implicit val upstreamTimeout: Timeout = Timeout(10.seconds)
  private val fetchUpstream = sendReceive(upstreamConnector)

  // the contract answers 404 to anything it does not list (spray would say 405 to a POST, for instance)
  private implicit val everythingElseIsNotFound: RejectionHandler = RejectionHandler {
    case _ => complete((NotFound, "Not Found"))
  }

  def receive: Receive = runRoute(route)

  // `complete` takes its argument by name: each expression below is evaluated per request
  val route: Route = get {
    path("id") {
      complete("spray")
    } ~
    path("hello") {
      complete("Hello World")
    } ~
    path("backend") {
      respondWithMediaType(`text/html`) {
        complete("<h1>Say hello to akka-http</h1>")
      }
    } ~
    path("v1" / "tweets") {
      complete(json(JsArray(Tweet(nextTweetId.getAndIncrement(), "author1", "Hello, World!").toJson)))
    } ~
    path("factorial") {
      withParam(MaxFactorial) { n => complete(factorial(n).toString) }
    } ~
    path("fibonacci") {
      // CPU-bound for up to seconds: off the dispatcher that serves the connections
      withParam(MaxFibonacci) { n => complete(Future(fibonacci(n).toString)(fibonacciContext)) }
    } ~
    path("weather" / Segment) { _ =>
      onComplete(weather()) {
        case Success(reply) => complete(json(reply.toJson))
        case Failure(e) => complete((BadGateway, json(JsObject("error" -> JsString(s"upstream: ${e.getMessage}")))))
      }
    }
  }

  /** Fetch the upstream document through the pool, parse it, keep two fields. */
  private def weather(): Future[Weather] =
    fetchUpstream(Get(upstreamPath)).map {
      case response if response.status == OK =>
        // spray-json reads the bytes as UTF-8 (nginx sends application/json without a charset)
        JsonParser(ParserInput(response.entity.data.toByteArray)).convertTo[UpstreamWeather].toWeather
      case response =>
        throw new IllegalStateException(s"status ${response.status.intValue}")
    }

  private def withParam(max: Int)(inner: Int => Route): Route =
    parameter("param".?) { raw =>
      raw.flatMap(s => Try(s.toInt).toOption).filter(n => n >= 0 && n <= max) match {
        case Some(n) => inner(n)
        case None => complete((BadRequest, s"param must be an integer from 0 to $max"))
      }
    }

  private def json(value: JsValue): HttpEntity = HttpEntity(ContentTypes.`application/json`, value.compactPrint)
}

object SprayServer {
  val MaxFactorial = 5000
  val MaxFibonacci = 45

  def factorial(n: Int): BigInt = (1 to n).foldLeft(BigInt(1))(_ * _)

  def fibonacci(n: Int): Long = if (n < 2) 1 else fibonacci(n - 1) + fibonacci(n - 2)

  def main(args: Array[String]): Unit = {
    val env = sys.env
    val host = env.getOrElse("HOST", "127.0.0.1")
    val port = env.get("PORT").map(_.toInt).getOrElse(8083)
    val cores = env.get("SERVER_CORES").flatMap(s => Try(s.toInt).toOption).filter(_ > 0)
      .getOrElse(Runtime.getRuntime.availableProcessors)
    val upstream = Uri(env.getOrElse("UPSTREAM_URL", "http://127.0.0.1:8000/weather.json"))

    implicit val system: ActorSystem =
      ActorSystem("spray-server", coreSizedConfig(cores).withFallback(ConfigFactory.load()))
    import system.dispatcher
    implicit val setupTimeout: Timeout = Timeout(10.seconds)

    // the host connector only opens connections when requests arrive: this works with the upstream down
    val upstreamConnector = Await.result(
      IO(Http) ? Http.HostConnectorSetup(upstream.authority.host.address, upstream.effectivePort),
      setupTimeout.duration) match { case Http.HostConnectorInfo(connector, _) => connector }

    val service = system.actorOf(Props(new SprayService(upstreamConnector, upstream.toRelative)), "routes")
    // backlog 4096: ab -c 1000 opens its connections in one burst
    (IO(Http) ? Http.Bind(service, host, port, backlog = 4096)).onComplete {
      case Success(Http.Bound(address)) =>
        println(s"spray listening on http://$host:${address.getPort}/ (SERVER_CORES=$cores, " +
          s"availableProcessors=${Runtime.getRuntime.availableProcessors}, upstream $upstream)")
      case other =>
        System.err.println(s"spray: cannot bind $host:$port: $other")
        System.exit(1)
    }

    // SIGTERM: stop the actor system (closing the listener and connections), then the JVM exits
    sys.addShutdownHook {
      system.terminate()
      Await.ready(system.whenTerminated, 5.seconds)
    }
  }

  /** Thread pools sized to the CPUs the server is pinned to: one thread per core for spray-can's connection
    * actors and the routes (default dispatcher), and as many for /fibonacci so it can use every core. */
  private def coreSizedConfig(cores: Int): Config = ConfigFactory.parseString(
    s"""akka.actor.default-dispatcher.fork-join-executor {
       |  parallelism-min = $cores
       |  parallelism-max = $cores
       |}
       |fibonacci-dispatcher.thread-pool-executor.fixed-pool-size = $cores
       |""".stripMargin)
}
