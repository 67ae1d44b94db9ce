#!/bin/sh
# Builds the JVM servers in $1 (folders, comma-separated: "akka,finagle") with one run of the Maven reactor
# (pom.xml here; -am adds the jvm-contract modules they use). Run from the reactor's folder, the repository's top.
# Skipped when every server's jar (<folder>/target/<folder>-server.jar) is newer than every file Maven reads for it:
# pom.xml, jvm-contract/ and the servers' folders, their target/ folders aside. Maven itself re-jars and re-shades
# each server even when nothing changed: 24 s of every warm `make bench` on 2 cores. `touch pom.xml` forces a build.
set -eu
folders=$(echo "$1" | tr ',' ' ')
missing="" oldest=""
for folder in $folders; do
  jar="$folder/target/$folder-server.jar"
  if [ ! -f "$jar" ]; then
    missing="$missing $jar"
  elif [ -z "$oldest" ] || [ "$jar" -ot "$oldest" ]; then
    oldest=$jar
  fi
done
if [ -n "$missing" ]; then
  echo "Maven runs: no$missing"
else
  # one walk of the sources: a file newer than the oldest jar is newer than some jar
  newer=$(find pom.xml jvm-contract $folders -name target -prune -o -type f -newer "$oldest" -print | head -1)
  if [ -z "$newer" ]; then
    echo "up to date: every jar is newer than its sources ($1); Maven not run (touch pom.xml to force a build)"
    exit 0
  fi
  echo "Maven runs: $newer is newer than $oldest"
fi
exec mvn -B -q -f pom.xml -pl "$1" -am package -DskipTests
