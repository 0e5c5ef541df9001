// A MiniDFSCluster (HDFS, one datanode) and a MiniYARNCluster (one NodeManager whose containers are
// local processes) in one JVM, on 127.0.0.1, for the yarn tests and for trying the deployer by hand.
//
//   java -cp <hadoop-minicluster jars> MiniHadoop.java WORK_DIR
//
// Writes WORK_DIR/conf/{core,hdfs,yarn}-site.xml (a HADOOP_CONF_DIR), keeps the clusters' data
// under WORK_DIR, prints one line "READY <json>" with the addresses, and runs until killed.
// Started by tests/support/hadoop_cluster.py (java source-file mode, Java 11 or later).

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

public class MiniHadoop {
    private static final String HOST = "127.0.0.1";
    // How long the stop on SIGTERM may take before the JVM exits anyway (see the shutdown hook).
    private static final long STOP_GRACE_MS = 3_000;
    // Ports chosen and not yet given to the clusters: held open, so that no two are the same.
    private static final List<ServerSocket> HELD = new ArrayList<>();

    public static void main(String[] args) {
        try {
            run(args);
        } catch (Throwable failure) {
            // HDFS's threads would keep a half-started JVM alive: a failure ends it.
            failure.printStackTrace();
            System.exit(1);
        }
    }

    private static void run(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: MiniHadoop WORK_DIR");
            System.exit(2);
        }
        File work = new File(args[0]).getAbsoluteFile();
        File conf = new File(work, "conf");
        conf.mkdirs();

        Configuration dfsConf = new Configuration();
        dfsConf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, new File(work, "dfs").getPath());
        dfsConf.setBoolean("dfs.webhdfs.enabled", true);
        dfsConf.set("dfs.namenode.rpc-address", HOST + ":" + freePort());
        dfsConf.set("dfs.namenode.http-address", HOST + ":" + freePort());
        // Every file is small here: keep the datanode's reservations small too.
        dfsConf.setLong("dfs.blocksize", 8L * 1024 * 1024);
        dfsConf.setInt("dfs.replication", 1);
        release();
        MiniDFSCluster dfs = new MiniDFSCluster.Builder(dfsConf)
            .numDataNodes(1)
            .nameNodePort(port(dfsConf.get("dfs.namenode.rpc-address")))
            .nameNodeHttpPort(port(dfsConf.get("dfs.namenode.http-address")))
            .build();
        dfs.waitActive();
        String defaultFs = "hdfs://" + HOST + ":" + dfs.getNameNodePort();
        InetSocketAddress nnHttp = dfs.getNameNode().getHttpAddress();

        YarnConfiguration yarnConf = new YarnConfiguration();
        yarnConf.set("fs.defaultFS", defaultFs);
        yarnConf.setBoolean(YarnConfiguration.YARN_MINICLUSTER_FIXED_PORTS, true);
        yarnConf.set(YarnConfiguration.RM_HOSTNAME, HOST);
        yarnConf.set(YarnConfiguration.RM_ADDRESS, HOST + ":" + freePort());
        yarnConf.set(YarnConfiguration.RM_SCHEDULER_ADDRESS, HOST + ":" + freePort());
        yarnConf.set(YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS, HOST + ":" + freePort());
        yarnConf.set(YarnConfiguration.RM_ADMIN_ADDRESS, HOST + ":" + freePort());
        yarnConf.set(YarnConfiguration.RM_WEBAPP_ADDRESS, HOST + ":" + freePort());
        yarnConf.set(YarnConfiguration.NM_ADDRESS, HOST + ":" + freePort());
        yarnConf.set(YarnConfiguration.NM_LOCALIZER_ADDRESS, HOST + ":" + freePort());
        yarnConf.set(YarnConfiguration.NM_WEBAPP_ADDRESS, HOST + ":" + freePort());
        yarnConf.set("yarn.nodemanager.collector-service.address", HOST + ":" + freePort());
        yarnConf.set("yarn.nodemanager.hostname", HOST);
        // One Spark application master and one executor at a time, on a small machine: the node
        // offers more memory than it has free, since a streaming test job uses little of it.
        yarnConf.setInt(YarnConfiguration.NM_PMEM_MB, 8192);
        yarnConf.setInt("yarn.minicluster.yarn.nodemanager.resource.memory-mb", 8192);
        yarnConf.setInt(YarnConfiguration.NM_VCORES, 8);
        yarnConf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 128);
        // A container may take the whole node: a driver that fits alone but not beside another
        // (tests/yarn: a warm handover whose new driver is never placed).
        yarnConf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, 8192);
        yarnConf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
        yarnConf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
        // The capacity scheduler's one queue (Hadoop's jars carry no capacity-scheduler.xml).
        yarnConf.set("yarn.scheduler.capacity.root.queues", "default");
        yarnConf.set("yarn.scheduler.capacity.root.default.capacity", "100");
        yarnConf.set("yarn.scheduler.capacity.maximum-am-resource-percent", "1.0");
        yarnConf.set("yarn.scheduler.capacity.node-locality-delay", "-1");
        yarnConf.set(
            "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage",
            "100.0");
        yarnConf.setLong(YarnConfiguration.RM_AM_MAX_ATTEMPTS, 1);
        yarnConf.setLong(YarnConfiguration.DEBUG_NM_DELETE_DELAY_SEC, 0);
        // MiniYARNCluster keeps its folders under ./target/<name>: the working dir is WORK_DIR.
        MiniYARNCluster yarn = new MiniYARNCluster("yarn", 1, 1, 1);
        release();
        yarn.init(yarnConf);
        yarn.start();
        Configuration live = yarn.getConfig();
        long deadline = System.currentTimeMillis() + 60_000;
        while (live.get(YarnConfiguration.RM_ADDRESS).endsWith(":0")
            || yarn.getResourceManager().getRMContext().getRMNodes().isEmpty()) {
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("the NodeManager did not register in 60 s");
            }
            Thread.sleep(100);
        }

        Map<String, String> core = new LinkedHashMap<>();
        core.put("fs.defaultFS", defaultFs);
        write(new File(conf, "core-site.xml"), core);
        Map<String, String> hdfs = new LinkedHashMap<>();
        hdfs.put("dfs.namenode.rpc-address", HOST + ":" + dfs.getNameNodePort());
        hdfs.put("dfs.namenode.http-address", HOST + ":" + nnHttp.getPort());
        hdfs.put("dfs.webhdfs.enabled", "true");
        hdfs.put("dfs.replication", "1");
        hdfs.put("dfs.client.use.datanode.hostname", "false");
        write(new File(conf, "hdfs-site.xml"), hdfs);
        Map<String, String> site = new LinkedHashMap<>();
        for (String key : new String[] {
                YarnConfiguration.RM_HOSTNAME, YarnConfiguration.RM_ADDRESS,
                YarnConfiguration.RM_SCHEDULER_ADDRESS, YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS,
                YarnConfiguration.RM_ADMIN_ADDRESS, YarnConfiguration.RM_WEBAPP_ADDRESS,
                YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB,
                YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB}) {
            site.put(key, live.get(key));
        }
        write(new File(conf, "yarn-site.xml"), site);

        // SIGTERM: YARN stopped (its NodeManager signals the containers still running first),
        // then HDFS, for STOP_GRACE_MS at most; then the JVM exits, and the fixture ends any
        // container process left, by pid (tests/support/hadoop_cluster.py). Hadoop's stop
        // otherwise waits out fixed timers for applications that have ended, whose state the
        // NodeManager keeps for their logs: 6 s to clean them up, 10 s for its log handler's
        // pending deletions, 5 s for the application masters that never unregistered (a killed
        // one), about 21 s of the yarn tests' teardown.
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            Thread stopping = new Thread(() -> {
                try {
                    yarn.stop();
                } finally {
                    dfs.shutdown();
                }
            }, "minihadoop-stop");
            stopping.setDaemon(true);
            stopping.start();
            try {
                stopping.join(STOP_GRACE_MS);
            } catch (InterruptedException interrupted) {
                Thread.currentThread().interrupt();
            }
        }));
        System.out.println("READY {\"conf_dir\": \"" + conf.getPath()
            + "\", \"default_fs\": \"" + defaultFs
            + "\", \"webhdfs\": \"http://" + HOST + ":" + nnHttp.getPort()
            + "\", \"resource_manager\": \"http://" + live.get(YarnConfiguration.RM_WEBAPP_ADDRESS)
            + "\"}");
        System.out.flush();
        Thread.currentThread().join();
    }

    /** A port free now, held until release(): the ports of one cluster differ from each other.
     * Another process may still take one between release() and the cluster's bind: the caller
     * (tests/support/hadoop_cluster.py) starts again on a BindException. */
    private static int freePort() throws IOException {
        ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName(HOST));
        HELD.add(socket);
        return socket.getLocalPort();
    }

    private static void release() throws IOException {
        for (ServerSocket socket : HELD) {
            socket.close();
        }
        HELD.clear();
    }

    private static int port(String address) {
        return Integer.parseInt(address.substring(address.lastIndexOf(':') + 1));
    }

    private static void write(File file, Map<String, String> properties) throws IOException {
        StringBuilder xml = new StringBuilder("<?xml version=\"1.0\"?>\n<configuration>\n");
        for (Map.Entry<String, String> entry : properties.entrySet()) {
            xml.append("  <property><name>").append(entry.getKey()).append("</name><value>")
                .append(entry.getValue()).append("</value></property>\n");
        }
        xml.append("</configuration>\n");
        File partial = new File(file.getPath() + ".tmp");
        try (OutputStream out = new FileOutputStream(partial)) {
            out.write(xml.toString().getBytes("UTF-8"));
        }
        Files.move(partial.toPath(), file.toPath(), StandardCopyOption.REPLACE_EXISTING,
            StandardCopyOption.ATOMIC_MOVE);
    }
}
