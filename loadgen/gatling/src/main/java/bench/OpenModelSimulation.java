package bench;

import static io.gatling.javaapi.core.CoreDsl.*;
import static io.gatling.javaapi.http.HttpDsl.*;

import io.gatling.javaapi.core.OpenInjectionStep;
import io.gatling.javaapi.core.ScenarioBuilder;
import io.gatling.javaapi.core.Simulation;
import io.gatling.javaapi.http.HttpProtocolBuilder;
import io.gatling.javaapi.http.HttpRequestActionBuilder;
import java.time.Duration;

/**
 * The seeds' open workload model: virtual users arrive by one injection profile, each sends one GET to bench.url and
 * leaves (no pre-warm, no pause). Set by system properties (the harness's Gatling adapter passes them):
 * bench.url, bench.injection = ramp | at-once | constant, bench.users (ramp, at-once), bench.rate (constant: users a
 * second), bench.duration_s (ramp, constant), bench.timeout_s (optional request timeout).
 */
public class OpenModelSimulation extends Simulation {

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

  {
    HttpProtocolBuilder protocol = http.disableWarmUp(); // no pre-warm: Gatling's warm-up would also send a request to https://gatling.io
    HttpRequestActionBuilder get = http("request").get(required("bench.url"));
    String timeout = System.getProperty("bench.timeout_s");
    if (timeout != null && !timeout.isBlank()) {
      get = get.requestTimeout(seconds("bench.timeout_s"));
    }
    ScenarioBuilder users = scenario("open model").exec(get);
    setUp(users.injectOpen(injection())).protocols(protocol);
  }
}
