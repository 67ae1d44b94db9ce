package bench.play

import bench.contract.ServerEnv
import com.typesafe.config.ConfigFactory
import java.net.URI
import play.api.{Configuration, Environment, Mode}
import play.api.routing.Router
import play.core.server.{DefaultPekkoHttpServerComponents, PekkoHttpServer, ServerConfig}

/**
 * The benchmark contract (CONTRACT.md) on Play 3.0, embedded as a library: DefaultPekkoHttpServerComponents wires
 * Play on the Pekko HTTP backend with compile-time DI and no HTTP filters (it mixes in NoHttpFiltersComponents).
 */
object PlayServer {

  def main(args: Array[String]): Unit = {
    val serverEnv = new ServerEnv(8085)
    import serverEnv.{cores, host, port}

    val env = Environment.simple(mode = Mode.Prod)
    // application.conf plus /fibonacci's pool sized to SERVER_CORES. Pekko's default and internal dispatchers keep
    // their own sizes (at least 8 and 4 threads), as Play's TechEmpower entry runs them: on one core, sizing both to
    // the cores served 23 % more new connections a second but 21-25 % fewer keep-alive requests, and the default one
    // alone at 8 (internal 1) halved keep-alive (play/PROFILE.md). A -D system property still wins over these.
    val config = Configuration(ConfigFactory.systemProperties())
      .withFallback(Configuration("contexts.cpu-bound.thread-pool-executor.fixed-pool-size" -> cores))
      .withFallback(Configuration.load(env))

    val components = new DefaultPekkoHttpServerComponents {
      override lazy val environment: Environment = env
      override lazy val configuration: Configuration = config
      // one configuration for both the server (play.server.*) and the application (pekko.*, play.http.*)
      override lazy val serverConfig: ServerConfig =
        ServerConfig(port = Some(port), address = host, mode = Mode.Prod).copy(configuration = config)
      override lazy val router: Router = new Routes(
        defaultActionBuilder,
        new WeatherClient(URI.create(serverEnv.upstreamUrl))(actorSystem),
        cpuBound = actorSystem.dispatchers.lookup("contexts.cpu-bound")
      )(executionContext).router
    }

    // Starts the application and binds. SIGTERM runs Pekko's CoordinatedShutdown hook, which unbinds and stops.
    components.server
    println(serverEnv.listening("play"))

    // H2C_PORT set (CONTRACT.md): cleartext HTTP/2 with prior knowledge on a port of its own. Play binds one plain
    // port per server, and play.server.pekko.http2.enabled (what sbt's PlayPekkoHttp2Support plugin sets) switches
    // HTTP/2 on for all of a server's bindings, which would put the HTTP/1.1 port behind a protocol switch that
    // sniffs every new connection for the HTTP/2 preface. So a second Play server, Play's own PekkoHttpServer
    // started the documented way (fromApplication), serves the same application (same router, counter, upstream
    // pool and actor system) with HTTP/2 on; on a cleartext port Pekko HTTP then accepts prior knowledge.
    sys.env.get("H2C_PORT").map(_.toInt).foreach { h2cPort =>
      val h2cConfig = Configuration("play.server.pekko.http2.enabled" -> true).withFallback(config)
      PekkoHttpServer.fromApplication(
        components.application,
        ServerConfig(port = Some(h2cPort), address = host, mode = Mode.Prod).copy(configuration = h2cConfig)
      )
      println(s"play h2c (HTTP/2 prior knowledge) listening on http://$host:$h2cPort/")
    }
  }
}
