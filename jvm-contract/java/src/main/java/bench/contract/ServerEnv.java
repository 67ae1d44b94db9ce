package bench.contract;

/** What the harness hands every server in its environment (CONTRACT.md, "How a server is started"). */
public final class ServerEnv {
    public final String host;
    public final int port;
    /** SERVER_CORES when it is a positive integer, else the CPUs this process may run on. */
    public final int cores;
    public final String upstreamUrl;

    public ServerEnv(int defaultPort) {
        host = env("HOST", "127.0.0.1");
        port = Integer.parseInt(env("PORT", Integer.toString(defaultPort)));
        cores = positiveOr(System.getenv("SERVER_CORES"), Runtime.getRuntime().availableProcessors());
        upstreamUrl = env("UPSTREAM_URL", "http://127.0.0.1:8000/weather.json");
    }

    /** The line a server logs once it listens. */
    public String listening(String server) {
        return server + " listening on http://" + host + ":" + port + "/ (SERVER_CORES=" + cores
            + ", availableProcessors=" + Runtime.getRuntime().availableProcessors() + ", upstream " + upstreamUrl + ")";
    }

    /** HOCON for the Akka-family servers (`root` = akka or pekko): one thread per core for the default dispatcher
     *  (connections' streams and routes) and for the internal one, and as many for /fibonacci's own dispatcher so it
     *  can use every core. The internal dispatcher runs akka-io's TCP actors (every accept, read and write); its default
     *  of at least 4 threads on one core cost a fifth of the connection-per-request rate in thread hand-offs (ab -c 100
     *  without keep-alive: 2.6k req/s with it, 3.3k with one thread). Akka before 2.6 (spray, socko) has no internal
     *  dispatcher and ignores that key. */
    public String coreSizedDispatchers(String root) {
        return coreSizedDispatchers(root, 1);
    }

    /** As above with `defaultThreadsPerCore` default-dispatcher threads per core (see SprayServer for why spray
     *  wants two). */
    public String coreSizedDispatchers(String root, int defaultThreadsPerCore) {
        StringBuilder hocon = new StringBuilder();
        for (String dispatcher : new String[] {"default-dispatcher", "internal-dispatcher"}) {
            int threads = dispatcher.equals("default-dispatcher") ? cores * defaultThreadsPerCore : cores;
            hocon.append(root).append(".actor.").append(dispatcher).append(".fork-join-executor {\n")
                .append("  parallelism-min = ").append(threads).append("\n")
                .append("  parallelism-max = ").append(threads).append("\n")
                .append("}\n");
        }
        return hocon.append("fibonacci-dispatcher.thread-pool-executor.fixed-pool-size = ").append(cores).append("\n")
            .toString();
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value != null ? value : fallback;
    }

    private static int positiveOr(String value, int fallback) {
        try {
            int n = Integer.parseInt(value);
            return n > 0 ? n : fallback;
        } catch (NumberFormatException e) { // also null
            return fallback;
        }
    }
}
