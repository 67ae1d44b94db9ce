package bench.contract

import scala.collection.immutable.ListMap

import spray.json._

/** The contract's JSON in spray-json: what /v1/tweets and /weather answer, and the part of the upstream document
  * that is read. Shared by akka, pekko (Scala 2.13) and spray, socko (2.11): one source, one jar per Scala version. */
object JsonProtocol extends DefaultJsonProtocol {
  final case class Tweet(id: Long, author: String, content: String)
  final case class Weather(code: Int, temp: Int)

  final case class Condition(id: Int)
  final case class Measurements(temp: Double)
  final case class UpstreamWeather(weather: Seq[Condition], main: Measurements) {
    def toWeather: Weather = Weather(code = weather.head.id, temp = main.temp.toInt)
  }

  // spray-json sorts the fields of a JsObject built from pairs (a TreeMap): the contract's order is id, author,
  // content, so the writer hands it an insertion-ordered map. A tweet is only ever written.
  private object TweetWriter extends RootJsonWriter[Tweet] {
    def write(tweet: Tweet): JsValue = JsObject(ListMap(
      "id" -> JsNumber(tweet.id), "author" -> JsString(tweet.author), "content" -> JsString(tweet.content)))
  }
  implicit val tweetFormat: RootJsonFormat[Tweet] = lift(TweetWriter)
  implicit val weatherFormat: RootJsonFormat[Weather] = jsonFormat2(Weather) // "code" < "temp": already in order
  // spray-json reads only the named fields and ignores the rest of the document
  implicit val conditionFormat: RootJsonFormat[Condition] = jsonFormat1(Condition)
  implicit val measurementsFormat: RootJsonFormat[Measurements] = jsonFormat1(Measurements)
  implicit val upstreamWeatherFormat: RootJsonFormat[UpstreamWeather] = jsonFormat2(UpstreamWeather)

  /** The upstream document's bytes, read as UTF-8 (nginx sends application/json without a charset), reduced to the
    * answer. */
  def weatherOf(document: Array[Byte]): Weather =
    JsonParser(ParserInput(document)).convertTo[UpstreamWeather].toWeather
}
