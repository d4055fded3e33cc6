// Local Neo4j Community DBMS for development and tests: embedded DBMS with the Bolt and HTTP
// connectors on 127.0.0.1, AUTHENTICATION DISABLED. Never expose it beyond localhost.
//
// Started by scripts/neo4j-server (which fetches the jars with Maven); Java 17 runs this single
// source file directly:
//   java -cp "<libdir>/*" Launcher.java <home-dir> <bolt-port> <http-port> <page-cache-size>
// Data lives in <home-dir>/data and persists across restarts; Neo4j's own logs go to <home-dir>/logs.
// SIGTERM (or Ctrl-C) triggers a clean shutdown through a shutdown hook.

import java.nio.file.Path;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicReference;

import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.connectors.HttpsConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.dbms.api.DatabaseManagementService;
import org.neo4j.dbms.api.DatabaseManagementServiceBuilder;
import org.neo4j.io.ByteUnit;
import org.neo4j.logging.log4j.Log4jLogProvider;
import org.neo4j.server.configuration.ServerSettings;

public class Launcher {
    private static final String HOST = "127.0.0.1";

    public static void main(String[] args) {
        if (args.length != 4) {
            System.err.println("usage: java -cp '<libdir>/*' Launcher.java <home-dir> <bolt-port> <http-port> <page-cache-size>");
            System.exit(2);
        }
        Path home = Path.of(args[0]).toAbsolutePath();
        int boltPort = Integer.parseInt(args[1]);
        int httpPort = Integer.parseInt(args[2]);
        long pageCache = ByteUnit.parse(args[3]);

        AtomicReference<DatabaseManagementService> dbms = new AtomicReference<>();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            DatabaseManagementService service = dbms.get();
            if (service != null) {
                log("shutting down");
                service.shutdown();
                log("shut down cleanly");
            }
        }, "neo4j-shutdown"));

        try {
            log("starting Neo4j, home " + home + ", pid " + ProcessHandle.current().pid());
            dbms.set(new DatabaseManagementServiceBuilder(home)
                    .setConfig(BoltConnector.enabled, true)
                    .setConfig(BoltConnector.listen_address, new SocketAddress(HOST, boltPort))
                    // what Neo4j Browser is told to connect to (its discovery answer): this port, not 7687
                    .setConfig(BoltConnector.advertised_address, new SocketAddress(HOST, boltPort))
                    .setConfig(HttpConnector.advertised_address, new SocketAddress(HOST, httpPort))
                    .setConfig(HttpConnector.enabled, true)
                    .setConfig(HttpConnector.listen_address, new SocketAddress(HOST, httpPort))
                    .setConfig(HttpsConnector.enabled, false)
                    // Local development and tests only: anyone who can reach the port has full access.
                    .setConfig(GraphDatabaseSettings.auth_enabled, false)
                    .setConfig(GraphDatabaseSettings.udc_enabled, false) // dbms.usage_report.enabled
                    .setConfig(ServerSettings.allow_telemetry, false) // client.allow_telemetry (Browser)
                    .setConfig(GraphDatabaseSettings.pagecache_memory, pageCache)
                    // Transaction log files are preallocated at full size (default 256 MiB per
                    // database); 64 MiB keeps a fresh dev data directory around 130 MiB.
                    .setConfig(GraphDatabaseSettings.logical_log_rotation_threshold, ByteUnit.mebiBytes(64))
                    // Bolt's Netty shutdown otherwise waits a 5 s quiet period twice (10 s per stop).
                    .setConfig(GraphDatabaseInternalSettings.netty_server_shutdown_quiet_period, 1)
                    .setUserLogProvider(new Log4jLogProvider(System.out))
                    .build());
            // Make sure the default database really answers before announcing readiness.
            dbms.get().database(GraphDatabaseSettings.DEFAULT_DATABASE_NAME).executeTransactionally("RETURN 1");
            log("ready: bolt://" + HOST + ":" + boltPort + "  http://" + HOST + ":" + httpPort + "/browser/");
        } catch (Throwable t) {
            log("failed to start: " + t);
            t.printStackTrace(System.out);
            System.out.flush();
            System.exit(1); // the shutdown hook stops whatever part of the DBMS did start
        }

        try {
            new CountDownLatch(1).await(); // block; the shutdown hook does the rest
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void log(String message) {
        System.out.println(Instant.now() + " [launcher] " + message);
        System.out.flush();
    }
}
