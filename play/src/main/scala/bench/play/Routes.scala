package bench.play

import bench.contract.Contract
import java.util.concurrent.atomic.AtomicLong
import play.api.http.ContentTypes
import play.api.libs.json.{Json, OWrites}
import play.api.mvc.{Action, AnyContent, DefaultActionBuilder, Result}
import play.api.mvc.Codec.utf_8
import play.api.mvc.Results.{BadRequest, NotFound, Ok}
import play.api.routing.Router
import play.api.routing.sird._
import scala.concurrent.{ExecutionContext, Future}

final case class Tweet(id: Long, author: String, content: String)

object Tweet {
  implicit val writes: OWrites[Tweet] = Json.writes[Tweet]
}

/** The contract's routes as a SIRD router. */
final class Routes(action: DefaultActionBuilder, weather: WeatherClient, cpuBound: ExecutionContext)(implicit
    ec: ExecutionContext
) {
  private val tweetIds = new AtomicLong(Contract.FIRST_TWEET_ID)

  val router: Router = Router.from {
    case GET(p"/id")      => action(Ok("play").as("text/plain"))
    case GET(p"/hello")   => action(Ok("Hello World")) // text/plain; charset=utf-8
    case GET(p"/backend") => action(Ok("<h1>Say hello to akka-http</h1>").as(ContentTypes.HTML))
    case GET(p"/v1/tweets") =>
      action(Ok(Json.toJson(Seq(Tweet(tweetIds.getAndIncrement(), "author1", "Hello, World!")))))
    case GET(p"/factorial" ? q_o"param=$param") =>
      withParam(param, Contract.FACTORIAL_MAX)(n => Future.successful(Ok(Contract.factorial(n).toString).as("text/plain")))
    case GET(p"/fibonacci" ? q_o"param=$param") =>
      // the recursion runs on the cpu-bound pool, never on the dispatcher that serves connections
      withParam(param, Contract.FIBONACCI_MAX) { n =>
        Future(Contract.fibonacci(n))(cpuBound).map(fib => Ok(fib.toString).as("text/plain"))
      }
    case GET(p"/weather/$city") if city.nonEmpty => action.async(weather.current())
    // a short text 404 rather than Play's HTML error page
    case _ => action(NotFound("Not Found").as("text/plain"))
  }

  /** Runs `handle` with `param` parsed as an integer in [0, max], or answers 400. */
  private def withParam(param: Option[String], max: Int)(handle: Int => Future[Result]): Action[AnyContent] =
    action.async {
      Contract.param(param.orNull, max) match {
        case -1 => Future.successful(BadRequest(s"param must be an integer between 0 and $max").as("text/plain"))
        case n => handle(n)
      }
    }
}
