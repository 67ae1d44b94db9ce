package bench;

import static io.gatling.javaapi.core.CoreDsl.*;
import static io.gatling.javaapi.http.HttpDsl.*;

import io.gatling.javaapi.core.OpenInjectionStep;
import io.gatling.javaapi.core.PopulationBuilder;
import io.gatling.javaapi.core.Simulation;
import io.gatling.javaapi.http.HttpProtocolBuilder;
import io.gatling.javaapi.http.HttpRequestActionBuilder;
import java.time.Duration;

/**
 * The seeds' open workload model: virtual users arrive by one injection profile, each sends one GET to bench.url and
 * leaves (no pause). Set by system properties (the harness's Gatling adapter passes them): bench.url,
 * bench.injection = ramp | at-once | constant, bench.users (ramp, at-once), bench.rate (constant: users a second),
 * bench.duration_s (ramp, constant), bench.timeout_s (optional request timeout).
 *
 * <p>Optional tool warm-up, bench.warmup_s (default 0: none) at bench.warmup_rate users a second: a scenario of its own
 * ("tool warm-up", request name "warm-up") before the measured one, in the same JVM, so that Gatling's class loading
 * and JIT are done before the measured users (request name "request") arrive; andThen starts them once every warm-up
 * user has terminated. The report keeps each request name's figures apart.
 */
public class OpenModelSimulation extends Simulation {

  private static final String WARM_UP = "warm-up";

  private static String required(String name) {
    String value = System.getProperty(name);
    if (value == null || value.isBlank()) {
      throw new IllegalArgumentException("system property " + name + " is missing: pass -D" + name + "=...");
    }
    return value;
  }

  private static Duration seconds(String name) {
    return Duration.ofMillis(Math.round(Double.parseDouble(required(name)) * 1000));
  }

  private static OpenInjectionStep injection() {
    String kind = required("bench.injection");
    switch (kind) {
      case "ramp":
        return rampUsers(Integer.parseInt(required("bench.users"))).during(seconds("bench.duration_s"));
      case "at-once":
        return atOnceUsers(Integer.parseInt(required("bench.users")));
      case "constant":
        return constantUsersPerSec(Double.parseDouble(required("bench.rate"))).during(seconds("bench.duration_s"));
      default:
        throw new IllegalArgumentException("bench.injection " + kind + " is not one of ramp, at-once, constant");
    }
  }

  /** The GET to bench.url under `name`, with bench.timeout_s when given. */
  private static HttpRequestActionBuilder get(String name) {
    HttpRequestActionBuilder get = http(name).get(required("bench.url"));
    String timeout = System.getProperty("bench.timeout_s");
    return timeout == null || timeout.isBlank() ? get : get.requestTimeout(seconds("bench.timeout_s"));
  }

  {
    HttpProtocolBuilder protocol = http.disableWarmUp(); // Gatling's own warm-up would send a request to https://gatling.io
    PopulationBuilder measured = scenario("open model").exec(get("request")).injectOpen(injection());
    double warmupSeconds = Double.parseDouble(System.getProperty("bench.warmup_s", "0"));
    if (warmupSeconds > 0) {
      // the same GET under a name of its own, so that the report keeps its requests out of the measured one's figures
      PopulationBuilder warmUp =
          scenario("tool warm-up")
              .exec(get(WARM_UP))
              .injectOpen(
                  constantUsersPerSec(Double.parseDouble(required("bench.warmup_rate")))
                      .during(seconds("bench.warmup_s")));
      setUp(warmUp.andThen(measured)).protocols(protocol);
    } else {
      setUp(measured).protocols(protocol);
    }
  }
}
