#!/usr/bin/env bash
# Builds Gatling for the harness (loadgen/harness/tools/gatling.py): the simulation into target/classes, Gatling's
# runtime jars into target/lib (both `mvn package`: pom.xml), then the launcher target/gatling. The first build
# downloads Gatling from Maven Central into ~/.m2; a rebuild with nothing changed returns at once.
set -euo pipefail
cd "$(dirname "$0")"

launcher=target/gatling
if [ -x "$launcher" ] && [ -z "$(find pom.xml src build.sh -newer "$launcher" 2>/dev/null)" ]; then
  echo "gatling: $launcher is up to date"
  exit 0
fi
for cmd in java mvn; do
  command -v "$cmd" >/dev/null || { echo "gatling: $cmd not found: install a JDK 17 and Maven (apt-get install openjdk-17-jdk-headless maven)" >&2; exit 1; }
done

# copy-dependencies only adds: jars of an older Gatling would stay on the classpath. No launcher until the build has
# succeeded: the harness takes a launcher for a built Gatling.
rm -rf target/lib "$launcher"
mvn -q -B package

# The launcher finds classes/ and lib/ beside itself, so it runs from the host's checkout and from the loadgen
# container's /bench alike. -D... arguments are the JVM's (the simulation's bench.* properties, gatling.* settings),
# the others Gatling's (-s, -rf, -rd, -nr). stdin is closed: Gatling never waits for an answer.
cat > "$launcher.tmp" <<'LAUNCHER'
#!/usr/bin/env bash
# Written by loadgen/gatling/build.sh. Usage: gatling [--version] [-Dname=value ...] [Gatling options: -s -rf -rd -nr]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = "--version" ]; then
  app=("$here"/lib/gatling-app-*.jar)
  [ -e "${app[0]}" ] || { echo "gatling: no $here/lib/gatling-app-*.jar: run loadgen/gatling/build.sh" >&2; exit 1; }
  version=${app[0]##*/gatling-app-}
  echo "Gatling ${version%.jar}"
  exit 0
fi
jvm=()
gatling=()
for arg in "$@"; do
  case $arg in
    -D*) jvm+=("$arg") ;;
    *) gatling+=("$arg") ;;
  esac
done
# Gatling's own recommended JVM flags (its bundle's), with a heap that fits the loadgen container's 2 GB
exec java -server -Xms256m -Xmx1g -XX:+UseG1GC -XX:+ParallelRefProcEnabled -XX:MaxInlineLevel=20 \
  -XX:MaxTrivialSize=12 "${jvm[@]}" -cp "$here/classes:$here/lib/*" io.gatling.app.Gatling "${gatling[@]}" </dev/null
LAUNCHER
chmod +x "$launcher.tmp"
mv "$launcher.tmp" "$launcher"
echo "gatling: built $launcher ($("$launcher" --version))"
