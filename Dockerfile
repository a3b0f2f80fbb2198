# kvindex: one image for every service (ingester, router, epp, sim, demo); the command picks which.
#   docker build -t kvindex .
#   docker run --rm kvindex --help
# Build stage: Maven with JDK 17 compiles the launcher jar and copies its runtime dependencies.
FROM maven:3.9-eclipse-temurin-17 AS build
WORKDIR /src
# The poms first, so that the dependency download is cached until a pom changes.
COPY pom.xml ./
COPY local-redis/pom.xml local-redis/
COPY common/pom.xml common/
COPY service/pom.xml service/
COPY simulator/pom.xml simulator/
COPY ingester/pom.xml ingester/
COPY router-client/pom.xml router-client/
COPY epp/pom.xml epp/
COPY benchmarks/pom.xml benchmarks/
COPY demo/pom.xml demo/
COPY cli/pom.xml cli/
COPY examples/gateway/pom.xml examples/gateway/
RUN mvn -B -q -pl cli -am dependency:go-offline -DexcludeGroupIds=io.kvindex || true
COPY . .
RUN mvn -B -q -DskipTests -Dspotless.check.skip=true -Dmaven.javadoc.skip=true -Dmaven.source.skip=true -pl cli -am package

# Run stage: a JRE 17 with the launcher, the jar and its libraries; no Maven, no build at start.
FROM eclipse-temurin:17-jre
RUN apt-get update \
    && apt-get install -y --no-install-recommends curl \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /opt/kvindex
COPY --from=build /src/scripts/kvindex scripts/kvindex
COPY --from=build /src/cli/target/kvindex-cli.jar cli/target/kvindex-cli.jar
COPY --from=build /src/cli/target/lib/ cli/target/lib/
# TCP_NODELAY for the JDK's HTTP server: without it each HTTP answer waits for the peer's
# delayed ACK (about 40 ms).
ENV KVINDEX_NO_BUILD=1 \
    KVINDEX_JAVA_OPTS="-Dsun.net.httpserver.nodelay=true"
ENTRYPOINT ["/opt/kvindex/scripts/kvindex"]
CMD ["--help"]
