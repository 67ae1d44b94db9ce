package bench

import java.util.concurrent.atomic.AtomicLong

import scala.collection.immutable.ListMap
import scala.concurrent.duration._
import scala.concurrent.{ExecutionContext, Future}
import scala.util.{Failure, Success}

import org.apache.pekko.actor.ActorSystem
import org.apache.pekko.http.scaladsl.Http
import org.apache.pekko.http.scaladsl.marshallers.sprayjson.SprayJsonSupport._
import org.apache.pekko.http.scaladsl.model._
import org.apache.pekko.http.scaladsl.server.Directives._
import org.apache.pekko.http.scaladsl.server.Route
import org.apache.pekko.http.scaladsl.unmarshalling.Unmarshal
import com.typesafe.config.{Config, ConfigFactory}
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

  // spray-json's derived formats print fields sorted by name (JsObject.apply builds a TreeMap); a tweet's fields
  // must come out in the contract's order, so its writer lists them in a ListMap. It is only ever written.
  private val tweetWriter: RootJsonWriter[Tweet] = tweet => JsObject(ListMap(
    "id" -> JsNumber(tweet.id), "author" -> JsString(tweet.author), "content" -> JsString(tweet.content)))
  implicit val tweetFormat: RootJsonFormat[Tweet] = lift(tweetWriter)
  implicit val weatherFormat: RootJsonFormat[Weather] = jsonFormat2(Weather) // "code" < "temp": already in order
  // spray-json reads only the named fields and ignores the rest of the document
  implicit val conditionFormat: RootJsonFormat[Condition] = jsonFormat1(Condition)
  implicit val measurementsFormat: RootJsonFormat[Measurements] = jsonFormat1(Measurements)
  implicit val upstreamWeatherFormat: RootJsonFormat[UpstreamWeather] = jsonFormat2(UpstreamWeather)
}

object PekkoServer {
  import Protocol._

  private val MaxFactorial = 5000
  private val MaxFibonacci = 45

  def main(args: Array[String]): Unit = {
    val env = sys.env
    val host = env.getOrElse("HOST", "127.0.0.1")
    val port = env.get("PORT").map(_.toInt).getOrElse(8087)
    val cores = env.get("SERVER_CORES").flatMap(_.toIntOption).filter(_ > 0)
      .getOrElse(Runtime.getRuntime.availableProcessors)
    val upstream = Uri(env.getOrElse("UPSTREAM_URL", "http://127.0.0.1:8000/weather.json"))

    implicit val system: ActorSystem =
      ActorSystem("pekko-server", coreSizedConfig(cores).withFallback(ConfigFactory.load()))
    import system.dispatcher

    Http().newServerAt(host, port).bind(new PekkoServer(upstream).route).onComplete {
      case Success(binding) =>
        // SIGTERM runs coordinated shutdown (a JVM shutdown hook): stop accepting, let in-flight requests finish
        binding.addToCoordinatedShutdown(hardTerminationDeadline = 3.seconds)
        println(s"pekko listening on http://$host:$port/ (SERVER_CORES=$cores, " +
          s"availableProcessors=${Runtime.getRuntime.availableProcessors}, upstream $upstream)")
      case Failure(e) =>
        System.err.println(s"pekko: cannot bind $host:$port: $e")
        system.terminate()
    }
  }

  /** Thread pools sized to the CPUs the server is pinned to: one thread per core for the connections and
    * routes (default dispatcher), and as many for /fibonacci so it can use every core when it is the load. */
  private def coreSizedConfig(cores: Int): Config = ConfigFactory.parseString(
    s"""pekko.actor.default-dispatcher.fork-join-executor {
       |  parallelism-min = $cores
       |  parallelism-max = $cores
       |}
       |fibonacci-dispatcher.thread-pool-executor.fixed-pool-size = $cores
       |""".stripMargin)

  def factorial(n: Int): BigInt = (1 to n).foldLeft(BigInt(1))(_ * _)

  def fibonacci(n: Int): Long = if (n < 2) 1 else fibonacci(n - 1) + fibonacci(n - 2)
}

final class PekkoServer(upstream: Uri)(implicit system: ActorSystem) {
  import PekkoServer._
  import Protocol._
  import system.dispatcher

  private val tweetIds = new AtomicLong(1000000)
  private val fibonacciContext: ExecutionContext = system.dispatchers.lookup("fibonacci-dispatcher")

  val route: Route = get {
    concat(
      path("id") {
        complete("pekko")
      },
      path("hello") {
        complete("Hello World")
      },
      path("backend") {
        complete(HttpEntity(ContentTypes.`text/html(UTF-8)`, "<h1>Say hello to akka-http</h1>")) // the contract's body, the same for every server
      },
      path("v1" / "tweets") {
        complete(List(Tweet(tweetIds.getAndIncrement(), "author1", "Hello, World!")))
      },
      path("factorial") {
        intParam(MaxFactorial) { n =>
          complete(factorial(n).toString)
        }
      },
      path("fibonacci") {
        intParam(MaxFibonacci) { n =>
          // CPU-bound: computed on its own dispatcher, never on the one serving the connections
          complete(Future(fibonacci(n).toString)(fibonacciContext))
        }
      },
      path("weather" / Segment) { _ =>
        onComplete(fetchWeather()) {
          case Success(weather) => complete(weather)
          case Failure(e) =>
            complete(StatusCodes.BadGateway, JsObject("error" -> JsString(s"upstream failed: ${e.getMessage}")))
        }
      }
    )
  }

  /** The `param` query parameter as an integer in 0..max, or 400. */
  private def intParam(max: Int)(inner: Int => Route): Route =
    parameter("param".optional) { raw =>
      raw.flatMap(_.toIntOption).filter(n => n >= 0 && n <= max) match {
        case Some(n) => inner(n)
        case None => complete(StatusCodes.BadRequest, s"param must be an integer from 0 to $max")
      }
    }

  /** One request through pekko-http's pooled keep-alive client (host-connection-pool). */
  private def fetchWeather(): Future[Weather] =
    Http().singleRequest(HttpRequest(uri = upstream)).flatMap { response =>
      if (response.status.isSuccess) Unmarshal(response.entity).to[UpstreamWeather].map(_.toWeather)
      else {
        response.discardEntityBytes()
        Future.failed(new IllegalStateException(s"status ${response.status.intValue}"))
      }
    }
}
