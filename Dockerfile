# kvindex: one image for the product's services (ingester, router, epp, and the hash, decode and
# inspect tools); the command picks which. The default target holds no lab code: the lab target
# adds the lab's launcher (sim, demo, chaos, bench) on top, for docker-compose.yml's simulated
# fleet.
#   docker build -t kvindex .
#   docker build --target lab -t kvindex:lab .
#   docker run --rm kvindex --help
# Build stage: Maven with JDK 17 compiles the launcher jars and copies their runtime dependencies.
FROM maven:3.9-eclipse-temurin-17 AS build
WORKDIR /src
# The poms first, so that the dependency download is cached until a pom changes. Maven needs every
# module's pom to read the reactor, even the ones a target does not build.
COPY pom.xml ./
COPY base/pom.xml base/
COPY vllm/pom.xml vllm/
COPY index/pom.xml index/
COPY shell/pom.xml shell/
COPY ingester/pom.xml ingester/
COPY router/pom.xml router/
COPY router-server/pom.xml router-server/
COPY inspect/pom.xml inspect/
COPY epp/pom.xml epp/
COPY cli/pom.xml cli/
COPY testing/pom.xml testing/
COPY lab/local-redis/pom.xml lab/local-redis/
COPY lab/simulator/pom.xml lab/simulator/
COPY lab/demo/pom.xml lab/demo/
COPY lab/chaos/pom.xml lab/chaos/
COPY lab/benchmarks/pom.xml lab/benchmarks/
COPY lab/launcher/pom.xml lab/launcher/
COPY deploy/pom.xml deploy/
COPY examples/gateway/pom.xml examples/gateway/
RUN mvn -B -q -pl cli -am dependency:go-offline -DexcludeGroupIds=io.kvindex || true
COPY . .
RUN mvn -B -q -DskipTests -Dspotless.check.skip=true -Dmaven.javadoc.skip=true -Dmaven.source.skip=true -pl cli -am package

# The lab's launcher, built only for the lab target.
FROM build AS lab-build
RUN mvn -B -q -DskipTests -Dspotless.check.skip=true -Dmaven.javadoc.skip=true -Dmaven.source.skip=true -pl lab/launcher -am package

# Run stage: a JRE 17 with the launcher, the jar and its libraries; no Maven, no build at start.
FROM eclipse-temurin:17-jre AS runtime-base
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/kvindex
COPY --from=build /src/scripts/kvindex scripts/kvindex
# TCP_NODELAY for the JDK's HTTP server: without it each HTTP answer waits for the peer's
# delayed ACK (about 40 ms).
ENV KVINDEX_NO_BUILD=1 \
    KVINDEX_JAVA_OPTS="-Dsun.net.httpserver.nodelay=true"
ENTRYPOINT ["/opt/kvindex/scripts/kvindex"]
CMD ["--help"]

# The lab image: the product's commands and the lab's, from the lab launcher.
FROM runtime-base AS lab
COPY --from=lab-build /src/lab/launcher/target/kvindex-lab.jar lab/launcher/target/kvindex-lab.jar
COPY --from=lab-build /src/lab/launcher/target/lib/ lab/launcher/target/lib/

# The production image (the default target, last): the product's commands only.
FROM runtime-base AS runtime
COPY --from=build /src/cli/target/kvindex-cli.jar cli/target/kvindex-cli.jar
COPY --from=build /src/cli/target/lib/ cli/target/lib/
